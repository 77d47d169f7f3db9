"""Computing the coarser levels of a pyramid: :func:`build_levels`.

Every level is computed from the level below it, block by block: a block of level 0
whose sides along the coarsened dimensions are whole windows of the coarsest level
it serves gives the cells of every coarser level it covers, one level from the other
(:func:`chain`), and nothing larger than a block and its coarser parts is ever in
memory at once.  A level's cell is therefore the resampling of the same cells, in the
same order, as a computation over the whole array would make it, and the values do
not depend on the blocks.  Levels whose windows are wider than a block
(:data:`BLOCK_SIDE`) are computed in the same way from the last level the blocks
reached, in blocks of that level.

Levels are computed by one pass of tasks over the blocks of level 0, each task
assigning its block's cells of every level to the levels' arrays and keeping nothing
(:func:`stored`): arrays in memory for a variable in memory, the files a write
stores them in for a dask-backed one.  Without such files (a pyramid nothing
writes), a dask-backed variable's levels stay lazy: each is a dask array whose
blocks are picked from the one task per block of level 0 that computes them all
(:func:`coarsened`).  CF bounds are coarsened whole (they are one-dimensional).
"""

from __future__ import annotations

import contextlib
import math
import os
import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import numpy as np
import xarray as xr
from dask.highlevelgraph import HighLevelGraph

from .overview_chunks import level_chunks, level_encoding, tiled
from .overview_plan import bounds_of
from .pyramid import Pyramid
from .resampling import (
    KERNELS,
    mean_dtype,
    mean_of,
    sum_dtype,
    valid_totals,
    window_max,
    window_min,
    window_total,
)

BLOCK_SIDE = 1024
"""Cells along each coarsened dimension of the blocks levels are computed in where
the blocks of the source do not start on windows (and of an array in memory): a
1024 x 1024 float32 block of level 0 is 4 MiB, and the sums and counts of a mean
take about 6 times that while the block is coarsened."""

CELL_METHODS = {"mean": "mean", "nearest": "point", "mode": "mode", "min": "minimum"}
CELL_METHODS |= {"max": "maximum"}
"""The CF ``cell_methods`` method of each resampling."""

State = tuple[np.ndarray, ...]
"""A block of one level as the next level is made from it: its values, or, for a
``"mean"`` past level 0, the sums and the counts of the valid cells of level 0 that
each of its cells covers."""


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


@dataclass(frozen=True)
class Coarsening:
    """How one variable is coarsened from level to level.

    Attributes
    ----------
    axes
        The positions of the pyramid's dimensions among the variable's.
    method
        Its resampling.
    fill
        The value marking a missing cell of level 0 besides NaN (:func:`fill_of`).
    empty
        What a mean holds where a window has no valid cell (:func:`empty_mean`).
    dtype
        The element type of the levels' values.
    """

    axes: tuple[int, ...]
    method: str
    fill: Any
    empty: Any
    dtype: np.dtype

    @classmethod
    def of(cls, var: xr.Variable, dims: Sequence[str], method: str) -> Coarsening:
        """The coarsening of ``var`` (level 0's) along ``dims`` by ``method``."""
        axes = tuple(k for k, d in enumerate(var.dims) if d in dims)
        dtype = mean_dtype(var.dtype) if method == "mean" else var.dtype
        return cls(axes, method, fill_of(var), empty_mean(var), np.dtype(dtype))

    def next_state(self, state: State, step: int, first: bool) -> State:
        """The next level's block, by windows of ``step``, of ``state`` (``first``:
        level 0's values)."""
        if self.method != "mean":
            return (KERNELS[self.method](state[0], self.axes, step, self.fill),)
        if first:  # the valid cells of level 0
            return valid_totals(state[0], self.axes, step, self.fill)
        # the sums and counts of the level before, summed again
        return tuple(window_total(part, self.axes, step, None) for part in state)

    def state_dtypes(self) -> list[np.dtype]:
        """The element types of a :data:`State` past level 0."""
        if self.method != "mean":
            return [self.dtype]
        return [sum_dtype(self.dtype), np.dtype(np.int64)]

    def values(self, state: State) -> np.ndarray:
        """The values of a level's block (past level 0)."""
        if self.method != "mean":
            return state[0]
        return mean_of(state[0], state[1], self.dtype, self.empty)


