"""Overviews: a pyramid of coarser levels of a dataset, as a DataTree of groups
``"0"`` (the dataset itself), ``"1"``, ``"2"``... described by the Zarr
``multiscales`` convention (v1) in the root's attributes, with the ``proj`` and
``spatial`` conventions where the dataset has a CRS and a regular grid (:mod:`.geozarr`).

Level ``k`` coarsens the pyramid's dimensions by its factor ``F[k]`` (``F[0] = 1``):
its cell ``i`` covers the cells ``[i * F[k], (i + 1) * F[k])`` of level 0 along each of
them, and there are ``ceil(n / F[k])`` cells, so that the last one holds the cells
left over (as GDAL sizes overviews).  Each level is computed from the previous one,
block by block (:mod:`.overview_build`), and equals the resampling of level 0 over
its windows:

- ``"mean"``: the mean of the valid cells (not NaN, not the fill value; NaN, or the
  fill value of the variable's attributes, where a window has none), carried from
  level to level as a sum and a count, so that a level is the mean over its whole
  window whatever the levels between (GDAL's ``average``, which ignores nodata);
  complex values are averaged in both parts;
- ``"min"``, ``"max"``: of the valid cells (real values only);
- ``"nearest"``: the first cell of the window (the one holding its lowest corner),
  valid or not;
- ``"mode"``: the most frequent valid value of the previous level's window, the
  smallest of those as frequent (as GDAL's ``mode`` builds each overview from the
  one before).

Coordinates along the pyramid's dimensions are coarsened by ``"mean"`` (the centre
of the cells a coarse cell holds), and CF cell bounds (the ``bounds`` attribute) by
the outermost edges of those cells; variables without the pyramid's dimensions are
the same at every level.

By default a pyramid coarsens the spatial dimensions (:func:`~.dims.default_dims`) and
stores its two-dimensional fields in tiles of :data:`~.overview_chunks.TILE` cells a
side.  This module holds :func:`multiscale` and the record of a pyramid in its
attributes; :mod:`.overview_plan` checks what a pyramid is asked for,
:mod:`.overview_chunks` chooses the chunks its levels are stored in,
:mod:`.overview_build` computes them, :mod:`.overview_write` writes them into a file
and :mod:`.overview_read` picks a level to read.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import xarray as xr

from .geozarr import PROJ_CONVENTION, SPATIAL_CONVENTION, Grid, grid_of
from .overview_build import build_levels
from .overview_plan import plan_pyramid
from .pyramid import PYRAMID_ATTR, Pyramid

CONVENTION_METHODS = {
    "mean": "average",
    "nearest": "nearest",
    "mode": "mode",
    "min": "min",
    "max": "max",
}
"""The ``resampling_method`` of the ``multiscales`` convention (GDAL's names) of each."""

MULTISCALES_CONVENTION = {
    "uuid": "d35379db-88df-4056-af3a-620245f8e347",
    "schema_url": (
        "https://raw.githubusercontent.com/zarr-conventions/multiscales/refs/tags/v1/schema.json"
    ),
    "spec_url": "https://github.com/zarr-conventions/multiscales/blob/v1/README.md",
    "name": "multiscales",
    "description": "Multiscale layout of zarr datasets",
}
"""The entry of the ``multiscales`` convention in a group's ``zarr_conventions``."""

LEVEL_ATTRS = ("overview_level", "overview_factor", "overview_dims")
"""The attributes of each level's group saying what it is."""


def level_attrs(
    attrs: Mapping[Hashable, Any], number: int, factor: int, dims: Sequence[str]
) -> dict[Hashable, Any]:
    """The attributes of level ``number``: the dataset's, and what the level is."""
    return {**attrs, **dict(zip(LEVEL_ATTRS, (number, factor, list(dims)), strict=True))}


def multiscales(pyramid: Pyramid, grid: Grid | None = None) -> dict[str, Any]:
    """The ``multiscales`` object (convention v1) of the pyramid's levels: a layout
    entry per level, each derived from level 0 with its scale against level 0 along
    the pyramid's dimensions (so that a client chaining ``derived_from`` and one
    reading scales against the first level read the same), and, given the ``grid``
    of level 0, each level's ``spatial:shape`` and ``spatial:transform``."""
    methods = {pyramid.resampling.get(name) for name in pyramid.resampling}
    layout: list[dict[str, Any]] = []
    for number, factor in enumerate((1, *pyramid.factors)):
        entry: dict[str, Any] = {"asset": str(number)}
        if number:
            entry["derived_from"] = "0"
        entry["transform"] = {
            "scale": [float(factor)] * len(pyramid.dims),
            "translation": [0.0] * len(pyramid.dims),
        }
        if grid is not None:
            entry |= grid.level({dim: factor for dim in pyramid.dims})
        layout.append(entry)
    value: dict[str, Any] = {"layout": layout}
    if len(methods) == 1:
        (method,) = methods
        if method is not None:
            value["resampling_method"] = CONVENTION_METHODS[method]
    return value


def pyramid_tree(levels: Sequence[xr.Dataset], pyramid: Pyramid) -> xr.DataTree:
    """The levels as a DataTree: groups ``"0"``, ``"1"``..., each with the
    attributes saying which level it is (:func:`level_attrs`), the root holding the
    ``multiscales`` convention's attributes (with those of ``proj`` and ``spatial``
    where level 0 has a CRS and a regular grid, :func:`~.geozarr.grid_of`, and then
    each level's group those of its own grid too) and the pyramid's record."""
    factors = (1, *pyramid.factors)
    levels = [
        level.assign_attrs(level_attrs(level.attrs, number, factor, pyramid.dims))
        for number, (level, factor) in enumerate(zip(levels, factors, strict=True))
    ]
    grid = grid_of(levels[0], pyramid.dims)
    conventions = [MULTISCALES_CONVENTION]
    if grid is not None:
        conventions += [PROJ_CONVENTION, SPATIAL_CONVENTION]
        # each level's group says where it lies too, for clients that read the levels
        # as datasets of their own (xpublish-tiles)
        levels = [
            level.assign_attrs(grid.level_attrs({dim: factor for dim in pyramid.dims}))
            for level, factor in zip(levels, factors, strict=True)
        ]
    root = xr.Dataset(
        attrs={
            "zarr_conventions": [dict(c) for c in conventions],
            "multiscales": multiscales(pyramid, grid),
            **(grid.attrs() if grid is not None else {}),
            PYRAMID_ATTR: pyramid.record(),
        }
    )
    return xr.DataTree.from_dict({"/": root, **{f"/{k}": level for k, level in enumerate(levels)}})


def multiscale(
    ds: xr.Dataset,
    overviews: int | Sequence[int] = 1,
    *,
    dims: str | Sequence[Hashable] | None = None,
    resampling: str | Mapping[Hashable, str] | None = None,
) -> xr.DataTree:
    """The pyramid of ``ds``: a DataTree of levels ``"0"`` (``ds``), ``"1"``... each
    coarser by its factor along ``dims``, nothing written.

    Parameters
    ----------
    ds
        The full-resolution dataset.
    overviews
        The number ``N`` of coarser levels (factors 2, 4, ..., ``2**N``), at most down
        to the first level that fits in one stored chunk (coarser ones are read no
        faster; more are refused, naming the number of use), or their factors against
        level 0, increasing, each a multiple of the one before and below twice the
        longest dimension coarsened.
    dims
        The dimensions coarsened; by default the spatial ones (CF ``axis`` X or Y, the
        standard names or units of longitude, latitude or projection coordinates),
        else the last two of each data variable, never a time or a vertical dimension
        (see :func:`~.dims.default_dims`).
    resampling
        ``"mean"``, ``"nearest"``, ``"mode"``, ``"min"``, ``"max"``, or a mapping of
        variable names to those.  By default ``"mode"`` for integers, booleans and
        flags, ``"nearest"`` for values that are not numbers and ``"mean"`` for
        continuous fields; numeric coordinates ``"mean"``; CF bounds their outermost
        edges.  The module's description defines each (missing values, edges).

    Returns
    -------
    xarray.DataTree
        The levels as children of the root, whose attributes describe them by the Zarr
        ``multiscales`` convention (``zarr_conventions``, ``multiscales``) and record how
        they were made (``hurray_overviews``); each level's attributes say which it is
        (``overview_level``, ``overview_factor``, ``overview_dims``) and its data
        variables' ``cell_methods`` how it was made.  Data variables with two of
        ``dims`` and no chunks of their own (an encoding's or dask's) are given
        tiles of :data:`~.overview_chunks.TILE` cells a side at level 0 (in their
        encoding), cut to the shape of each coarser level.  Dask-backed variables
        stay lazy, every level of a block of level 0 computed by one task; others
        are computed, block by block.

    Raises
    ------
    HurrayValueError, HurrayTypeError
        For bad or useless factors, dimensions the dataset lacks, unknown
        resamplings or resamplings other than ``"nearest"`` for values that are not
        numbers.
    """
    pyramid = plan_pyramid(ds, overviews, dims, resampling)
    return pyramid_tree(build_levels(ds, pyramid), pyramid)
