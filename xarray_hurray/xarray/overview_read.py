"""Choosing the level of a pyramid to read: :func:`coarsest_level`, the one rule, and
:class:`Levels`, behind ``tree.hurray.level(...)``; the map tiles' reader
(``xarray_hurray.maps.tile_level``) takes the same rule for a tile's cells.

This is read-side code: it imports xarray and numpy and the pyramid's record
(:mod:`.pyramid`), never dask nor the modules that build pyramids, so that a process
that opens a pyramid and reads a tile loads no more than the backend does.  What the
choice needs of a tree (the levels its ``multiscales`` layout names, each level's
sizes and cell spacings) is read from it once, by :meth:`Levels.of`; the accessor
keeps it with the tree it was made of.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..errors import HurrayTypeError, HurrayValueError
from .pyramid import level_names

LEVEL_TOLERANCE = 1e-9
"""The relative slack of "no larger than" in the choice of a level, so that a cell
the size wanted but for rounding (a spacing computed from coordinates, a cell size
from a tile's bounds) still fits."""


def coarsest_level(
    cells: Sequence[Mapping[Hashable, float]],
    resolution: Mapping[Hashable, float],
    sizes: Sequence[Mapping[Hashable, int]] = (),
    size: Mapping[Hashable, int] | None = None,
) -> int:
    """The number of the coarsest level whose cell along each dimension ``resolution``
    names is no larger than the one wanted there (within a relative
    :data:`LEVEL_TOLERANCE`), and that has at least ``size`` cells along each
    dimension ``size`` names; 0 (the finest) when none is.

    Parameters
    ----------
    cells
        By level, finest first: its cell's size along each dimension ``resolution``
        names.
    resolution
        The largest cell wanted, by dimension.
    sizes
        By level, finest first: its sizes along each dimension ``size`` names (only
        read where ``size`` is given).
    size
        The fewest cells wanted, by dimension.
    """
    for number in reversed(range(len(cells))):  # coarsest first
        if size and not all(sizes[number].get(d, 0) >= n for d, n in size.items()):
            continue
        level = cells[number]
        if all(level[d] <= wanted * (1 + LEVEL_TOLERANCE) for d, wanted in resolution.items()):
            return number
    return 0


def _spacing(level: xr.Dataset, dim: Hashable) -> float | None:
    """The mean spacing of ``dim``'s 1-D numeric coordinate at ``level`` (None
    where it has fewer than two cells or no such coordinate)."""
    # (not coords.get: a dimension without a coordinate gives its positions there)
    coordinate = level.coords[dim] if dim in level.coords else None
    if (
        coordinate is None
        or coordinate.ndim != 1
        or coordinate.size < 2
        or coordinate.dtype.kind not in "iuf"
    ):
        return None
    values = coordinate.values
    return float(abs(values[-1] - values[0]) / (values.size - 1))


def _checked_wants(
    size: Any, resolution: Any, dims: Mapping[Hashable, int]
) -> tuple[dict[Hashable, int], dict[Hashable, float]]:
    """``size`` and ``resolution`` of :meth:`Levels.pick`, checked.

    Raises
    ------
    HurrayTypeError, HurrayValueError
        For arguments that are not mappings of dimensions to positive numbers
        (integers for ``size``), or that name dimensions the levels lack.
    """
    for what, value, kinds in (
        ("size", size, (int, np.integer)),
        ("resolution", resolution, (int, float, np.integer, np.floating)),
    ):
        if value is None:
            continue
        if not isinstance(value, Mapping) or not all(
            isinstance(v, kinds)
            and not isinstance(v, bool | np.bool_)
            and v > 0
            and math.isfinite(v)
            for v in value.values()
        ):
            kind = "a positive integer" if what == "size" else "a positive number"
            raise HurrayTypeError(
                f"{what} must be a mapping of dimension names to {kind} each, as "
                f"{{'x': 512}}, got {value!r}",
                value=value,
            )
    wanted = {**(size or {}), **(resolution or {})}
    if not wanted:
        raise HurrayValueError(
            "give the number of the level, or the wanted size or resolution of the level to pick"
        )
    unknown = [d for d in wanted if d not in dims]
    if unknown:
        raise HurrayValueError(
            f"dimensions {unknown} are not dimensions of the levels {tuple(dims)}"
        )
    return dict(size or {}), dict(resolution or {})


@dataclass(frozen=True)
class Levels:
    """The levels of a pyramid as the choice of one needs them.

    Attributes
    ----------
    names
        The groups of the levels, finest first (the ``multiscales`` layout's assets).
    sizes
        The sizes of each level's dimensions.
    spacings
        The mean spacing of each level's 1-D numeric dimension coordinates of at
        least two cells.
    """

    names: tuple[str, ...]
    sizes: tuple[Mapping[Hashable, int], ...]
    spacings: tuple[Mapping[Hashable, float], ...]

    @classmethod
    def of(cls, tree: xr.DataTree) -> Levels:
        """The levels of ``tree``, read from its root's ``multiscales`` layout and its
        children.

        Raises
        ------
        HurrayValueError
            When the tree has no overviews (no ``multiscales`` layout of assets at its
            root, or one naming groups it lacks).
        """
        names = tuple(level_names(tree.attrs, tree.children))
        sizes = []
        spacings = []
        for name in names:
            level = tree.children[name].to_dataset()
            sizes.append(dict(level.sizes))
            found = {dim: _spacing(level, dim) for dim in level.dims}
            spacings.append({dim: cell for dim, cell in found.items() if cell is not None})
        return cls(names, tuple(sizes), tuple(spacings))

    def numbered(self, number: Any) -> str:
        """The group of level ``number`` (0: the finest).

        Raises
        ------
        HurrayTypeError, HurrayValueError
            For a number that is not an integer, or no level's.
        """
        if not isinstance(number, int | np.integer) or isinstance(number, bool | np.bool_):
            raise HurrayTypeError(
                f"a level is picked by its number (an integer) or by size= or resolution=, "
                f"got {number!r}",
                value=number,
            )
        if not 0 <= number < len(self.names):
            raise HurrayValueError(
                f"level {number} is not one of the pyramid's: its levels are numbered 0 "
                f"(the finest) to {len(self.names) - 1}",
                value=number,
            )
        return self.names[int(number)]

    def pick(
        self,
        size: Mapping[Hashable, int] | None = None,
        resolution: Mapping[Hashable, float] | None = None,
    ) -> str:
        """The coarsest level that still has at least ``size`` cells along each
        dimension it names (an output of that size), and cells no larger than
        ``resolution`` (in coordinate units) along each it names; level 0 when none is
        that fine.

        A level's cell along a dimension is the spacing of its 1-D numeric coordinate
        there; a level of one cell along it has one cell as large as level 0's extent.

        Raises
        ------
        HurrayValueError, HurrayTypeError
            When neither ``size`` nor ``resolution`` is given, they are not mappings
            of dimensions to positive numbers, they name dimensions the levels lack,
            or ``resolution`` names one without a 1-D numeric coordinate at level 0.
        """
        finest = self.sizes[0]
        size, resolution = _checked_wants(size, resolution, finest)
        extents: dict[Hashable, float] = {}
        for dim in resolution:
            spacing = self.spacings[0].get(dim)
            if spacing is None:
                raise HurrayValueError(
                    f"resolution along {dim!r} needs a 1-D numeric coordinate {dim!r} of "
                    "at least two cells at level 0; choose the level by size instead"
                )
            extents[dim] = spacing * finest[dim]
        # a level of one cell along a dimension has one cell of level 0's extent
        cells = [{d: level.get(d, extents[d]) for d in resolution} for level in self.spacings]
        return self.names[coarsest_level(cells, resolution, self.sizes, size)]
