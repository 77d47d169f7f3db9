"""Boxes to runs of buffer positions.

On both curves an aligned sub-cube (every side ``2**L``, corner a multiple of
it) occupies one contiguous run of the key space.  A box is therefore covered
exactly by descending from the whole cube: sub-cubes inside the box emit their
run, sub-cubes that straddle its edge split into their ``2**r`` children, the
rest are dropped.  The work grows with the box's surface, not its volume.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .errors import LayoutError

CornerKey = Callable[[np.ndarray, int], np.ndarray]
"""Key of the first position of aligned cubes: ``(corners, level) -> uint64 starts``."""


def parse_box(
    lo: Sequence[int], hi: Sequence[int], shape: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a box ``lo <= x < hi`` inside ``shape`` and return it as int64 arrays."""
    lo_a = np.asarray(lo, dtype=np.int64).reshape(-1)
    hi_a = np.asarray(hi, dtype=np.int64).reshape(-1)
    shape_a = np.asarray(shape, dtype=np.int64).reshape(-1)
    if not lo_a.shape == hi_a.shape == shape_a.shape:
        raise LayoutError(
            f"box lo={list(lo_a)} hi={list(hi_a)} does not have the rank of shape {list(shape_a)}"
        )
    if np.any(lo_a < 0) or np.any(hi_a > shape_a) or np.any(lo_a > hi_a):
        raise LayoutError(
            f"box lo={list(lo_a)} hi={list(hi_a)} is not a box inside shape {list(shape_a)}"
        )
    return lo_a, hi_a


def merge_runs(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Sort runs ``[start, stop)`` and merge those that touch or overlap.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(n, 2)``.
    """
    if len(starts) == 0:
        return np.empty((0, 2), dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    starts = np.asarray(starts, dtype=np.int64)[order]
    stops = np.maximum.accumulate(np.asarray(stops, dtype=np.int64)[order])
    new_run = np.empty(len(starts), dtype=bool)
    new_run[0] = True
    new_run[1:] = starts[1:] > stops[:-1]
    first = np.flatnonzero(new_run)
    last = np.append(first[1:] - 1, len(starts) - 1)
    return np.stack([starts[first], stops[last]], axis=1)


def curve_box_runs(
    lo: np.ndarray, hi: np.ndarray, bits: Sequence[int], corner_key: CornerKey
) -> np.ndarray:
    """Merged runs of curve keys covering the box ``lo <= x < hi``.

    Parameters
    ----------
    lo, hi
        The box, int64 arrays of length ``rank``.
    bits
        Bits per dimension of the curve's key space.
    corner_key
        Returns the first key of aligned cubes given their corners and level.
    """
    rank = len(bits)
    bits_a = np.asarray(bits, dtype=np.int64)
    if np.any(hi <= lo):
        return np.empty((0, 2), dtype=np.int64)
    level = int(bits_a.max(initial=0))
    corners = np.zeros((1, rank), dtype=np.int64)
    starts, stops = [], []
    while len(corners):
        side = np.int64(1) << np.minimum(level, bits_a)
        ends = corners + side
        inside = np.all((corners >= lo) & (ends <= hi), axis=1)
        if inside.any():
            first = corner_key(corners[inside], level).astype(np.int64)
            starts.append(first)
            stops.append(first + np.int64(np.prod(side)))
        straddle = ~inside & np.all((corners < hi) & (ends > lo), axis=1)
        corners = corners[straddle]
        if level == 0 or not len(corners):
            break
        level -= 1
        split = np.flatnonzero(bits_a > level)
        offsets = np.zeros((1 << len(split), rank), dtype=np.int64)
        for j, d in enumerate(split):
            offsets[:, d] = ((np.arange(1 << len(split)) >> j) & 1) << level
        corners = (corners[:, None, :] + offsets[None]).reshape(-1, rank)
    if not starts:
        return np.empty((0, 2), dtype=np.int64)
    return merge_runs(np.concatenate(starts), np.concatenate(stops))


def row_major_box_runs(lo: np.ndarray, hi: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Merged runs of row-major positions covering the box ``lo <= x < hi``."""
    shape_a = np.asarray(shape, dtype=np.int64)
    if np.any(hi <= lo):
        return np.empty((0, 2), dtype=np.int64)
    rank = len(shape_a)
    if rank == 0:
        return np.array([[0, 1]], dtype=np.int64)
    strides = np.ones(rank, dtype=np.int64)
    strides[:-1] = np.cumprod(shape_a[::-1])[::-1][1:]
    # The run axis: the last axis the box does not span fully (trailing full
    # axes extend each run).
    full = (lo == 0) & (hi == shape_a)
    axis = rank - 1
    while axis > 0 and full[axis]:
        axis -= 1
    length = (hi[axis] - lo[axis]) * strides[axis]
    outer = [np.arange(lo[d], hi[d]) * strides[d] for d in range(axis)]
    base = lo[axis] * strides[axis]
    starts = base + sum(np.ix_(*outer)).reshape(-1) if outer else np.array([base])
    return merge_runs(starts, starts + length)
