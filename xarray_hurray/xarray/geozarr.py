"""Where a pyramid lies on the Earth, as the Zarr ``proj`` and ``spatial`` conventions
say it (GeoZarr): the CRS of a dataset and the affine grid of its coordinates.

A pyramid of a dataset with a CRS and a regular grid gets, at its root, ``proj:code``
(or ``proj:wkt2``), ``spatial:dimensions`` and ``spatial:bbox``, and in each level's
entry of the ``multiscales`` layout its ``spatial:shape`` and ``spatial:transform``
(docs/spec/overviews.md, "Where the levels lie").  Nothing is written that is not
known: a dataset without a CRS, or whose coordinates along the two spatial dimensions
are not regular, gets none of it.

The CRS is found as CF says: the data variables' ``grid_mapping`` (attribute, or
encoding after ``decode_coords="all"``) names a variable whose ``crs_wkt`` or
``spatial_ref`` holds its WKT, or whose ``proj:code`` or ``epsg_code`` names it.  A
WKT's authority code is the one its outermost CRS carries (``ID[...]`` in WKT2,
``AUTHORITY[...]`` in WKT1), read from the text; no CRS is matched against a database.
A WKT2 text without a code is written as ``proj:wkt2``; a WKT1 text without one is
turned into WKT2 by pyproj where it is installed (rioxarray, which writes such texts,
depends on it) and left out otherwise, as ``proj:wkt2`` must be WKT2.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

PROJ_CONVENTION = {
    "uuid": "f17cb550-5864-4468-aeb7-f3180cfb622f",
    "schema_url": "https://raw.githubusercontent.com/zarr-conventions/proj/refs/tags/v0.1/schema.json",
    "spec_url": "https://github.com/zarr-conventions/proj/blob/v0.1/README.md",
    "name": "proj",
    "description": "Coordinate reference system information for geospatial data",
}
"""The entry of the ``proj`` convention in a group's ``zarr_conventions``."""

SPATIAL_CONVENTION = {
    "uuid": "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4",
    "schema_url": (
        "https://raw.githubusercontent.com/zarr-conventions/spatial/refs/tags/v0.1/schema.json"
    ),
    "spec_url": "https://github.com/zarr-conventions/spatial/blob/v0.1/README.md",
    "name": "spatial",
    "description": "Spatial coordinate information",
}
"""The entry of the ``spatial`` convention in a group's ``zarr_conventions``."""

REGULAR_TOLERANCE = 0.01
"""How far, in cells, a coordinate may lie from the regular grid through its first and
last values and still be taken as on it (float32 projected coordinates of 10 m cells
are off by up to 0.006 of a cell)."""

CODE = re.compile(r"[A-Z]+:[0-9]+")
"""What ``proj:code`` holds (the convention's pattern)."""

X_NAMES = frozenset({"longitude", "grid_longitude", "projection_x_coordinate"})
Y_NAMES = frozenset({"latitude", "grid_latitude", "projection_y_coordinate"})
"""CF standard names of the X and of the Y coordinates."""

X_DIMS = frozenset({"x", "lon", "longitude"})
Y_DIMS = frozenset({"y", "lat", "latitude"})
"""The names of X and Y dimensions that rioxarray, GDAL's netCDF driver and the tile
servers take as such where no attribute says (rioxarray writes none on ``x`` and
``y``)."""


def _text(var: xr.Variable, key: str) -> str:
    value = var.attrs.get(key, var.encoding.get(key))
    return value.strip() if isinstance(value, str) else ""


def _axis(dim: str, var: xr.Variable) -> str | None:
    """``"X"`` or ``"Y"``: what the coordinate ``var`` of dimension ``dim`` says of
    itself by CF (``axis``, its standard name or units), else what its name says
    (:data:`X_DIMS`, :data:`Y_DIMS`), else None."""
    axis = _text(var, "axis").upper()
    if axis in ("X", "Y"):
        return axis
    name = _text(var, "standard_name")
    units = _text(var, "units").lower()
    if name in X_NAMES or units in ("degrees_east", "degree_east", "degrees_e", "degree_e"):
        return "X"
    if name in Y_NAMES or units in ("degrees_north", "degree_north", "degrees_n", "degree_n"):
        return "Y"
    if not (axis or name or units):
        if dim.lower() in X_DIMS:
            return "X"
        if dim.lower() in Y_DIMS:
            return "Y"
    return None


