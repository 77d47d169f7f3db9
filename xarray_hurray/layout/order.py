"""The order in which the chunks of a chunk grid are placed along a curve."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import LayoutError
from .bits import MAX_KEY_BITS
from .descriptors import LAYOUT_NAMES, parse_shape
from .hilbert import hilbert_decode, hilbert_encode
from .morton import morton_decode, morton_encode


def chunk_placement(
    grid_shape: Sequence[int], chunk_order: str, chunk_axes: Sequence[int] | None = None
) -> np.ndarray:
    """The placement of the chunks of a grid: their order along the ``chunk_order`` curve.

    The curve runs over ``chunk_axes`` (default: all).  Axes of length 1 are ignored;
    the others are padded to the enclosing power-of-two cube and positions outside the
    grid are skipped.  Axes not in ``chunk_axes`` vary slowest, in row-major order, so
    a ``(time, y, x)`` grid with ``chunk_axes=(1, 2)`` keeps time outermost.

    Parameters
    ----------
    grid_shape
        Number of chunks along each axis; any positive sizes.
    chunk_order
        The curve: ``"hilbert"``, ``"morton"`` or ``"row-major"``.
    chunk_axes
        The axes the curve runs over.

    Returns
    -------
    numpy.ndarray
        int64 row-major (C order) flat indices of the chunks, in placement order.
    """
    grid = parse_shape(grid_shape)
    outer_axes, moving, order = _curve_plan(grid, chunk_order, chunk_axes)
    count = math.prod(grid)
    if chunk_order == "row-major" or count <= 1:
        return np.arange(count, dtype=np.int64)
    rank = len(grid)
    coords = np.indices(grid, dtype=np.int64).reshape(rank, count)
    outer = (
        np.ravel_multi_index(tuple(coords[outer_axes]), tuple(grid[a] for a in outer_axes))
        if outer_axes
        else np.zeros(count, dtype=np.int64)
    )
    if len(moving) <= 1:
        return np.lexsort((coords[moving[0]] if moving else outer, outer)).astype(np.int64)
    key = _curve_keys(coords[moving].T, chunk_order, order)
    return np.lexsort((key, outer)).astype(np.int64)


def _curve_plan(
    grid: tuple[int, ...], chunk_order: str, chunk_axes: Sequence[int] | None
) -> tuple[list[int], list[int], int]:
    """The axes outside the curve (slowest, row-major), the axes the curve moves
    along (its axes longer than one chunk) and the curve's order (bits per axis).

    Raises
    ------
    LayoutError
        For an unknown curve, bad axes, or a curve needing more than 64 key bits.
    """
    if chunk_order not in LAYOUT_NAMES:
        raise LayoutError(
            f"unknown chunk order {chunk_order!r}; expected one of {', '.join(LAYOUT_NAMES)}",
            value=chunk_order,
        )
    rank = len(grid)
    axes = tuple(range(rank)) if chunk_axes is None else tuple(int(a) for a in chunk_axes)
    if sorted(set(axes)) != sorted(axes) or any(not 0 <= a < rank for a in axes):
        raise LayoutError(
            f"chunk axes {axes} must be distinct axes of a rank-{rank} grid", value=chunk_axes
        )
    outer_axes = [a for a in range(rank) if a not in axes]
    moving = [a for a in sorted(axes) if grid[a] > 1]
    order = max((grid[a] - 1 for a in moving), default=0).bit_length()
    if chunk_order != "row-major" and order * len(moving) > MAX_KEY_BITS:
        raise LayoutError(
            f"a {chunk_order} curve over a grid of {[grid[a] for a in moving]} chunks needs "
            f"{order * len(moving)} bits, more than {MAX_KEY_BITS}"
        )
    return outer_axes, moving, order


def _curve_keys(points: np.ndarray, chunk_order: str, order: int) -> np.ndarray:
    """The keys along the curve of ``points`` (shape ``(n, d)``) of the cube of side
    ``2**order``."""
    if chunk_order == "hilbert":
        return hilbert_encode(points, order)
    return morton_encode(points, (order,) * points.shape[-1])


def _curve_points(keys: np.ndarray, chunk_order: str, rank: int, order: int) -> np.ndarray:
    """The points (shape ``(n, rank)``) of the cube of side ``2**order`` at ``keys``."""
    if chunk_order == "hilbert":
        return hilbert_decode(keys, rank, order)
    return morton_decode(keys, (order,) * rank)


_BLOCK_VALUES = 1 << 20
"""Decoded coordinates held at once while placing chunks: the sub-cubes are taken
in blocks, so that a curve of many axes (``d + 1`` points of ``d`` coordinates per
sub-cube) never holds more."""


def _block_size(d: int) -> int:
    """Sub-cubes whose children :class:`_Siblings` takes at once on a curve of ``d``
    axes."""
    return max(_BLOCK_VALUES // ((d + 1) * d), 1)


def _shift_right(keys: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """``keys >> bits`` for shifts up to 64 (numpy leaves a shift of 64 to the
    processor, which on x86 shifts by nothing)."""
    wide = bits >= 64
    shifted: np.ndarray = keys >> np.where(wide, 0, bits).astype(np.uint64)
    return np.where(wide, np.uint64(0), shifted)


class _Siblings:
    """The children of some sub-cubes of a curve's cube, one sub-cube a row, cut to
    the grid.

    Both curves visit the ``2**d`` children of an aligned sub-cube one after the
    other, each whole, in the binary-reflected Gray code order of their digits
    with the axes permuted and reflected (the identity for Morton; for Hilbert a
    symmetry that changes from sub-cube to sub-cube).  So the child of digit ``j``
    is the child of digit 0 moved to the other half along the axes ``flips[m]`` for
    each bit ``m`` set in ``j``; and the children whose digits agree above bit ``i``
    and take every value below it fill a box: one half of the sub-cube along the
    axes the fixed bits decide, both halves along the ``i`` axes of ``flips[0]``
    to ``flips[i - 1]``.  A box's grid chunks are a product over the axes, so the
    chunks before a child are ``d`` boxes, never ``2**d`` children, found from the
    points of digits 0 and ``2**m`` (``d + 1`` decoded points per sub-cube).
    """

    def __init__(
        self,
        prefix: np.ndarray,
        below: np.ndarray,
        chunk_order: str,
        sizes: np.ndarray,
        order: int,
    ) -> None:
        """The children of the sub-cubes at key prefixes ``prefix`` (the digits above
        level ``below``: each row's sub-cube has ``below + 1`` bits per axis) of a
        curve of ``order`` bits per axis over a grid of ``sizes`` chunks."""
        d = len(sizes)
        shift = np.uint64(d) * below.astype(np.uint64)
        digits = np.concatenate([[0], 1 << np.arange(d)]).astype(np.uint64)
        keys = ((prefix[:, None] << np.uint64(d)) | digits) << shift[:, None]
        points = _curve_points(keys.reshape(-1), chunk_order, d, order)
        points = points.reshape(len(prefix), d + 1, d)
        low_bits = below.astype(np.int64)[:, None]
        halves = (points >> low_bits[:, :, None]) & 1
        self.d = d
        self.first = halves[:, 0].astype(bool)
        """The half of each axis the child of digit 0 lies in (True: the high one)."""
        self.flips = halves[:, 1:] != halves[:, :1]
        """``flips[:, m]``: the axes along which the child of digit ``2**m`` lies in
        the other half from the child of digit 0."""
        self.free = np.zeros_like(self.flips)
        """``free[:, i]``: the axes the digits varying below bit ``i`` move along."""
        self.free[:, 1:] = np.logical_or.accumulate(self.flips[:, :-1], axis=1)
        self.side = np.int64(1) << low_bits
        """Side of a child (one column)."""
        corner = (points[:, 0] >> (low_bits + 1)) << (low_bits + 1)
        self.low = np.clip(sizes - corner, 0, self.side)
        """Grid chunks along each axis in the low half of the sub-cube."""
        self.high = np.clip(sizes - corner - self.side, 0, self.side)
        """Grid chunks along each axis in the high half of the sub-cube."""

    def _box(self, fixed: np.ndarray, i: int) -> np.ndarray:
        """Grid chunks of the children whose digit bits above ``i`` put them on the
        sides ``fixed`` (the child of digit 0's, flipped by those bits) and whose
        bits below ``i`` take every value, bit ``i`` being 0."""
        inside = np.where(
            self.free[:, i], self.low + self.high, np.where(fixed, self.high, self.low)
        )
        counted: np.ndarray = inside.prod(axis=1)
        return counted

    def before(self, digit: np.ndarray) -> np.ndarray:
        """Grid chunks of the children each row's curve visits before the child of
        ``digit``: for each bit ``i`` set in the digit, the box of the digits equal
        to it above ``i``, 0 at ``i`` and anything below."""
        fixed = self.first.copy()
        count = np.zeros(len(digit), dtype=np.int64)
        for i in range(self.d - 1, -1, -1):
            taken = ((digit >> np.uint64(i)) & np.uint64(1)).astype(bool)
            count += np.where(taken, self._box(fixed, i), 0)
            fixed ^= self.flips[:, i] & taken[:, None]
        return count

    def find(self, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The child holding each row's grid chunk of rank ``rank`` (counted in the
        row's sub-cube), bit by bit from the top (the bit is 0 where the rank falls
        in the box of the children it starts): its digit, the rank within it, and
        whether it lies whole inside the grid."""
        fixed = self.first.copy()
        digit = np.zeros(len(rank), dtype=np.uint64)
        left = rank.copy()
        for i in range(self.d - 1, -1, -1):
            box = self._box(fixed, i)
            taken = left >= box
            left -= np.where(taken, box, 0)
            digit |= taken.astype(np.uint64) << np.uint64(i)
            fixed ^= self.flips[:, i] & taken[:, None]
        whole = np.all(np.where(fixed, self.high, self.low) == self.side, axis=1)
        return digit, left, whole


def placement_positions(
    grid_shape: Sequence[int],
    chunk_order: str,
    chunk_axes: Sequence[int] | None,
    chunk_ids: np.ndarray,
) -> np.ndarray:
    """The placement positions of chunks ``chunk_ids`` (row-major flat indices): where
    each is in :func:`chunk_placement` of the grid, found without it, in memory and
    time growing with the chunks asked for, not with the grid.

    A chunk's position is its row-major index over the axes outside the curve, times
    the chunks of one curve, plus its rank on the curve: the grid chunks whose keys
    are smaller.  That rank is counted level by level down the curve: both curves
    visit each aligned sub-cube whole, so at each level the chunks before it are
    those of the grid inside the sibling sub-cubes the curve visits first, counted
    as ``d`` boxes of them (:class:`_Siblings`): time polynomial in the curve's
    rank ``d``, where counting the ``2**d`` siblings one by one took minutes at 22
    axes.

    Returns
    -------
    numpy.ndarray
        int64 positions, one per chunk id.
    """
    grid = parse_shape(grid_shape)
    outer_axes, moving, order = _curve_plan(grid, chunk_order, chunk_axes)
    ids = np.asarray(chunk_ids, dtype=np.int64).reshape(-1)
    if chunk_order == "row-major" or math.prod(grid) <= 1:
        return ids.copy()
    coords = np.unravel_index(ids, grid)
    outer = (
        np.ravel_multi_index(tuple(coords[a] for a in outer_axes), [grid[a] for a in outer_axes])
        if outer_axes
        else np.zeros(len(ids), dtype=np.int64)
    )
    inner = math.prod(grid[a] for a in moving)
    if len(moving) <= 1:
        rank = coords[moving[0]] if moving else np.zeros(len(ids), dtype=np.int64)
        return (outer * inner + rank).astype(np.int64)
    sizes = np.array([grid[a] for a in moving], dtype=np.int64)
    d = len(moving)
    points = np.stack([coords[a] for a in moving], axis=-1)
    keys = _curve_keys(points, chunk_order, order)
    # every (chunk, level) a row, the levels from the top
    row_chunk = np.repeat(np.arange(len(ids)), order)
    below = np.tile(np.arange(order - 1, -1, -1, dtype=np.int64), len(ids))
    shift = np.uint64(d) * below.astype(np.uint64)
    digit = (keys[row_chunk] >> shift) & np.uint64(2**d - 1)
    # a sub-cube inside the grid holds every chunk of its children before the
    # chunk's: the digit times a child's chunks, with nothing to decode
    cube = (np.int64(2) << below)[:, None]  # the side of each row's sub-cube
    whole = np.all(points[row_chunk] // cube * cube + cube <= sizes, axis=1)
    counts = np.where(whole, digit << shift, np.uint64(0))
    # the others, cut by the grid's edge, a box of siblings at a time, in blocks so
    # that each block's sibling points are decoded in one call (a call per row
    # cost more than the decoding itself)
    cut = np.flatnonzero(~whole & (digit > 0))
    step = _block_size(d)
    for start in range(0, len(cut), step):
        rows = cut[start : start + step]
        prefix = _shift_right(keys[row_chunk[rows]], shift[rows] + np.uint64(d))
        siblings = _Siblings(prefix, below[rows], chunk_order, sizes, order)
        counts[rows] = siblings.before(digit[rows]).astype(np.uint64)
    ranks = counts.reshape(len(ids), order).sum(axis=1).astype(np.int64)
    return np.asarray(outer * inner + ranks, dtype=np.int64)


def placement_chunks(
    grid_shape: Sequence[int],
    chunk_order: str,
    chunk_axes: Sequence[int] | None,
    positions: np.ndarray,
) -> np.ndarray:
    """The chunks (row-major flat indices) at placement ``positions``: the inverse of
    :func:`placement_positions`, also in memory and time growing with the positions
    asked for, not with the grid (``chunk_placement(...)[positions]`` without it).

    A position's rank on the curve is walked down the curve level by level: at each
    level it falls in one child of its sub-cube, found from the grid chunks of ``d``
    boxes of children (:class:`_Siblings`), less the chunks of the children before.

    Returns
    -------
    numpy.ndarray
        int64 chunk ids, one per position.
    """
    grid = parse_shape(grid_shape)
    outer_axes, moving, order = _curve_plan(grid, chunk_order, chunk_axes)
    places = np.asarray(positions, dtype=np.int64).reshape(-1)
    if chunk_order == "row-major" or math.prod(grid) <= 1:
        return places.copy()
    inner = math.prod(grid[a] for a in moving)
    outer, rank = np.divmod(places, inner)
    coords = [np.zeros(len(places), dtype=np.int64) for _ in grid]
    if outer_axes:
        for axis, coord in zip(
            outer_axes, np.unravel_index(outer, [grid[a] for a in outer_axes]), strict=True
        ):
            coords[axis] = coord.astype(np.int64)
    if len(moving) == 1:
        coords[moving[0]] = rank
    elif moving:
        d = len(moving)
        sizes = np.array([grid[a] for a in moving], dtype=np.int64)
        # the key bits chosen so far, for each position that is not done: done once
        # its sub-cube lies inside the grid, where the rank left is the rest of the key
        keys = np.zeros(len(places), dtype=np.uint64)
        prefix = np.zeros(len(places), dtype=np.uint64)
        open_ = np.arange(len(places))
        if math.prod(grid[a] for a in moving) == 2 ** (d * order):
            keys, open_ = rank.astype(np.uint64), open_[:0]  # the grid is the whole cube
        for below in range(order - 1, -1, -1):
            if not len(open_):
                break
            digit = np.empty(len(open_), dtype=np.uint64)
            left = np.empty(len(open_), dtype=np.int64)
            whole = np.empty(len(open_), dtype=bool)
            step = _block_size(d)
            for start in range(0, len(open_), step):
                rows = open_[start : start + step]
                levels = np.full(len(rows), below, dtype=np.int64)
                siblings = _Siblings(prefix[rows], levels, chunk_order, sizes, order)
                part = slice(start, start + step)
                digit[part], left[part], whole[part] = siblings.find(rank[rows])
            prefix[open_] = (prefix[open_] << np.uint64(d)) | digit
            rank[open_] = left
            done = open_[whole]
            keys[done] = (prefix[done] << np.uint64(d * below)) | left[whole].astype(np.uint64)
            open_ = open_[~whole]
        points = _curve_points(keys, chunk_order, d, order)
        for k, axis in enumerate(moving):
            coords[axis] = points[:, k].astype(np.int64)
    return np.ravel_multi_index(tuple(coords), grid).astype(np.int64)
