"""Resampling kernels of overviews: numpy blocks whose axes ``axes`` are cut in
windows of ``factor`` cells, each window reduced to one cell (see
:mod:`.overviews` for what each resampling means).  Numpy alone: the levels are
computed block by block by :mod:`.overview_build`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

FOLD_VIEWS = 64
"""Most cells of a window that :func:`_reduce` folds view by view; a window of more
is reduced over split axes.  Folding one strided view per cell is faster for small
windows, but costs a pass over the block per cell, which grows as the factor
squared: on a 2048 x 2048 block, factor 2 folds 6 to 8 times faster than the
reduction, factor 8 about as fast, factor 16 2 to 3 times slower, factor 256 240
times slower (``benchmarks/overviews.py --kernels``, docs/benchmarks-archive.md)."""


def window_sides(shape: Sequence[int], axes: Sequence[int], factor: int) -> dict[int, int]:
    """The side of a window along each of ``axes`` of a block of ``shape``: ``factor``,
    or the axis's length where one window holds the whole axis (a factor larger than
    the block then pads nothing: the one window is the cells there are)."""
    return {k: factor if shape[k] > factor else max(shape[k], 1) for k in axes}


def _padded(block: np.ndarray, sides: Mapping[int, int], pad: Any) -> np.ndarray:
    """``block`` padded at the end of the axes of ``sides`` with ``pad`` to whole
    windows."""
    widths = [(0, -n % sides[k] if k in sides else 0) for k, n in enumerate(block.shape)]
    return np.pad(block, widths, constant_values=pad) if any(w for _, w in widths) else block


def _split(
    block: np.ndarray, sides: Mapping[int, int], pad: Any
) -> tuple[np.ndarray, tuple[int, ...]]:
    """``block`` padded with ``pad`` to whole windows of ``sides``, each of their axes
    split in two (windows, cells of a window; a view of the padded block), and the
    positions of the window cells' axes."""
    block = _padded(block, sides, pad)
    shape: list[int] = []
    cells: list[int] = []
    for k, n in enumerate(block.shape):
        if k in sides:
            cells.append(len(shape) + 1)
            shape += [n // sides[k], sides[k]]
        else:
            shape.append(n)
    return block.reshape(shape), tuple(cells)


def _fold(block: np.ndarray, sides: Mapping[int, int], pad: Any, how: np.ufunc) -> np.ndarray:
    """The binary ufunc ``how`` folded over the cells of each window of ``block``
    (padded with ``pad``): one strided view per cell of a window, combined in turn."""
    block = _padded(block, sides, pad)
    axes = list(sides)
    out: np.ndarray | None = None
    for offsets in np.ndindex(*(sides[k] for k in axes)):
        starts = dict(zip(axes, offsets, strict=True))
        view = block[
            tuple(
                slice(starts[k], None, sides[k]) if k in starts else slice(None)
                for k in range(block.ndim)
            )
        ]
        out = view.copy() if out is None else how(out, view, out=out)
    assert out is not None  # a window has at least one cell
    return out


def _reduce(
    block: np.ndarray, axes: Sequence[int], factor: int, pad: Any, how: np.ufunc
) -> np.ndarray:
    """The reduction by the binary ufunc ``how`` (associative and commutative) of the
    cells of each window of ``block``, padded with ``pad``: folded view by view for
    windows of at most :data:`FOLD_VIEWS` cells, else over the split axes."""
    sides = window_sides(block.shape, axes, factor)
    if math.prod(sides.values()) <= FOLD_VIEWS:
        return _fold(block, sides, pad, how)
    split, cells = _split(block, sides, pad)
    return np.asarray(how.reduce(split, axis=cells))


def _windows(block: np.ndarray, axes: Sequence[int], factor: int, pad: Any) -> np.ndarray:
    """``block`` as :func:`_split` makes it, with the cells of each window on one last
    axis (in row-major order)."""
    split, cells = _split(block, window_sides(block.shape, axes, factor), pad)
    moved = np.moveaxis(split, cells, range(-len(cells), 0))
    return moved.reshape(*moved.shape[: moved.ndim - len(cells)], -1)


def mean_dtype(dtype: np.dtype) -> np.dtype:
    """The element type of the means of values of ``dtype``."""
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def mean_of(sums: np.ndarray, counts: np.ndarray, dtype: np.dtype, empty: Any) -> np.ndarray:
    """The means of cells from their sums and counts of valid cells: NaN, or ``empty``,
    where there is none."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.asarray(sums / counts, dtype=dtype)
    if empty is not None:
        out[counts == 0] = empty
    return out


def sum_dtype(dtype: np.dtype) -> np.dtype:
    """The element type the sums of a mean of values of ``dtype`` are carried in:
    complex128 for complex values (both parts averaged), float64 for the others."""
    return np.dtype(np.complex128 if dtype.kind == "c" else np.float64)


def _missing_cells(values: np.ndarray, fill: Any) -> np.ndarray:
    missing = np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.shape, bool)
    if fill is not None:
        missing |= values == fill
    return missing


def valid_totals(
    block: np.ndarray, axes: Sequence[int], factor: int, fill: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The sum of the valid cells of each window, in :func:`sum_dtype`, and their
    number (int64), the missing cells found once for both."""
    missing = _missing_cells(block, fill)
    # one pass: the values in the sums' type, zero where missing
    values = np.where(missing, sum_dtype(block.dtype).type(0), block)
    sums = _reduce(values, axes, factor, 0, np.add)
    # counted in the smallest unsigned type that holds a window's cells (exact
    # either way), which moves an eighth of the bytes of int64 for small windows
    cells = math.prod(window_sides(block.shape, axes, factor).values())
    kind = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if cells < np.iinfo(t).max)
    valid = np.logical_not(missing).view(np.uint8).astype(kind, copy=False)
    counts = _reduce(valid, axes, factor, 0, np.add).astype(np.int64)
    return sums, counts