def _outer_authority(wkt: str) -> str | None:
    """The ``AUTHORITY:code`` of the outermost object of ``wkt``: the last ``ID[...]``
    (WKT2) or ``AUTHORITY[...]`` (WKT1) among its direct members, else None."""
    depth, found, i = 0, None, 0
    while i < len(wkt):
        char = wkt[i]
        if char == '"':  # a quoted text, "" inside it a quote
            i += 1
            while i < len(wkt) and not (wkt[i] == '"' and wkt[i + 1 : i + 2] != '"'):
                i += 2 if wkt[i] == '"' else 1
        elif char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif depth == 1 and char.isalpha() and not wkt[i - 1].isalnum():
            match = re.match(r'(?:ID|AUTHORITY)\s*[\[(]\s*"([^"]+)"\s*,\s*"?([0-9]+)"?', wkt[i:])
            if match:
                found = f"{match.group(1).upper()}:{match.group(2)}"
        i += 1
    return found


def _is_wkt2(wkt: str) -> bool:
    """Whether ``wkt`` is WKT2: its outermost keyword is one of WKT2's CRSs (they end
    in ``CRS``; WKT1's in ``CS``)."""
    keyword = re.match(r"\s*([A-Za-z_]+)", wkt)
    return bool(keyword) and keyword.group(1).upper().endswith("CRS")  # type: ignore[union-attr]


def _wkt2_of(wkt: str) -> str | None:
    """``wkt`` as WKT2: itself, or a WKT1 text turned into WKT2 by pyproj (None where it
    is not installed, or cannot read the text)."""
    if _is_wkt2(wkt):
        return wkt
    try:
        import pyproj
    except ImportError:
        return None
    try:
        text: str = pyproj.CRS.from_wkt(wkt).to_wkt()  # WKT2 2019 by default
    except pyproj.exceptions.CRSError:
        return None
    return text


def proj_attrs(grid_mapping: Mapping[Hashable, Any]) -> dict[str, str] | None:
    """The ``proj`` attributes of a CF grid mapping's attributes: ``proj:code`` where
    they name an authority code (``proj:code``, ``epsg_code``, or the outermost ID
    of the WKT in ``crs_wkt`` or ``spatial_ref``), else ``proj:wkt2``; None where they
    give no CRS, or only a WKT1 text pyproj is not there to turn into WKT2."""
    for key in ("proj:code", "epsg_code"):
        value = grid_mapping.get(key)
        if isinstance(value, int | np.integer) and not isinstance(value, bool):
            value = f"EPSG:{int(value)}"
        if isinstance(value, str) and CODE.fullmatch(value.strip().upper()):
            return {"proj:code": value.strip().upper()}
    for key in ("crs_wkt", "spatial_ref"):
        wkt = grid_mapping.get(key)
        if not isinstance(wkt, str) or not wkt.strip():
            continue
        code = _outer_authority(wkt)
        if code is not None and CODE.fullmatch(code):
            return {"proj:code": code}
        wkt2 = _wkt2_of(wkt)
        return {"proj:wkt2": wkt2} if wkt2 is not None else None
    return None


def _grid_mapping_name(var: xr.Variable) -> str | None:
    """The grid mapping variable ``var`` names (CF's short form, or the first of the
    extended form ``"crs: x y"``)."""
    value = var.attrs.get("grid_mapping", var.encoding.get("grid_mapping"))
    if not isinstance(value, str) or not value.strip():
        return None
    return value.split(":")[0].split()[0]


def crs_of(ds: xr.Dataset, dims: Sequence[str]) -> dict[str, str] | None:
    """The ``proj`` attributes of the CRS of ``ds``'s data variables along ``dims``:
    that of the one grid mapping they name (see :func:`proj_attrs`), else None (none
    named, several, or one that gives no CRS); the dataset's own ``proj:code`` where
    none is named."""
    named = {
        _grid_mapping_name(var.variable)
        for var in ds.data_vars.values()
        if set(dims) <= set(map(str, var.dims))
    } - {None}
    if not named:
        return proj_attrs({"proj:code": ds.attrs.get("proj:code")})
    if len(named) > 1:
        return None
    (name,) = named
    if name not in ds.variables:
        return None
    return proj_attrs(ds.variables[name].attrs)


