"""Overviews: a pyramid of coarser levels of a dataset, as a DataTree of groups
``"0"`` (the dataset itself), ``"1"``, ``"2"``... described by the Zarr
``multiscales`` convention (v0.1) in the root's attributes.

Level ``k`` coarsens the pyramid's dimensions by its factor ``F[k]`` (``F[0] = 1``):
its cell ``i`` covers the cells ``[i * F[k], (i + 1) * F[k])`` of level 0 along each of
them, and there are ``ceil(n / F[k])`` cells, so that the last one holds the cells
left over (as GDAL sizes overviews).  Each level is computed from the previous one,
block by block in the same dask graph, and equals the resampling of level 0 over its
windows:

- ``"mean"``: the mean of the valid cells (not NaN, not the fill value; NaN, or the
  fill value, where a window has none), carried from level to level as a sum and a
  count, so that a level is the mean over its whole window whatever the levels
  between (GDAL's ``average``, which ignores nodata);
- ``"min"``, ``"max"``: of the valid cells;
- ``"nearest"``: the first cell of the window (the one holding its lowest corner),
  valid or not;
- ``"mode"``: the most frequent valid value of the previous level's window, the
  smallest of those as frequent (as GDAL's ``mode`` builds each overview from the
  one before).

Coordinates along the pyramid's dimensions are coarsened by ``"mean"`` (the centre
of the cells a coarse cell holds), and CF cell bounds (the ``bounds`` attribute) by
the outermost edges of those cells; variables without the pyramid's dimensions are
the same at every level.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from ..errors import HurrayTypeError, HurrayValueError
from ..zarr.conventions import convention_attrs
from .encoding import auto_chunks, default_chunk_axes
from .resampling import (
    KERNELS,
    coarsen_blocks,
    valid_count,
    valid_sum,
    window_max,
    window_min,
    window_total,
)

RESAMPLINGS = ("mean", "nearest", "mode", "min", "max")
"""The values of ``resampling``."""

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
        "https://raw.githubusercontent.com/zarr-conventions/multiscales/refs/tags/v0.1.0/"
        "schema.json"
    ),
    "spec_url": "https://github.com/zarr-conventions/multiscales/blob/v0.1.0/README.md",
    "name": "multiscales",
    "description": "Multiscale layout of zarr datasets",
}
"""The entry of the ``multiscales`` convention in a group's ``zarr_conventions``."""

PYRAMID_ATTR = "hurray_overviews"
"""The root attribute (JSON text) recording how the levels were made, so that an
append extends each of them in the same way: ``dims``, ``factors``, ``resampling``."""

LEVEL_ATTRS = ("overview_level", "overview_factor", "overview_dims")
"""The attributes of each level's group saying what it is."""


@dataclass(frozen=True)
class Pyramid:
    """How the levels of a pyramid are made.

    Attributes
    ----------
    dims
        The dimensions coarsened.
    factors
        The factor of each coarser level against level 0, increasing, each a multiple
        of the one before.
    resampling
        The resampling of each variable along ``dims`` (coordinates and bounds too).
    """

    dims: tuple[str, ...]
    factors: tuple[int, ...]
    resampling: Mapping[str, str]

    def record(self) -> str:
        """The JSON text of :data:`PYRAMID_ATTR`."""
        return json.dumps(
            {
                "dims": list(self.dims),
                "factors": list(self.factors),
                "resampling": dict(self.resampling),
            },
            sort_keys=True,
        )

    @classmethod
    def from_record(cls, text: str) -> Pyramid:
        """The pyramid recorded by :meth:`record`.

        Raises
        ------
        ValueError
            When ``text`` is not such a record.
        """
        try:
            value = json.loads(text)
            return cls(
                dims=tuple(str(d) for d in value["dims"]),
                factors=tuple(int(f) for f in value["factors"]),
                resampling={str(k): str(v) for k, v in value["resampling"].items()},
            )
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise HurrayValueError(
                f"the attribute {PYRAMID_ATTR!r} is not a record of overviews: {err}"
            ) from err


