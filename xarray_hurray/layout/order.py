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
    those of the grid inside the sibling sub-cubes the curve visits first (a box
    intersection each, found from one point decoded from the sibling's key).

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
    keys = _curve_keys(np.stack([coords[a] for a in moving], axis=-1), chunk_order, order)
    # every (chunk, level, sibling visited first) as a row, so that all the siblings'
    # corners are decoded in one call: one call per level and sibling cost more than
    # the decoding itself (several ms before a region read's first request)
    rows, firsts, levels = [], [], []
    for below in range(order - 1, -1, -1):  # bits per axis below the sub-cubes of this level
        digit = (keys >> np.uint64(d * below)) & np.uint64(2**d - 1)
        prefix = keys >> np.uint64(d * (below + 1))
        for sibling in range(2**d - 1):
            earlier = np.flatnonzero(digit > sibling)
            first = ((prefix[earlier] << np.uint64(d)) | np.uint64(sibling)) << np.uint64(d * below)
            rows.append(earlier)
            firsts.append(first)
            levels.append(np.full(len(earlier), below, dtype=np.int64))
    rank = np.zeros(len(ids), dtype=np.int64)
    below_of = np.concatenate(levels)[:, None]
    if len(below_of):
        points = _curve_points(np.concatenate(firsts), chunk_order, d, order)
        corner = (points >> below_of) << below_of
        inside = np.clip(sizes - corner, 0, 1 << below_of)  # the sub-cube within the grid
        np.add.at(rank, np.concatenate(rows), inside.prod(axis=1))
    return (outer * inner + rank).astype(np.int64)


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
    level the sibling sub-cubes are visited in curve order, and the rank passes each
    sibling whose grid chunks (a box intersection) it exceeds, less their number.

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
            left, chosen = rank[open_], np.full(len(open_), -1, dtype=np.int64)
            full = np.zeros(len(open_), dtype=bool)
            for sibling in range(2**d):
                first = ((prefix[open_] << np.uint64(d)) | np.uint64(sibling)) << np.uint64(
                    d * below
                )
                corner = (_curve_points(first, chunk_order, d, order) >> below) << below
                inside = np.clip(sizes - corner, 0, 1 << below).prod(axis=1)
                here = (chosen < 0) & (left < inside)
                chosen[here] = sibling
                full[here] = inside[here] == 1 << (d * below)
                left = np.where(chosen < 0, left - inside, left)
            prefix[open_] = (prefix[open_] << np.uint64(d)) | chosen.astype(np.uint64)
            rank[open_] = left
            done = open_[full]
            keys[done] = (prefix[done] << np.uint64(d * below)) | left[full].astype(np.uint64)
            open_ = open_[~full]
        points = _curve_points(keys, chunk_order, d, order)
        for k, axis in enumerate(moving):
            coords[axis] = points[:, k].astype(np.int64)
    return np.ravel_multi_index(tuple(coords), grid).astype(np.int64)
