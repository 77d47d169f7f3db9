"""The order in which the chunks of a chunk grid are placed along a curve."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .bits import MAX_KEY_BITS
from .descriptors import LAYOUT_NAMES, parse_shape
from .errors import LayoutError
from .hilbert import hilbert_encode
from .morton import morton_encode


def curve_order(
    grid_shape: Sequence[int], kind: str, axes: Sequence[int] | None = None
) -> np.ndarray:
    """Placement order of the chunks of a grid along a curve.

    The curve runs over ``axes`` (default: all).  Axes of length 1 are ignored; the
    others are padded to the enclosing power-of-two cube and positions outside the
    grid are skipped.  Axes not in ``axes`` vary slowest, in row-major order, so a
    ``(time, y, x)`` grid with ``axes=(1, 2)`` keeps time outermost.

    Parameters
    ----------
    grid_shape
        Number of chunks along each axis; any positive sizes.
    kind
        ``"hilbert"``, ``"morton"`` or ``"row-major"``.
    axes
        The axes the curve runs over.

    Returns
    -------
    numpy.ndarray
        int64 row-major (C order) flat indices of the chunks, in placement order.
    """
    grid = parse_shape(grid_shape)
    if kind not in LAYOUT_NAMES:
        raise LayoutError(
            f"unknown chunk order {kind!r}; expected one of {', '.join(LAYOUT_NAMES)}"
        )
    rank = len(grid)
    curve_axes = tuple(range(rank)) if axes is None else tuple(int(a) for a in axes)
    if sorted(set(curve_axes)) != sorted(curve_axes) or any(not 0 <= a < rank for a in curve_axes):
        raise LayoutError(f"curve axes {curve_axes} must be distinct axes of a rank-{rank} grid")
    count = math.prod(grid)
    if kind == "row-major" or count <= 1:
        return np.arange(count, dtype=np.int64)
    outer_axes = [a for a in range(rank) if a not in curve_axes]
    moving = [a for a in sorted(curve_axes) if grid[a] > 1]
    order = max((grid[a] - 1 for a in moving), default=0).bit_length()
    if order * len(moving) > MAX_KEY_BITS:
        raise LayoutError(
            f"a {kind} curve over a grid of {[grid[a] for a in moving]} chunks needs "
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
    if kind == "hilbert":
        key = hilbert_encode(points, order)
    else:
        key = morton_encode(points, (order,) * len(moving))
    return np.lexsort((key, outer)).astype(np.int64)
