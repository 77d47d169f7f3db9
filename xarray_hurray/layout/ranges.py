"""Boxes to runs of buffer positions.

On both curves an aligned sub-cube (every side ``2**L``, corner a multiple of
it) occupies one contiguous run of the key space.  A box is therefore covered
exactly by descending from the whole cube: sub-cubes inside the box emit their
run, sub-cubes that straddle its edge split into their ``2**r`` children, the
rest are dropped.  The work grows with the box's surface, not its volume.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import reduce

import numpy as np
from numpy.typing import ArrayLike

from ..errors import LayoutError

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
    # lo == hi is an empty box (allowed); lo > hi is a mistake
    if np.any(lo_a < 0) or np.any(hi_a > shape_a) or np.any(lo_a > hi_a):
        raise LayoutError(
            f"box lo={list(lo_a)} hi={list(hi_a)} is not a box inside shape {list(shape_a)}"
        )
    return lo_a, hi_a


def merge_runs(starts: ArrayLike, stops: ArrayLike) -> np.ndarray:
    """Sort runs ``[start, stop)`` and merge those that touch or overlap.

    Returns
    -------
    numpy.ndarray
        int64 array of shape ``(n, 2)``.
    """
    lo = np.asarray(starts, dtype=np.int64).reshape(-1)
    if not len(lo):
        return np.empty((0, 2), dtype=np.int64)
    order = np.argsort(lo, kind="stable")
    lo = lo[order]
    # the furthest stop so far: a run starting after it begins a new merged run
    reach = np.maximum.accumulate(np.asarray(stops, dtype=np.int64).reshape(-1)[order])
    first = np.flatnonzero(np.concatenate(([True], lo[1:] > reach[:-1])))
    return np.stack([lo[first], reach[np.append(first[1:], len(lo)) - 1]], axis=1)


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
    # Descend from the whole key space: a cube inside the box is one run of keys (both
    # curves visit an aligned cube of side 2**level in one stretch), a cube that
    # straddles the box's border splits into its 2**rank children.  Only straddling
    # cubes are kept, so the work grows with the box's surface, not its volume.
    level = int(bits_a.max(initial=0))
    corners = np.zeros((1, rank), dtype=np.int64)
    starts, stops = [], []
    while len(corners):
        # a Morton dimension with fewer bits than the level is already whole
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
    # np.ix_ makes the per-axis offsets broadcast against each other: their sum is every
    # combination, the start of each run
    starts = base + reduce(np.add, np.ix_(*outer)).reshape(-1) if outer else np.array([base])
    return merge_runs(starts, starts + length)
