"""The order in which the chunks of a chunk grid are placed along a curve."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import LayoutError
from .bits import MAX_KEY_BITS
from .descriptors import LAYOUT_NAMES, parse_shape
from .hilbert import hilbert_encode
from .morton import morton_encode


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
    count = math.prod(grid)
    if chunk_order == "row-major" or count <= 1:
        return np.arange(count, dtype=np.int64)
    outer_axes = [a for a in range(rank) if a not in axes]
    moving = [a for a in sorted(axes) if grid[a] > 1]
    order = max((grid[a] - 1 for a in moving), default=0).bit_length()
    if order * len(moving) > MAX_KEY_BITS:
        raise LayoutError(
            f"a {chunk_order} curve over a grid of {[grid[a] for a in moving]} chunks needs "
            f"{order * len(moving)} bits, more than {MAX_KEY_BITS}"
        )
    coords = np.indices(grid, dtype=np.int64).reshape(rank, count)
    outer = (
        np.ravel_multi_index(tuple(coords[outer_axes]), tuple(grid[a] for a in outer_axes))
        if outer_axes
        else np.zeros(count, dtype=np.int64)
    )
    if len(moving) <= 1:
        return np.lexsort((coords[moving[0]] if moving else outer, outer)).astype(np.int64)
    points = coords[moving].T
    if chunk_order == "hilbert":
        key = hilbert_encode(points, order)
    else:
        key = morton_encode(points, (order,) * len(moving))
    return np.lexsort((key, outer)).astype(np.int64)