def level_factors(overviews: int | Sequence[int]) -> tuple[int, ...]:
    """The factors of the coarser levels: ``N`` gives ``2, 4, ..., 2**N``; a sequence is
    taken as it is, once checked.

    Raises
    ------
    ValueError, TypeError
        For a number of levels below 1, or factors that are not integers of at least 2
        each a multiple of the one before.
    """
    if isinstance(overviews, bool):
        raise HurrayTypeError(f"overviews must be a number of levels or factors, got {overviews}")
    if isinstance(overviews, int | np.integer):
        if overviews < 1:
            raise HurrayValueError(f"overviews must be at least 1 level, got {overviews}")
        return tuple(2**k for k in range(1, int(overviews) + 1))
    factors = tuple(overviews)
    if not factors or not all(isinstance(f, int | np.integer) for f in factors):
        raise HurrayTypeError(
            f"overviews must be a number of levels or integer factors, got {factors}"
        )
    previous = 1
    for factor in factors:
        if factor <= previous or factor % previous:
            raise HurrayValueError(
                f"overview factors {list(factors)} must increase from 2, each a multiple of "
                "the one before (each level is made from the previous one)"
            )
        previous = int(factor)
    return tuple(int(f) for f in factors)


def _stored_chunks(var: xr.Variable) -> tuple[int, ...]:
    """The chunks ``to_hurray`` would store ``var`` in: its encoding's, its dask
    chunks, or those of :func:`~.encoding.auto_chunks`."""
    chunks = var.encoding.get("chunks")
    if chunks is not None and len(chunks) == var.ndim:
        return tuple(int(c) for c in chunks)
    if var.chunks is not None:
        return tuple(int(c[0]) for c in var.chunks)
    return auto_chunks(var.shape, max(var.dtype.itemsize, 1))


def default_dims(ds: xr.Dataset) -> tuple[str, ...]:
    """The dimensions the chunk curves of the data variables run over (see
    :func:`~.encoding.default_chunk_axes`): those a pyramid coarsens by default."""
    dims: list[str] = []
    for var in ds.data_vars.values():
        axes = default_chunk_axes(var.shape, _stored_chunks(var.variable))
        dims += [str(var.dims[k]) for k in axes if var.dims[k] not in dims]
    return tuple(dims)


def _flags(var: xr.Variable) -> bool:
    return any(key in var.attrs for key in ("flag_values", "flag_masks", "flag_meanings"))


def default_resampling(var: xr.Variable) -> str:
    """The resampling that keeps the meaning of ``var``: ``"mode"`` for integers,
    booleans and flags (CF ``flag_values``, ``flag_masks``, ``flag_meanings``),
    ``"nearest"`` for anything not a number (times, text), ``"mean"`` for the rest
    (continuous fields)."""
    if var.dtype.kind not in "biufc":
        return "nearest"
    if var.dtype.kind in "biu" or _flags(var):
        return "mode"
    return "mean"


def fill_of(var: xr.Variable) -> Any:
    """The value that marks a missing cell of ``var`` besides NaN, or None: its
    ``_FillValue`` or ``missing_value`` attribute (values not decoded), else for
    integers that of its encoding (decoded floats mark theirs NaN)."""
    if var.dtype.kind not in "biuf":
        return None
    for source in (var.attrs, var.encoding if var.dtype.kind in "biu" else {}):
        for key in ("_FillValue", "missing_value"):
            value = source.get(key)
            if value is not None and np.ndim(value) == 0:
                return value
    return None


@dataclass
class _Level:
    """A variable at one level: its values, or for ``"mean"`` the sums and counts its
    values are the quotient of."""

    values: Any
    sums: Any = None
    counts: Any = None


def mean_of(sums: np.ndarray, counts: np.ndarray, dtype: np.dtype, fill: Any) -> np.ndarray:
    """The means of cells from their sums and counts of valid cells: NaN, or ``fill``,
    where there is none."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.asarray(sums / counts, dtype=dtype)
    if fill is not None:
        out[counts == 0] = fill
    return out


def _mean_values(sums: Any, counts: Any, dtype: np.dtype, fill: Any) -> Any:
    if isinstance(sums, da.Array):
        return da.map_blocks(
            mean_of, sums, counts, dtype, fill, dtype=dtype, meta=np.array((), dtype)
        )
    return mean_of(np.asarray(sums), np.asarray(counts), dtype, fill)


def mean_dtype(dtype: np.dtype) -> np.dtype:
    """The element type of the means of values of ``dtype``."""
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _next_level(
    previous: _Level, axes: Sequence[int], factor: int, method: str, fill: Any, dtype: np.dtype
) -> _Level:
    """The variable at the next level, from ``previous`` by windows of ``factor``."""
    if method != "mean":
        return _Level(coarsen_blocks(previous.values, axes, factor, KERNELS[method], fill, dtype))
    if previous.sums is None:  # from level 0: the valid cells
        sums = coarsen_blocks(previous.values, axes, factor, valid_sum, fill, np.dtype(np.float64))
        counts = coarsen_blocks(
            previous.values, axes, factor, valid_count, fill, np.dtype(np.int64)
        )
    else:  # the sums and counts of the level before, summed again
        sums = coarsen_blocks(previous.sums, axes, factor, window_total, None, np.dtype(np.float64))
        counts = coarsen_blocks(
            previous.counts, axes, factor, window_total, None, np.dtype(np.int64)
        )
    return _Level(_mean_values(sums, counts, mean_dtype(dtype), fill), sums, counts)


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
    ValueError
        For an unknown resampling or variable, or a resampling other than nearest for
        values that are not numbers.
    """
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