def window_total(block: np.ndarray, axes: Sequence[int], factor: int, fill: Any) -> np.ndarray:
    """The sum of each window (of the sums or counts of the level before)."""
    return _reduce(block, axes, factor, 0, np.add)


def _nearest(block: np.ndarray, axes: Sequence[int], factor: int, fill: Any) -> np.ndarray:
    index = tuple(
        slice(None, None, factor) if k in axes else slice(None) for k in range(block.ndim)
    )
    return block[index]


def _missing_value(dtype: np.dtype, fill: Any) -> Any:
    """What a window without a valid cell holds: the fill value, else NaN (floats) or
    zero."""
    if fill is not None:
        return fill
    return np.nan if dtype.kind in "fc" else 0


def _extreme(
    block: np.ndarray, axes: Sequence[int], factor: int, fill: Any, largest: bool
) -> np.ndarray:
    missing = _missing_cells(block, fill)
    if block.dtype.kind in "fc":
        neutral: Any = -np.inf if largest else np.inf
    elif block.dtype.kind == "b":
        neutral = not largest
    else:
        info = np.iinfo(block.dtype)
        neutral = info.min if largest else info.max
    values = np.where(missing, neutral, block)
    out = _reduce(values, axes, factor, neutral, np.maximum if largest else np.minimum)
    empty = _reduce(missing, axes, factor, True, np.logical_and)
    out[empty] = _missing_value(block.dtype, fill)
    return np.asarray(out, dtype=block.dtype)


def window_min(block: np.ndarray, axes: Sequence[int], factor: int, fill: Any) -> np.ndarray:
    return _extreme(block, axes, factor, fill, largest=False)


def window_max(block: np.ndarray, axes: Sequence[int], factor: int, fill: Any) -> np.ndarray:
    return _extreme(block, axes, factor, fill, largest=True)


def _mode(block: np.ndarray, axes: Sequence[int], factor: int, fill: Any) -> np.ndarray:
    """The most frequent valid value of each window, the smallest of those as frequent;
    the missing value where a window has no valid cell."""
    missing = _windows(_missing_cells(block, fill), axes, factor, True)
    values = _windows(block, axes, factor, block.reshape(-1)[0] if block.size else 0)
    # sorted by validity, then value: the valid cells first, equal values together
    order = np.lexsort((values, missing), axis=-1)
    values = np.take_along_axis(values, order, axis=-1)
    missing = np.take_along_axis(missing, order, axis=-1)
    width = values.shape[-1]
    position = np.arange(width)
    starts = np.ones(values.shape, bool)
    starts[..., 1:] = values[..., 1:] != values[..., :-1]
    starts[..., 1:] |= missing[..., 1:] != missing[..., :-1]
    # each cell's run starts at the last start at or before it; its run's length so far
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=-1)
    length = np.where(missing, 0, position - first + 1)
    # the first longest run is the one of the smallest value among the most frequent
    best = np.argmax(length, axis=-1)[..., None]
    out = np.take_along_axis(values, best, axis=-1)[..., 0]
    empty = missing[..., 0]  # sorted valid first: no valid cell at all
    if empty.any():
        out = out.copy()
        out[empty] = _missing_value(block.dtype, fill)
    return out


Kernel = Callable[[np.ndarray, Sequence[int], int, Any], np.ndarray]

KERNELS: dict[str, Kernel] = {
    "nearest": _nearest,
    "mode": _mode,
    "min": window_min,
    "max": window_max,
}
"""The kernel of each resampling but ``"mean"``, which carries sums and counts."""