def chain(
    state: State, coarsening: Coarsening, steps: Sequence[int], first: bool
) -> tuple[list[np.ndarray], State]:
    """The values of the levels of one block, each by windows of its step of ``steps``
    from the one before, and the state of the last: the block ``state`` starts on a
    window of the coarsest along the coarsened axes, and its sides are whole windows
    of it but for the last block along an axis (``first``: it is level 0's)."""
    values = []
    for step in steps:
        state = coarsening.next_state(state, step, first)
        first = False
        values.append(coarsening.values(state))
    return values, state


def _chain_block(
    *blocks: np.ndarray, coarsening: Coarsening, steps: tuple[int, ...], first: bool
) -> tuple[list[np.ndarray], State]:
    return chain(tuple(blocks), coarsening, steps, first)


def _pick(result: tuple[list[np.ndarray], State], part: int, index: int) -> np.ndarray:
    """One array of a :func:`chain`'s result: a level's values (``part`` 0) or a part
    of the last state (1)."""
    return result[part][index]


class _Blocks:
    """An array in memory as dask reads its blocks: ``da.from_array`` of a numpy array
    copies it whole first (dask 2026.11), which a block-by-block pass exists to avoid."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.shape = values.shape
        self.dtype = values.dtype
        self.ndim = values.ndim

    def __getitem__(self, key: Any) -> np.ndarray:
        return np.asarray(self.values[key])


def _on_windows(chunks: tuple[int, ...], factor: int) -> bool:
    """Whether blocks of ``chunks`` along an axis start on windows of ``factor``."""
    return all(c % factor == 0 for c in chunks[:-1])


def stage_length(steps: Sequence[int]) -> int:
    """How many of ``steps`` one pass over blocks computes: those whose product stays
    within :data:`BLOCK_SIDE` (at least one)."""
    count = 1
    while count < len(steps) and math.prod(steps[: count + 1]) <= BLOCK_SIDE:
        count += 1
    return count


def block_chunks(shape: Sequence[int], axes: Sequence[int], factor: int) -> tuple[int, ...]:
    """The blocks an array in memory of ``shape`` is coarsened in: sides of whole
    windows of ``factor`` along ``axes`` (about :data:`BLOCK_SIDE`), and along the
    other axes as many cells as keep a block within :data:`BLOCK_SIDE` squared."""
    side = max(factor, BLOCK_SIDE // factor * factor)
    chunks = [min(side, n) if k in axes else n for k, n in enumerate(shape)]
    budget = max(BLOCK_SIDE**2 // max(math.prod(chunks[k] for k in axes), 1), 1)
    for k in reversed(range(len(shape))):
        if k not in axes:
            chunks[k] = max(min(shape[k], budget), 1)
            budget = max(budget // chunks[k], 1)
    return tuple(chunks)


def _aligned(data: da.Array, axes: Sequence[int], factor: int) -> da.Array:
    """``data`` in blocks that start on windows of ``factor`` along ``axes``: its own
    where they do, else blocks of about :data:`BLOCK_SIDE` whole windows."""
    side = max(factor, BLOCK_SIDE // factor * factor)
    off = {k: min(side, data.shape[k]) for k in axes if not _on_windows(data.chunks[k], factor)}
    return data.rechunk(off) if off else data


def _stage(
    inputs: Sequence[da.Array], coarsening: Coarsening, steps: tuple[int, ...], first: bool
) -> tuple[list[da.Array], tuple[da.Array, ...]]:
    """The levels of ``steps`` from ``inputs`` (the state of a level, in blocks on
    windows of their product), and the state of the last: one task per block runs
    :func:`chain`, and each level's blocks and the state's are picked from it."""
    ndim = inputs[0].ndim
    chained = da.map_blocks(
        _chain_block, *inputs, coarsening=coarsening, steps=steps, first=first,
        dtype=object, meta=np.empty((0,) * ndim, object),
    )  # fmt: skip
    axes = coarsening.axes

    def picked(part: int, index: int, factor: int, dtype: np.dtype) -> da.Array:
        name = f"coarsened-{part}-{index}-{chained.name}"
        layer: dict[Any, Any] = {
            (name, *block): (_pick, (chained.name, *block), part, index)
            for block in np.ndindex(*chained.numblocks)
        }
        chunks = _coarse_chunks(chained.chunks, axes, factor)
        graph = HighLevelGraph.from_collections(name, layer, dependencies=[chained])
        return da.Array(graph, name, chunks, meta=np.empty((0,) * ndim, dtype))

    factors = [math.prod(steps[: j + 1]) for j in range(len(steps))]
    levels = [picked(0, j, f, coarsening.dtype) for j, f in enumerate(factors)]
    kinds = coarsening.state_dtypes()
    state = tuple(picked(1, p, factors[-1], kind) for p, kind in enumerate(kinds))
    return levels, state


def _level_0(data: Any, axes: Sequence[int], factor: int) -> da.Array:
    """Level 0's values (dask, or an array in memory) in blocks on windows of
    ``factor``."""
    if isinstance(data, da.Array):
        return _aligned(data, axes, factor)
    return _wrapped(np.asarray(data), block_chunks(np.shape(data), axes, factor))


def _wrapped(values: Any, chunks: Sequence[Any]) -> da.Array:
    """``values`` (an array in memory, or a target of :func:`stored`) as a dask array
    of ``chunks``, read a block at a time."""
    wrapped: da.Array = da.from_array(
        _Blocks(values), chunks=tuple(chunks), name=f"level-{uuid.uuid4().hex}",
        asarray=False, meta=np.empty((0,) * len(values.shape), values.dtype),
    )  # fmt: skip
    return wrapped


def coarsened(data: Any, coarsening: Coarsening, steps: Sequence[int]) -> list[da.Array]:
    """The values of the coarser levels of ``data`` (level 0's: dask, or an array in
    memory), each by windows of its step of ``steps`` from the one before, as lazy
    dask arrays: one pass over the blocks of level 0 computes every level whose
    windows fit in a block, the next pass starts from the last of them."""
    steps = list(steps)
    state: tuple[da.Array, ...] = (
        _level_0(data, coarsening.axes, math.prod(steps[: stage_length(steps)])),
    )
    levels: list[da.Array] = []
    first = True
    while steps:
        count = stage_length(steps)
        stage, steps = tuple(steps[:count]), steps[count:]
        factor = math.prod(stage)
        state = tuple(_aligned(part, coarsening.axes, factor) for part in state)
        found, state = _stage(state, coarsening, stage, first)
        levels += found
        first = False
    return levels


Target = Callable[[tuple[int, ...], np.dtype], Any]
"""What makes an array a level is stored in as it is computed, of a shape and an
element type: an array in memory, or a file (anything numpy assigns blocks into)."""


def _coarse_chunks(
    chunks: tuple[tuple[int, ...], ...], axes: Sequence[int], factor: int
) -> tuple[tuple[int, ...], ...]:
    """The blocks of a level ``factor`` times coarser along ``axes`` than blocks of
    ``chunks`` that start on its windows."""
    return tuple(
        tuple(-(-c // factor) for c in sizes) if k in axes else sizes
        for k, sizes in enumerate(chunks)
    )


def _chain_into(
    *blocks: np.ndarray,
    coarsening: Coarsening,
    steps: tuple[int, ...],
    first: bool,
    targets: Sequence[Any],
    block_info: Any = None,
) -> np.ndarray:
    """Run :func:`chain` on one block and assign its levels' values, then its last
    state where ``targets`` go on, to their places in ``targets``: nothing of the
    block outlives its task."""
    values, state = chain(tuple(blocks), coarsening, steps, first)
    factors = [math.prod(steps[: j + 1]) for j in range(len(steps))]
    parts = [*zip(values, factors, strict=True), *((part, factors[-1]) for part in state)]
    start = [begin for begin, _ in block_info[0]["array-location"]]
    for target, (part, factor) in zip(targets, parts, strict=False):
        target[
            tuple(
                slice(b // factor, b // factor + n) if k in coarsening.axes else slice(b, b + n)
                for k, (b, n) in enumerate(zip(start, part.shape, strict=True))
            )
        ] = part
    return np.zeros((1,) * len(start), np.int8)


def stored(
    data: Any,
    coarsening: Coarsening,
    steps: Sequence[int],
    target: Target,
    pool: Executor | None = None,
) -> list[tuple[Any, tuple[tuple[int, ...], ...]]]:
    """The coarser levels of ``data`` (level 0's: dask, or an array in memory), each
    by windows of its step of ``steps`` from the one before, computed into arrays
    ``target`` makes, and the blocks each was computed in: the tasks of a pass over
    the blocks of level 0 (on ``scheduler``, by default dask's) each assign the
    levels of their block (:func:`_chain_into`); the state of the last level a pass
    reaches is stored too where another pass goes on from it."""
    steps = list(steps)
    state: tuple[da.Array, ...] = (
        _level_0(data, coarsening.axes, math.prod(steps[: stage_length(steps)])),
    )
    levels: list[tuple[Any, tuple[tuple[int, ...], ...]]] = []
    first = True
    while steps:
        count = stage_length(steps)
        stage, steps = tuple(steps[:count]), steps[count:]
        factors = [math.prod(stage[: j + 1]) for j in range(count)]
        state = tuple(_aligned(part, coarsening.axes, factors[-1]) for part in state)
        chunks = [_coarse_chunks(state[0].chunks, coarsening.axes, f) for f in factors]
        targets = [target(tuple(map(sum, sizes)), coarsening.dtype) for sizes in chunks]
        carried = (
            [target(tuple(map(sum, chunks[-1])), kind) for kind in coarsening.state_dtypes()]
            if steps
            else []
        )
        done = da.map_blocks(
            _chain_into, *state, coarsening=coarsening, steps=stage, first=first,
            targets=[*targets, *carried], name=f"coarsen-{uuid.uuid4().hex}",
            chunks=tuple((1,) * len(sizes) for sizes in state[0].chunks), dtype=np.int8,
            meta=np.empty((0,) * state[0].ndim, np.int8),
        )  # fmt: skip
        if pool is None:
            done.compute()
        else:
            done.compute(scheduler="threads", pool=pool)
        levels += zip(targets, chunks, strict=True)
        state = tuple(_wrapped(part, chunks[-1]) for part in carried)
        first = False
    return levels


def bounds_levels(
    bounds: np.ndarray, axis: int, steps: Sequence[int], increasing: bool
) -> list[np.ndarray]:
    """CF bounds (last axis: the two edges of each cell) at each coarser level, by
    windows of its step of ``steps`` along ``axis`` from the one before: the outermost
    edges of the cells of each window, in the order the coordinate runs."""
    levels = []
    for step in steps:
        low = np.minimum(bounds[..., 0], bounds[..., 1])
        high = np.maximum(bounds[..., 0], bounds[..., 1])
        low = window_min(low, [axis], step, None)
        high = window_max(high, [axis], step, None)
        bounds = np.stack([low, high] if increasing else [high, low], axis=-1)
        levels.append(bounds)
    return levels


def level_steps(factors: Sequence[int]) -> list[int]:
    """The factor of each level against the level before it."""
    return [f // p for f, p in zip(factors, (1, *factors), strict=False)]


def _cell_methods(attrs: Mapping[str, Any], dims: Sequence[str], method: str) -> str:
    """``cell_methods`` with the resampling of a level added (CF's syntax)."""
    added = " ".join(f"{d}:" for d in dims) + f" {CELL_METHODS[method]}"
    previous = attrs.get("cell_methods")
    return f"{previous} {added}" if isinstance(previous, str) and previous else added


def build_levels(
    ds: xr.Dataset, pyramid: Pyramid, target: Target | None = None
) -> list[xr.Dataset]:
    """The levels of ``pyramid`` made of ``ds``, level 0 (``ds`` in
    :func:`~.overview_chunks.tiled` chunks) first, each with the attributes of ``ds``
    (:func:`~.overviews.pyramid_tree` adds what each level is).

    Variables in memory are computed into arrays in memory, block by block
    (:func:`stored`).  Dask-backed ones stay lazy (:func:`coarsened`), or, with a
    ``target``, are computed into the arrays it makes, one pass over level 0 for
    every level, and read back from there lazily: no coarser level is then computed
    from another, or from level 0, as they are written.
    """
    ds = tiled(ds, pyramid.dims)
    bounds = bounds_of(ds, pyramid.dims)
    steps = level_steps(pyramid.factors)
    coarse: dict[Hashable, list[Any]] = {}
    files: set[Hashable] = set()  # levels in the targets, with the blocks of each
    pool: Executor | None = None  # for arrays in memory
    with contextlib.ExitStack() as stack:
        for name, var in ds.variables.items():
            if name in bounds:
                coordinate = ds.variables[bounds[name]]
                increasing = bool(
                    coordinate.size < 2 or coordinate.values[-1] >= coordinate.values[0]
                )
                axis = next(k for k, d in enumerate(var.dims) if d in pyramid.dims)
                coarse[name] = bounds_levels(np.asarray(var.values), axis, steps, increasing)
            elif str(name) in pyramid.resampling:
                coarsening = Coarsening.of(var, pyramid.dims, pyramid.resampling[str(name)])
                if not isinstance(var.data, da.Array):
                    if pool is None:  # threads of its own, ended with the build
                        threads = int(dask.config.get("num_workers", None) or os.cpu_count() or 1)
                        pool = stack.enter_context(ThreadPoolExecutor(threads))
                    found = stored(var.data, coarsening, steps, np.empty, pool)
                    coarse[name] = [values for values, _ in found]
                elif target is None:
                    coarse[name] = coarsened(var.data, coarsening, steps)
                else:
                    coarse[name] = stored(var.data, coarsening, steps, target)
                    files.add(name)

    levels: list[xr.Dataset] = [ds]
    for number in range(1, len(pyramid.factors) + 1):
        variables: dict[Hashable, xr.Variable] = {}
        for name, var in ds.variables.items():
            if name not in coarse:
                variables[name] = var  # nothing to coarsen: the same at every level
                continue
            data = coarse[name][number - 1]
            chunks = level_chunks(var, data[0].shape if name in files else data.shape, pyramid.dims)
            if name in files:  # read a stored chunk at a time, else as computed
                data = _wrapped(data[0], data[1] if chunks is None else chunks)
            elif isinstance(data, da.Array) and chunks is not None:
                data = data.rechunk(chunks)
            method = "min/max" if name in bounds else pyramid.resampling[str(name)]
            dtype = mean_dtype(var.dtype) if method == "mean" else var.dtype
            attrs = dict(var.attrs)
            if name in ds.data_vars and method in CELL_METHODS:
                attrs["cell_methods"] = _cell_methods(
                    attrs, [d for d in var.dims if d in pyramid.dims], method
                )
            variables[name] = xr.Variable(
                var.dims, data, attrs, level_encoding(var, chunks, np.dtype(dtype))
            )
        level = xr.Dataset(variables, attrs=ds.attrs)
        level = level.set_coords([n for n in ds.coords if n in level.variables])
        levels.append(level)
    return levels