def plan_pyramid(
    ds: xr.Dataset,
    overviews: int | Sequence[int],
    dims: Sequence[Hashable] | None = None,
    resampling: str | Mapping[Hashable, str] | None = None,
) -> Pyramid:
    """The pyramid ``multiscale`` makes of ``ds``, checked.

    Raises
    ------
    ValueError, TypeError
        For bad factors, unknown dimensions and resamplings that do not fit.
    """
    factors = level_factors(overviews)
    chosen = tuple(str(d) for d in dims) if dims is not None else default_dims(ds)
    unknown = [d for d in chosen if d not in ds.dims]
    if unknown:
        raise HurrayValueError(
            f"overview dims {unknown} are not dimensions of the dataset {tuple(ds.dims)}"
        )
    if not chosen:
        raise HurrayValueError("overviews need at least one dimension to coarsen")
    return Pyramid(chosen, factors, choose_resampling(ds, chosen, resampling))


def build_levels(ds: xr.Dataset, pyramid: Pyramid) -> list[xr.Dataset]:
    """The levels of ``pyramid`` made of ``ds``, level 0 (``ds``) first; dask-backed
    variables stay lazy, each level a graph on the previous one's."""
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
                states[name] = _next_level(
                    states[name], axes, step, method, fill_of(var), var.dtype
                )
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
    """The stored chunks of a coarser level: those of level 0 cut to the level's shape."""
    if var.chunks is None and "chunks" not in var.encoding:
        return None
    return tuple(max(min(c, n), 1) for c, n in zip(_stored_chunks(var), shape, strict=True))


def level_attrs(
    attrs: Mapping[Hashable, Any], number: int, factor: int, dims: Sequence[str]
) -> dict[Hashable, Any]:
    """The attributes of level ``number``: the dataset's, and what the level is."""
    return {**attrs, **dict(zip(LEVEL_ATTRS, (number, factor, list(dims)), strict=True))}


def multiscales(pyramid: Pyramid) -> dict[str, Any]:
    """The ``multiscales`` object (convention v0.1) of the pyramid's levels: a layout
    entry per level, each derived from the one before, its scale against level 0
    along the pyramid's dimensions (the convention's examples)."""
    methods = {pyramid.resampling.get(name) for name in pyramid.resampling}
    layout: list[dict[str, Any]] = [
        {
            "asset": "0",
            "transform": {
                "scale": [1.0] * len(pyramid.dims),
                "translation": [0.0] * len(pyramid.dims),
            },
        }
    ]
    for number, factor in enumerate(pyramid.factors, start=1):
        layout.append(
            {
                "asset": str(number),
                "derived_from": str(number - 1),
                "transform": {
                    "scale": [float(factor)] * len(pyramid.dims),
                    "translation": [0.0] * len(pyramid.dims),
                },
            }
        )
    value: dict[str, Any] = {"version": "0.1.0", "layout": layout}
    if len(methods) == 1:
        (method,) = methods
        if method is not None:
            value["resampling_method"] = CONVENTION_METHODS[method]
    return value


def pyramid_tree(levels: Sequence[xr.Dataset], pyramid: Pyramid) -> xr.DataTree:
    """The levels as a DataTree: groups ``"0"``, ``"1"``..., the root holding the
    ``multiscales`` convention's attributes and the pyramid's record."""
    root = xr.Dataset(
        attrs={
            "zarr_conventions": [dict(MULTISCALES_CONVENTION)],
            "multiscales": multiscales(pyramid),
            PYRAMID_ATTR: pyramid.record(),
        }
    )
    return xr.DataTree.from_dict({"/": root, **{f"/{k}": level for k, level in enumerate(levels)}})