def _regular(coordinate: Any) -> tuple[float, float] | None:
    """The first value and step of a 1-D numeric coordinate of at least two cells on a
    regular grid (each cell within :data:`REGULAR_TOLERANCE` of a cell of it, either
    direction), else None."""
    values = np.asarray(coordinate, dtype=np.float64)
    if values.ndim != 1 or values.size < 2 or not np.isfinite(values).all():
        return None
    step = (values[-1] - values[0]) / (values.size - 1)
    if step == 0:
        return None
    grid = values[0] + step * np.arange(values.size)
    if np.abs(values - grid).max() > REGULAR_TOLERANCE * abs(step):
        return None
    return float(values[0]), float(step)


@dataclass(frozen=True)
class Grid:
    """Where level 0 of a pyramid lies: its CRS and the affine grid of its two spatial
    dimensions.

    Attributes
    ----------
    crs
        The ``proj`` attributes: ``{"proj:code": ...}`` or ``{"proj:wkt2": ...}``.
    dims
        The Y and the X dimension, in that order (``spatial:dimensions``).
    shape
        Level 0's cells along them, ``[height, width]``.
    transform
        Level 0's ``spatial:transform`` ``[a, b, c, d, e, f]``: ``x = a * col + c`` and
        ``y = e * row + f`` at the corner of a cell (``b = d = 0``).
    """

    crs: Mapping[str, str]
    dims: tuple[str, str]
    shape: tuple[int, int]
    transform: tuple[float, float, float, float, float, float]

    def bbox(self) -> list[float]:
        """``spatial:bbox``: ``[xmin, ymin, xmax, ymax]`` of level 0's cells' edges."""
        a, _, c, _, e, f = self.transform
        height, width = self.shape
        xs, ys = (c, c + a * width), (f, f + e * height)
        return [min(xs), min(ys), max(xs), max(ys)]

    def level(self, factors: Mapping[str, int]) -> dict[str, list[Any]]:
        """``spatial:shape`` and ``spatial:transform`` of the level coarser by
        ``factors`` (by dimension; 1 where not given): cells ``factor`` times larger
        from the same corner, ``ceil(n / factor)`` of them."""
        a, b, c, d, e, f = self.transform
        fy, fx = (factors.get(dim, 1) for dim in self.dims)
        height, width = self.shape
        return {
            "spatial:shape": [-(-height // fy), -(-width // fx)],
            "spatial:transform": [a * fx, b, c, d, e * fy, f],
        }

    def attrs(self) -> dict[str, Any]:
        """The root's attributes of the ``proj`` and ``spatial`` conventions."""
        return {
            **self.crs,
            "spatial:dimensions": list(self.dims),
            "spatial:bbox": self.bbox(),
        }

    def level_attrs(self, factors: Mapping[str, int]) -> dict[str, Any]:
        """The attributes of the group of the level coarser by ``factors``: the
        ``proj`` and ``spatial`` conventions declared, the root's attributes and the
        level's own shape and transform (:meth:`level`)."""
        return {
            "zarr_conventions": [dict(PROJ_CONVENTION), dict(SPATIAL_CONVENTION)],
            **self.attrs(),
            **self.level(factors),
        }


def grid_of(ds: xr.Dataset, dims: Sequence[str]) -> Grid | None:
    """The grid of ``ds`` over two of ``dims``, the X and the Y dimension (as their
    coordinates' CF ``axis``, standard names or units say, else their names), or
    None: where they are
    not found, their 1-D coordinates are not regular (:func:`_regular`), or the data
    variables over them have no CRS (:func:`crs_of`)."""
    axes: dict[str, str] = {}
    for dim in dims:
        if dim in ds.coords and ds[dim].ndim == 1:
            axis = _axis(dim, ds[dim].variable)
            if axis is not None and axis not in axes:
                axes[axis] = dim
    if set(axes) != {"X", "Y"}:
        return None
    ydim, xdim = axes["Y"], axes["X"]
    x, y = _regular(ds[xdim].values), _regular(ds[ydim].values)
    if x is None or y is None:
        return None
    crs = crs_of(ds, (ydim, xdim))
    if crs is None:
        return None
    (x0, dx), (y0, dy) = x, y
    # the corner of the first cell lies half a cell before its centre
    transform = (dx, 0.0, x0 - dx / 2, 0.0, dy, y0 - dy / 2)
    if not all(math.isfinite(v) for v in transform):
        return None
    return Grid(crs, (ydim, xdim), (ds.sizes[ydim], ds.sizes[xdim]), transform)
