"""Overviews: a pyramid of coarser levels of a dataset, as a DataTree of groups
``"0"`` (the dataset itself), ``"1"``, ``"2"``... described by the Zarr
``multiscales`` convention (v1) in the root's attributes, with the ``proj`` and
``spatial`` conventions where the dataset has a CRS and a regular grid (:mod:`.geozarr`).

Level ``k`` coarsens the pyramid's dimensions by its factor ``F[k]`` (``F[0] = 1``):
its cell ``i`` covers the cells ``[i * F[k], (i + 1) * F[k])`` of level 0 along each of
them, and there are ``ceil(n / F[k])`` cells, so that the last one holds the cells
left over (as GDAL sizes overviews).  Each level is computed from the previous one,
block by block in the same dask graph, and equals the resampling of level 0 over its
windows:

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
stores its two-dimensional fields in tiles of :data:`TILE` cells a side.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from ..errors import HurrayTypeError, HurrayValueError
from .dims import default_dims
from .encoding import auto_chunks
from .geozarr import PROJ_CONVENTION, SPATIAL_CONVENTION, Grid, grid_of
from .pyramid import (
    PYRAMID_ATTR,
    RESAMPLINGS,
    Pyramid,
    checked_factors,
    level_names,
)
from .resampling import (
    KERNELS,
    coarsen_blocks,
    sum_dtype,
    valid_count,
    valid_sum,
    window_max,
    window_min,
    window_total,
)

CONVENTION_METHODS = {
    "mean": "average",
    "nearest": "nearest",
    "mode": "mode",
    "min": "min",
    "max": "max",
}
"""The ``resampling_method`` of the ``multiscales`` convention (GDAL's names) of each."""

CELL_METHODS = {"mean": "mean", "nearest": "point", "mode": "mode", "min": "minimum"}
CELL_METHODS |= {"max": "maximum"}
"""The CF ``cell_methods`` method of each resampling."""

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


TILE = 256
"""The side of a pyramid's default chunks along the two dimensions it coarsens: the
side of a map tile, so that a tile of any level is one chunk.  A tile read from
chunks of 512 x 512 (those of about 1 MiB, the default elsewhere, for 4-byte values)
moves four times its bytes."""


def is_count(overviews: Any) -> bool:
    """Whether ``overviews`` is a number of levels (an integer, not a boolean)."""
    return isinstance(overviews, int | np.integer) and not isinstance(overviews, bool | np.bool_)


def _tiles(var: xr.Variable, dims: Sequence[str]) -> bool:
    """Whether ``var`` takes the default tiles of :func:`stored_chunks`: two of ``dims``
    and no stored chunks of its own (its encoding's, or dask chunks)."""
    chunks = var.encoding.get("chunks")
    own = var.chunks is not None or (chunks is not None and len(chunks) == var.ndim)
    return not own and sum(d in dims for d in var.dims) == 2


def stored_chunks(var: xr.Variable, dims: Sequence[str]) -> tuple[int, ...]:
    """The chunks ``var`` is stored in at level 0 of a pyramid coarsening ``dims``: its
    encoding's, its dask chunks, tiles (:data:`TILE` along the two of ``dims`` it has,
    one along its others) for a variable with two of them, else those of
    :func:`~.encoding.auto_chunks`."""
    chunks = var.encoding.get("chunks")
    if chunks is not None and len(chunks) == var.ndim:
        return tuple(int(c) for c in chunks)
    if var.chunks is not None:
        return tuple(int(c[0]) for c in var.chunks)
    if _tiles(var, dims):
        return tuple(
            min(TILE, n) if d in dims else 1 for d, n in zip(var.dims, var.shape, strict=True)
        )
    return auto_chunks(var.shape, max(var.dtype.itemsize, 1))


def tiled(ds: xr.Dataset, dims: Sequence[str]) -> xr.Dataset:
    """``ds`` with the default tiles of :func:`stored_chunks` in the encoding of each
    data variable that takes them."""
    chosen = {
        name: stored_chunks(var.variable, dims)
        for name, var in ds.data_vars.items()
        if _tiles(var.variable, dims)
    }
    if not chosen:
        return ds
    ds = ds.copy()
    for name, chunks in chosen.items():
        ds[name].encoding = {**ds[name].encoding, "chunks": chunks}
    return ds


def useful_levels(ds: xr.Dataset, dims: Sequence[str]) -> tuple[int, str]:
    """How many levels of factors 2, 4, 8... are of use: down to the first that fits
    in one stored chunk (:func:`stored_chunks`) of every data variable along ``dims``,
    since a coarser one is read no faster (at least one level); and why, for a
    message."""
    first, why = 0, "level 0 already fits in one chunk of every variable"
    for name, var in ds.data_vars.items():
        chunks = stored_chunks(var.variable, dims)
        for dim, n, c in zip(var.dims, var.shape, chunks, strict=True):
            level = 0
            while dim in dims and -(-n // 2**level) > max(c, 1):  # (0: the writer refuses)
                level += 1
            if level > first:
                first = level
                why = (
                    f"level {level} (factor {2**level}) is the first that fits in one chunk "
                    f"of every variable ({name!r} has {-(-n // 2**level)} cells along "
                    f"{dim!r} there, in chunks of {c})"
                )
    return max(first, 1), why


def _flags(var: xr.Variable) -> bool:
    return any(key in var.attrs for key in ("flag_values", "flag_masks", "flag_meanings"))


def default_resampling(var: xr.Variable) -> str:
    """The resampling that keeps the meaning of ``var``: ``"mode"`` for integers,
    booleans and flags (CF ``flag_values``, ``flag_masks``, ``flag_meanings``),
    ``"nearest"`` for anything not a number (times, text), ``"mean"`` for the rest
    (continuous fields, complex ones too)."""
    if var.dtype.kind not in "biufc":
        return "nearest"
    if var.dtype.kind in "biu" or _flags(var):
        return "mode"
    return "mean"


def _scalar_fill(source: Mapping[Any, Any]) -> Any:
    for key in ("_FillValue", "missing_value"):
        value = source.get(key)
        if value is not None and np.ndim(value) == 0:
            return value
    return None


def fill_of(var: xr.Variable) -> Any:
    """The value that marks a missing cell of ``var`` besides NaN, or None: its
    ``_FillValue`` or ``missing_value`` attribute (values not decoded), else its
    encoding's (cells equal to it are written as that fill, which reads back as
    missing)."""
    if var.dtype.kind not in "biuf":
        return None
    held = _scalar_fill(var.attrs)
    return held if held is not None else _scalar_fill(var.encoding)


def empty_mean(var: xr.Variable) -> Any:
    """What a mean of ``var`` holds where a window has no valid cell: the fill value
    of its attributes, which the level keeps (values not decoded), else None for NaN
    (an encoding's fill is not the level's, whose means are floats that NaN marks
    missing: an integer variable's is dropped at the coarser levels)."""
    return _scalar_fill(var.attrs) if var.dtype.kind in "biuf" else None


@dataclass
class _Level:
    """A variable at one level: its values, or for ``"mean"`` the sums and counts its
    values are the quotient of."""

    values: Any
    sums: Any = None
    counts: Any = None


def mean_of(sums: np.ndarray, counts: np.ndarray, dtype: np.dtype, empty: Any) -> np.ndarray:
    """The means of cells from their sums and counts of valid cells: NaN, or ``empty``,
    where there is none."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.asarray(sums / counts, dtype=dtype)
    if empty is not None:
        out[counts == 0] = empty
    return out


def _mean_values(sums: Any, counts: Any, dtype: np.dtype, empty: Any) -> Any:
    if isinstance(sums, da.Array):
        return da.map_blocks(
            mean_of, sums, counts, dtype, empty, dtype=dtype, meta=np.array((), dtype)
        )
    return mean_of(np.asarray(sums), np.asarray(counts), dtype, empty)


def mean_dtype(dtype: np.dtype) -> np.dtype:
    """The element type of the means of values of ``dtype``."""
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _next_level(
    previous: _Level, axes: Sequence[int], factor: int, method: str, var: Any
) -> _Level:
    """The variable ``var`` (level 0's) at the next level, from ``previous`` by
    windows of ``factor``."""
    fill, dtype = fill_of(var), var.dtype
    if method != "mean":
        return _Level(coarsen_blocks(previous.values, axes, factor, KERNELS[method], fill, dtype))
    sums_dtype = sum_dtype(dtype)
    if previous.sums is None:  # from level 0: the valid cells
        sums = coarsen_blocks(previous.values, axes, factor, valid_sum, fill, sums_dtype)
        counts = coarsen_blocks(
            previous.values, axes, factor, valid_count, fill, np.dtype(np.int64)
        )
    else:  # the sums and counts of the level before, summed again
        sums = coarsen_blocks(previous.sums, axes, factor, window_total, None, sums_dtype)
        counts = coarsen_blocks(
            previous.counts, axes, factor, window_total, None, np.dtype(np.int64)
        )
    return _Level(_mean_values(sums, counts, mean_dtype(dtype), empty_mean(var)), sums, counts)


def _bounds_level(bounds: Any, axis: int, factor: int, increasing: bool, dtype: np.dtype) -> Any:
    """CF bounds (last axis: the two edges of each cell) coarsened along ``axis``: the
    outermost edges of the cells of each window, in the order the coordinate runs."""
    lower = bounds[..., 0]
    upper = bounds[..., 1]
    low = np.minimum(lower, upper)
    high = np.maximum(lower, upper)
    low = coarsen_blocks(low, [axis], factor, window_min, None, dtype)
    high = coarsen_blocks(high, [axis], factor, window_max, None, dtype)
    stack = da.stack if isinstance(low, da.Array) else np.stack
    pair = [low, high] if increasing else [high, low]
    return stack(pair, axis=-1)


def _bounds_of(ds: xr.Dataset, dims: Sequence[str]) -> dict[Hashable, Hashable]:
    """The CF bounds variables of the 1-D coordinates along ``dims``: bounds to coordinate.

    Raises
    ------
    ValueError
        For bounds of another shape than ``(n, 2)`` along a coarsened dimension.
    """
    found: dict[Hashable, Hashable] = {}
    for name, var in ds.variables.items():
        target = var.attrs.get("bounds", var.encoding.get("bounds"))
        if not isinstance(target, str) or target not in ds.variables:
            continue
        bounds = ds.variables[target]
        if not set(bounds.dims) & set(dims):
            continue
        if (
            var.ndim != 1
            or bounds.ndim != 2
            or bounds.dims[0] != var.dims[0]
            or bounds.shape[1] != 2
        ):
            raise HurrayValueError(
                f"the bounds {target!r} of {name!r} have dims {bounds.dims} and shape "
                f"{bounds.shape}: only the (n, 2) bounds of a 1-D coordinate are coarsened; "
                "drop them before making overviews"
            )
        found[target] = name
    return found


def choose_resampling(
    ds: xr.Dataset, dims: Sequence[str], resampling: str | Mapping[Hashable, str] | None
) -> dict[str, str]:
    """The resampling of every variable along ``dims``: ``resampling`` (one name, or by
    variable) else :func:`default_resampling`; coordinates ``"mean"`` when they are
    numbers, ``"nearest"`` otherwise; CF bounds take theirs from their edges.

    Raises
    ------
    HurrayValueError, HurrayTypeError
        For an unknown resampling or variable, a resampling other than nearest for
        values that are not numbers, min or max for complex ones, or ``resampling``
        neither a name nor a mapping.
    """
    if resampling is not None and not isinstance(resampling, str | Mapping):
        raise HurrayTypeError(
            f"resampling must be one of {RESAMPLINGS} or a mapping of variable names to "
            f"them, got {resampling!r}",
            value=resampling,
        )
    if isinstance(resampling, Mapping):
        unknown = [k for k in resampling if k not in ds.variables]
        if unknown:
            raise HurrayValueError(
                f"resampling given for {unknown}, which are not variables of the dataset"
            )
    bounds = _bounds_of(ds, dims)
    chosen: dict[str, str] = {}
    for name, var in ds.variables.items():
        if not set(var.dims) & set(dims) or name in bounds:
            continue
        if isinstance(resampling, str):
            method = resampling if name in ds.data_vars else None
        elif isinstance(resampling, Mapping):
            method = resampling.get(name)
        else:
            method = None
        if method is None:
            numeric = var.dtype.kind in "fc" or (var.dtype.kind in "iu" and name in ds.coords)
            method = (
                ("mean" if numeric else "nearest") if name in ds.coords else default_resampling(var)
            )
        if method not in RESAMPLINGS:
            raise HurrayValueError(
                f"variable {name!r}: unknown resampling {method!r}; choose one of {RESAMPLINGS}"
            )
        if var.dtype.kind not in "biufc" and method != "nearest":
            raise HurrayValueError(
                f"variable {name!r} holds {var.dtype} values, which only 'nearest' resamples, "
                f"not {method!r}"
            )
        if var.dtype.kind == "c" and method in ("min", "max"):
            raise HurrayValueError(
                f"variable {name!r} holds complex values, which have no order for {method!r}; "
                "choose 'mean', 'nearest' or 'mode'"
            )
        chosen[str(name)] = method
    return chosen


def _level_encoding(
    var: xr.Variable, chunks: Sequence[int] | None, dtype: np.dtype
) -> dict[str, Any]:
    """The encoding of a variable at a coarser level: that of level 0, with the same
    stored chunks cut to the level's shape (tiles of one size at every level, as a
    COG's), less an integer ``dtype`` where the level holds means."""
    encoding = {k: v for k, v in var.encoding.items() if k not in ("chunks", "preferred_chunks")}
    if dtype.kind in "fc" and var.dtype.kind not in "fc":
        for key in ("dtype", "_FillValue", "missing_value", "scale_factor", "add_offset"):
            encoding.pop(key, None)
    if chunks is not None:
        encoding["chunks"] = tuple(chunks)
    return encoding


def _cell_methods(attrs: Mapping[str, Any], dims: Sequence[str], method: str) -> str:
    """``cell_methods`` with the resampling of a level added (CF's syntax)."""
    added = " ".join(f"{d}:" for d in dims) + f" {CELL_METHODS[method]}"
    previous = attrs.get("cell_methods")
    return f"{previous} {added}" if isinstance(previous, str) and previous else added


def _chosen_dims(ds: xr.Dataset, dims: str | Sequence[Hashable] | None) -> tuple[str, ...]:
    """The dimensions a pyramid of ``ds`` coarsens: ``dims`` (one name, or several),
    checked, else :func:`~.dims.default_dims`.

    Raises
    ------
    HurrayValueError
        For dimensions the dataset lacks or named twice, or none at all.
    """
    if dims is None:
        chosen = default_dims(ds)
        if not chosen:
            raise HurrayValueError(
                f"overviews coarsen no time or vertical dimension by default, and the "
                f"dataset has no other ({tuple(ds.dims)}): name the dimensions to coarsen "
                "with overview_dims"
            )
        return chosen
    chosen = (dims,) if isinstance(dims, str) else tuple(str(d) for d in dims)
    unknown = [d for d in chosen if d not in ds.dims]
    if unknown:
        raise HurrayValueError(
            f"overview dims {unknown} are not dimensions of the dataset {tuple(ds.dims)}"
        )
    if len(set(chosen)) != len(chosen):
        raise HurrayValueError(f"overview dims {list(chosen)} name a dimension twice")
    if not chosen:
        raise HurrayValueError("overviews need at least one dimension to coarsen")
    return chosen


def plan_pyramid(
    ds: xr.Dataset,
    overviews: int | Sequence[int],
    dims: str | Sequence[Hashable] | None = None,
    resampling: str | Mapping[Hashable, str] | None = None,
) -> Pyramid:
    """The pyramid ``multiscale`` makes of ``ds``, checked: a number of levels no
    larger than :func:`useful_levels`, factors below twice the longest dimension
    coarsened (a larger one makes the one cell a smaller one already makes).

    Raises
    ------
    HurrayValueError, HurrayTypeError
        For bad or useless factors, unknown dimensions and resamplings that do not fit.
    """
    chosen = _chosen_dims(ds, dims)
    if is_count(overviews):
        count = int(overviews)  # type: ignore[arg-type]  # an integer, checked
        if count < 1:
            raise HurrayValueError(f"overviews must be at least 1 level, got {count}")
        useful, why = useful_levels(ds, chosen)
        if count > useful:
            raise HurrayValueError(
                f"overviews={count} asks for more levels than are of use: {why}, and a "
                f"coarser level is read no faster; ask for at most {useful}, or give the "
                "factors of the levels",
                value=count,
            )
        factors = tuple(2**k for k in range(1, count + 1))
    else:
        factors = checked_factors(overviews)
    sizes = {d: ds.sizes[d] for d in chosen}
    limit = 2 * max(sizes.values())
    if factors[-1] >= limit:
        raise HurrayValueError(
            f"overview factor {factors[-1]} coarsens {sizes} to one cell, as a factor "
            f"half as large already does: factors must be below {limit}",
            value=factors,
        )
    return Pyramid(chosen, factors, choose_resampling(ds, chosen, resampling))


def build_levels(ds: xr.Dataset, pyramid: Pyramid) -> list[xr.Dataset]:
    """The levels of ``pyramid`` made of ``ds``, level 0 (``ds`` in :func:`tiled`
    chunks) first; dask-backed variables stay lazy, each level a graph on the
    previous one's."""
    ds = tiled(ds, pyramid.dims)
    bounds = _bounds_of(ds, pyramid.dims)
    states: dict[Hashable, _Level] = {
        name: _Level(var.data)
        for name, var in ds.variables.items()
        if str(name) in pyramid.resampling or name in bounds
    }
    levels = [ds]
    previous_factor = 1
    for number, factor in enumerate(pyramid.factors, start=1):
        step = factor // previous_factor
        previous_factor = factor
        variables: dict[Hashable, xr.Variable] = {}
        for name, var in ds.variables.items():
            if name not in states:
                variables[name] = var  # nothing to coarsen: the same at every level
                continue
            axes = [k for k, d in enumerate(var.dims) if d in pyramid.dims]
            if name in bounds:
                coordinate = ds.variables[bounds[name]]
                increasing = bool(
                    coordinate.size < 2 or coordinate.values[-1] >= coordinate.values[0]
                )
                states[name] = _Level(
                    _bounds_level(states[name].values, axes[0], step, increasing, var.dtype)
                )
                method = "min/max"
                dtype = var.dtype
            else:
                method = pyramid.resampling[str(name)]
                dtype = mean_dtype(var.dtype) if method == "mean" else var.dtype
                states[name] = _next_level(states[name], axes, step, method, var)
            data = states[name].values
            attrs = dict(var.attrs)
            if name in ds.data_vars and method in CELL_METHODS:
                attrs["cell_methods"] = _cell_methods(
                    attrs, [d for d in var.dims if d in pyramid.dims], method
                )
            chunks = _level_chunks(var, data.shape, pyramid.dims)
            if isinstance(data, da.Array) and chunks is not None:
                data = data.rechunk(chunks)
            variables[name] = xr.Variable(
                var.dims, data, attrs, _level_encoding(var, chunks, np.dtype(dtype))
            )
        level = xr.Dataset(variables, attrs=level_attrs(ds.attrs, number, factor, pyramid.dims))
        level = level.set_coords([n for n in ds.coords if n in level.variables])
        levels.append(level)
    levels[0] = ds.assign_attrs(level_attrs(ds.attrs, 0, 1, pyramid.dims))
    return levels


def _level_chunks(
    var: xr.Variable, shape: Sequence[int], dims: Sequence[str]
) -> tuple[int, ...] | None:
    """The stored chunks of a coarser level: those of level 0 cut to the level's shape
    (None for a variable stored in the chunks a write chooses)."""
    if var.chunks is None and "chunks" not in var.encoding:
        return None
    chunks = stored_chunks(var, dims)
    return tuple(max(min(c, n), 1) for c, n in zip(chunks, shape, strict=True))


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
    """The levels as a DataTree: groups ``"0"``, ``"1"``..., the root holding the
    ``multiscales`` convention's attributes (with those of ``proj`` and ``spatial``
    where level 0 has a CRS and a regular grid, :func:`~.geozarr.grid_of`, and then
    each level's group those of its own grid too) and the pyramid's record."""
    grid = grid_of(levels[0], pyramid.dims)
    conventions = [MULTISCALES_CONVENTION]
    if grid is not None:
        conventions += [PROJ_CONVENTION, SPATIAL_CONVENTION]
        # each level's group says where it lies too, for clients that read the levels
        # as datasets of their own (xpublish-tiles)
        levels = [
            level.assign_attrs(grid.level_attrs({dim: factor for dim in pyramid.dims}))
            for level, factor in zip(levels, (1, *pyramid.factors), strict=True)
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
        tiles of :data:`TILE` cells a side at level 0 (in their encoding), cut to the
        shape of each coarser level.  Dask-backed variables stay lazy, each level
        computed from the previous one's graph; others are computed.

    Raises
    ------
    HurrayValueError, HurrayTypeError
        For bad or useless factors, dimensions the dataset lacks, unknown
        resamplings or resamplings other than ``"nearest"`` for values that are not
        numbers.
    """
    pyramid = plan_pyramid(ds, overviews, dims, resampling)
    return pyramid_tree(build_levels(ds, pyramid), pyramid)


# -- reading


def _spacing(level: xr.Dataset, dim: str) -> float | None:
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
    """``size`` and ``resolution`` of :func:`pick_level`, checked.

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
        raise HurrayValueError("give the wanted size or resolution of the level to pick")
    unknown = [d for d in wanted if d not in dims]
    if unknown:
        raise HurrayValueError(
            f"dimensions {unknown} are not dimensions of the levels {tuple(dims)}"
        )
    return dict(size or {}), dict(resolution or {})


def pick_level(
    tree: xr.DataTree,
    size: Mapping[Hashable, int] | None = None,
    resolution: Mapping[Hashable, float] | None = None,
) -> str:
    """The coarsest level that still has at least ``size`` cells along each dimension
    it names (an output of that size), and cells no larger than ``resolution`` (in
    coordinate units) along each it names; level 0 when none is that fine.

    A level's cell along a dimension is the spacing of its 1-D numeric coordinate
    there; a level of one cell along it has one cell as large as level 0's extent.

    Raises
    ------
    HurrayValueError, HurrayTypeError
        When the tree has no overviews, or neither ``size`` nor ``resolution`` is given,
        they are not mappings of dimensions to positive numbers, they name dimensions
        the levels lack, or ``resolution`` names one without a 1-D numeric coordinate
        at level 0.
    """
    names = level_names(tree.attrs, tree.children)
    finest = tree.children[names[0]].to_dataset()
    size, resolution = _checked_wants(size, resolution, finest.sizes)
    extents: dict[Hashable, float] = {}
    for dim in resolution:
        spacing = _spacing(finest, str(dim))
        if spacing is None:
            raise HurrayValueError(
                f"resolution along {dim!r} needs a 1-D numeric coordinate {dim!r} of at "
                "least two cells at level 0; choose the level by size instead"
            )
        extents[dim] = spacing * finest.sizes[dim]
    for name in reversed(names):  # coarsest first
        level = tree.children[name].to_dataset()
        if not all(level.sizes.get(d, 0) >= n for d, n in size.items()):
            continue
        cells = {d: _spacing(level, str(d)) for d in resolution}
        if all(
            (extents[d] if cell is None else cell) <= resolution[d] * (1 + 1e-9)
            for d, cell in cells.items()
        ):
            return name
    return names[0]