def multiscale(
    ds: xr.Dataset,
    overviews: int | Sequence[int] = 1,
    *,
    dims: Sequence[Hashable] | None = None,
    resampling: str | Mapping[Hashable, str] | None = None,
) -> xr.DataTree:
    """The pyramid of ``ds``: a DataTree of levels ``"0"`` (``ds``), ``"1"``... each
    coarser by its factor along ``dims``, nothing written.

    Parameters
    ----------
    ds
        The full-resolution dataset.
    overviews
        The number ``N`` of coarser levels (factors 2, 4, ..., ``2**N``), or their
        factors against level 0, increasing, each a multiple of the one before.
    dims
        The dimensions coarsened; by default those the chunk curves of the data
        variables run over (see :func:`~xarray_hurray.xarray.encoding.default_chunk_axes`:
        every dimension but those cut one element per chunk, such as time steps).
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
        variables' ``cell_methods`` how it was made.  Dask-backed variables stay lazy,
        each level computed from the previous one's graph; others are computed.

    Raises
    ------
    ValueError, TypeError
        For bad factors, dimensions the dataset lacks, unknown resamplings or
        resamplings other than ``"nearest"`` for values that are not numbers.
    """
    pyramid = plan_pyramid(ds, overviews, dims, resampling)
    return pyramid_tree(build_levels(ds, pyramid), pyramid)


# -- reading


def level_names(tree: xr.DataTree) -> list[str]:
    """The groups of the levels of the pyramid at the root of ``tree``, finest first
    (the ``multiscales`` layout's assets, as Hurray and Zarr files hold it).

    Raises
    ------
    ValueError
        When the root has no ``multiscales`` layout, or names groups it lacks.
    """
    value = convention_attrs(tree.attrs).get("multiscales")
    layout = value.get("layout") if isinstance(value, Mapping) else None
    if not isinstance(layout, list) or not layout:
        raise HurrayValueError(
            "the tree has no overviews: its root has no 'multiscales' attribute with a layout"
        )
    names = [str(entry.get("asset", "")) for entry in layout if isinstance(entry, Mapping)]
    missing = [n for n in names if n not in tree.children]
    if missing:
        raise HurrayValueError(f"the multiscales layout names levels {missing} the tree lacks")
    return names


def _step(level: xr.Dataset, dim: str) -> float | None:
    """The cell size along ``dim``: its 1-D numeric coordinate's mean spacing."""
    coordinate = level.coords.get(dim)
    if coordinate is None or coordinate.ndim != 1 or coordinate.size < 2:
        return None
    if coordinate.dtype.kind not in "iuf":
        return None
    values = coordinate.values
    return float(abs(values[-1] - values[0]) / (values.size - 1))


def pick_level(
    tree: xr.DataTree,
    size: Mapping[Hashable, int] | None = None,
    resolution: Mapping[Hashable, float] | None = None,
) -> str:
    """The coarsest level that still has at least ``size`` cells along each dimension
    it names (an output of that size), and cells no larger than ``resolution`` (in
    coordinate units) along each it names; level 0 when none is that fine.

    Raises
    ------
    ValueError
        When the tree has no overviews, or neither ``size`` nor ``resolution`` is given
        or they name dimensions the levels lack.
    """
    names = level_names(tree)
    if not size and not resolution:
        raise HurrayValueError("give the wanted size or resolution of the level to pick")
    finest = tree.children[names[0]].to_dataset()
    wanted = {**(size or {}), **(resolution or {})}
    unknown = [d for d in wanted if d not in finest.dims]
    if unknown:
        raise HurrayValueError(
            f"dimensions {unknown} are not dimensions of the levels {tuple(finest.dims)}"
        )
    for name in reversed(names):  # coarsest first
        level = tree.children[name].to_dataset()
        big_enough = all(level.sizes[d] >= n for d, n in (size or {}).items())
        fine_enough = True
        for dim, cell in (resolution or {}).items():
            step = _step(level, str(dim))
            if step is None:
                raise HurrayValueError(
                    f"resolution along {dim!r} needs a 1-D numeric coordinate {dim!r}"
                )
            fine_enough &= step <= cell * (1 + 1e-9)
        if big_enough and fine_enough:
            return name
    return names[0]
