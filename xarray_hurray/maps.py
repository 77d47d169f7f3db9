"""Map tiles of Hurray files through rio-tiler and titiler.xarray, each tile read
from the pyramid level its resolution calls for.

Needs the ``titiler`` extra (``pip install xarray-hurray[titiler]``: titiler.xarray,
rio-tiler, rioxarray).  :class:`HurrayReader` is a ``titiler.xarray`` reader, so an
application takes it as it takes titiler's own::

    from titiler.xarray.factory import TilerFactory
    from xarray_hurray.maps import HurrayReader

    app.include_router(TilerFactory(reader=HurrayReader).router)

What it does that a reader opening ``engine="hurray"`` for every tile does not:

- **It picks the level.**  A tile is read from the coarsest level of the file's
  pyramid whose cells are no larger than the tile's, in the data's CRS
  (:func:`tile_cell`, :func:`tile_level`; docs/spec/overviews.md, "Which level
  serves a map tile"); a file without overviews is its one level.
- **It keeps files open.**  A file is opened once, as a tree of its levels with
  their coordinates held in memory, and kept in :data:`OPEN_FILES`, a cache bounded
  to :data:`MAX_OPEN_FILES` files (least recently used first out) shared by the
  readers a server makes for its requests.  A cache that is pickled (sent to a
  worker process with the opener) arrives empty, so that no open file is pickled.
  A file replaced on storage is seen after :meth:`OpenFiles.clear`.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

import attr
import xarray as xr
from morecantile import Tile
from rasterio.warp import transform_bounds
from rio_tiler.io.xarray import XarrayReader
from rio_tiler.models import ImageData
from titiler.xarray.io import Reader, get_variable

from .xarray.overview_read import coarsest_level
from .xarray.pyramid import level_names

MAX_OPEN_FILES = 32
"""The files :data:`OPEN_FILES` keeps open at most."""


def tile_cell(extent: tuple[float, float], pixels: tuple[int, int]) -> float:
    """The cell size of a tile in the data's CRS: that of square cells keeping the
    pixels along its diagonal, as GDAL suggests a warp's output (``extent``: the
    tile's width and height in the data's CRS; ``pixels``: its width and height)."""
    return math.hypot(*extent) / math.hypot(*pixels)


def tile_level(cells: Mapping[str, tuple[float, float]], wanted: float) -> str:
    """The level for output cells of size ``wanted``: the coarsest of ``cells``
    (level name to its cell's x and y size, finest first) whose cells are no larger
    along either axis, else the finest; the rule of ``tree.hurray.level(resolution=...)``
    (:func:`~xarray_hurray.xarray.overview_read.coarsest_level`)."""
    names = list(cells)
    by_axis: list[Mapping[Hashable, float]] = [{"x": x, "y": y} for x, y in cells.values()]
    return names[coarsest_level(by_axis, {"x": wanted, "y": wanted})]


@dataclass
class OpenPyramid:
    """An opened Hurray file: its tree of groups, the names of its levels (finest
    first; the root alone for a file without overviews) and, by variable and
    selection, the cell size of each level (found once)."""

    tree: xr.DataTree
    levels: list[str]
    _cells: dict[Hashable, dict[str, tuple[float, float]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, src_path: str, **kwargs: Any) -> OpenPyramid:
        """Open ``src_path`` with ``xr.open_datatree(..., engine="hurray", **kwargs)``."""
        tree = xr.open_datatree(src_path, engine="hurray", **kwargs)
        try:
            levels = level_names(tree.attrs, tree.children)
        except ValueError:  # no overviews: the root is the one level
            levels = ["/"]
        return cls(tree, levels)

    def level(self, name: str) -> xr.Dataset:
        """The dataset of level ``name``."""
        return self.tree[name].to_dataset()

    def cells(self, variable: str, sel: list[str] | None) -> dict[str, tuple[float, float]]:
        """The x and y size of a cell of each level of ``variable`` (selected by
        ``sel``), in its CRS, finest first: rioxarray's resolution of its
        coordinates."""
        key = (variable, tuple(sel or ()))
        with self._lock:
            found = self._cells.get(key)
        if found is None:
            found = {}
            for name in self.levels:
                x, y = get_variable(self.level(name), variable, sel=sel).rio.resolution()
                found[name] = (abs(float(x)), abs(float(y)))
            with self._lock:
                self._cells[key] = found
        return found


class OpenFiles:
    """A bounded cache of opened files, least recently used first out, safe to share
    between threads and to pickle (it pickles empty).

    Parameters
    ----------
    maxsize
        The files kept open at most.
    """

    def __init__(self, maxsize: int = MAX_OPEN_FILES) -> None:
        self.maxsize = maxsize
        self._files: OrderedDict[Hashable, OpenPyramid] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, opener: Callable[[], OpenPyramid]) -> OpenPyramid:
        """The file of ``key``, opened by ``opener`` where it is not kept.  A file put
        out of the cache is closed when no reader holds it any more (a tile being
        read keeps it)."""
        with self._lock:
            found = self._files.get(key)
            if found is not None:
                self._files.move_to_end(key)
                return found
        opened = opener()  # outside the lock: other files are served meanwhile
        with self._lock:
            found = self._files.setdefault(key, opened)
            self._files.move_to_end(key)
            while len(self._files) > self.maxsize:
                self._files.popitem(last=False)
        return found

    def clear(self) -> None:
        """Forget every file (each is closed when no reader holds it any more)."""
        with self._lock:
            self._files.clear()

    def __len__(self) -> int:
        return len(self._files)

    def __getstate__(self) -> dict[str, Any]:
        return {"maxsize": self.maxsize}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.maxsize = state["maxsize"]
        self._files = OrderedDict()
        self._lock = threading.Lock()


OPEN_FILES = OpenFiles()
"""The files :class:`HurrayReader` keeps open, shared by all its readers."""


def open_pyramid(src_path: str, decode_times: bool = True, **kwargs: Any) -> OpenPyramid:
    """The file at ``src_path`` opened, from :data:`OPEN_FILES` where it is kept;
    ``kwargs`` go to ``xr.open_datatree`` (``decode_coords="all"`` by default, so
    that the grid mapping is a coordinate rioxarray finds)."""
    options = {"decode_coords": "all", "decode_times": decode_times, **kwargs}
    key = (src_path, tuple(sorted((k, repr(v)) for k, v in options.items())))
    return OPEN_FILES.get(key, lambda: OpenPyramid.open(src_path, **options))


def open_finest(src_path: str, group: str | None = None, **kwargs: Any) -> xr.Dataset:
    """A titiler.xarray opener: the dataset of group ``group`` of the file, by default
    its finest level (the root, for a file without overviews), from the kept file."""
    pyramid = open_pyramid(src_path, **kwargs)
    return pyramid.level(group if group is not None else pyramid.levels[0])


@attr.s
class HurrayReader(Reader):
    """A titiler.xarray reader of Hurray files that reads each tile from the level of
    the file's pyramid its resolution calls for, with the files kept open between
    tiles (see the module).  Without ``group``, level 0 gives the dataset's bounds,
    CRS and information; with ``group``, that group alone is read."""

    opener: Callable[..., xr.Dataset] = attr.ib(default=open_finest)

    def _pyramid(self) -> OpenPyramid:
        return open_pyramid(self.src_path, decode_times=self.decode_times, **self.opener_options)

    def tile(
        self,
        tile_x: int,
        tile_y: int,
        tile_z: int,
        tilesize: int | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> ImageData:
        """The tile, read from the level :func:`tile_level` picks for its cells; the
        other arguments are rio-tiler's."""
        pyramid = self._pyramid()
        if self.group is not None or len(pyramid.levels) == 1:
            return super().tile(tile_x, tile_y, tile_z, tilesize, *args, **kwargs)
        matrix = self.tms.matrix(tile_z)
        width, height = tilesize or matrix.tileWidth, tilesize or matrix.tileHeight
        bounds = self.tms.xy_bounds(Tile(x=tile_x, y=tile_y, z=tile_z))
        left, bottom, right, top = transform_bounds(
            self.tms.rasterio_crs, self.crs, *bounds, densify_pts=21
        )
        wanted = tile_cell((right - left, top - bottom), (width, height))
        name = tile_level(pyramid.cells(self.variable, self.sel), wanted)
        if name == pyramid.levels[0] or not math.isfinite(wanted):
            return super().tile(tile_x, tile_y, tile_z, tilesize, *args, **kwargs)
        level = get_variable(pyramid.level(name), self.variable, sel=self.sel)
        with XarrayReader(level, tms=self.tms) as reader:
            image: ImageData = reader.tile(tile_x, tile_y, tile_z, tilesize, *args, **kwargs)
        return image

    def close(self) -> None:
        """Nothing to close: the file stays open in :data:`OPEN_FILES` for the next
        tiles."""
