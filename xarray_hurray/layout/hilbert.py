"""Skilling's Hilbert curve, vectorised over points.

The index mapping is the one the Hurray format mandates for layout tag 0x40:
Skilling (2004), "Programming the Hilbert curve", with bit ``b`` of coordinate
``d`` stored at bit ``b * r + (r - 1 - d)`` of the index.  Each step of the
algorithm runs on whole columns of coordinates, so the Python loop runs over the
``r * p`` bits of the curve, never over points.
"""

from __future__ import annotations

import numpy as np

from ..errors import LayoutError
from .bits import (
    BLOCK,
    MAX_KEY_BITS,
    as_index_array,
    check_range,
    coordinate_dtype,
    interleaved_bitmap,
    pack,
    store_columns,
    unpack,
)


def check_curve(rank: int, order: int) -> None:
    """Raise a :class:`LayoutError` unless a curve of this rank and order has a 64-bit key."""
    if not isinstance(rank, int | np.integer) or rank < 1:
        raise LayoutError(f"rank must be a positive integer, got {rank!r}")
    if not isinstance(order, int | np.integer) or order < 1:
        raise LayoutError(f"hilbert_order must be greater than 0, got {order!r}")
    if rank * order > MAX_KEY_BITS:
        raise LayoutError(
            f"rank * order = {rank * order} exceeds the {MAX_KEY_BITS}-bit index limit"
        )


class _Scratch:
    """Work columns reused by every step of one transform."""

    def __init__(self, like: np.ndarray) -> None:
        self.t = np.empty_like(like)
        self.flip = np.empty_like(like)
        self.keep = np.empty_like(like)


def _low_mask_where_bit(column: np.ndarray, q: int, out: np.ndarray) -> np.ndarray:
    """``2**q - 1`` where bit ``q`` of ``column`` is set, else 0."""
    np.right_shift(column, q, out=out)
    np.bitwise_and(out, 1, out=out)
    np.multiply(out, column.dtype.type((1 << q) - 1), out=out)
    return out


def _invert_or_exchange(x: np.ndarray, i: int, q: int, scratch: _Scratch) -> None:
    """One step of Skilling's loop for bit ``q`` of ``x[i]``.

    Where the bit is set the low ``q`` bits of ``x[0]`` are inverted; where it is
    clear the low ``q`` bits of ``x[0]`` and ``x[i]`` are exchanged.
    """
    x0 = x[0]  # a view: the in-place updates below write into x
    flip = _low_mask_where_bit(x[i], q, scratch.flip)
    if i == 0:
        x0 ^= flip
        return
    # Both cases at once, without a branch per point: t is the exchange's difference
    # where the bit is clear and 0 where it is set, so x0 ^= flip ^ t inverts or
    # exchanges, and x[i] ^= t changes only the points that exchange.
    t = np.bitwise_xor(x0, x[i], out=scratch.t)
    t &= np.bitwise_xor(flip, x.dtype.type((1 << q) - 1), out=scratch.keep)
    x[i] ^= t
    flip ^= t
    x0 ^= flip


def _axes_to_transpose(x: np.ndarray, order: int) -> None:
    """Skilling's forward transform, in place on columns ``x`` of shape ``(r, n)``."""
    rank = x.shape[0]
    scratch = _Scratch(x[0])
    for q in range(order - 1, 0, -1):
        for i in range(rank):
            _invert_or_exchange(x, i, q, scratch)
    for i in range(1, rank):
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    for q in range(order - 1, 0, -1):
        t ^= _low_mask_where_bit(x[rank - 1], q, scratch.flip)
    x ^= t


def _transpose_to_axes(x: np.ndarray, order: int) -> None:
    """Skilling's inverse transform, in place on columns ``x`` of shape ``(r, n)``."""
    rank = x.shape[0]
    t = x[rank - 1] >> 1
    for i in range(rank - 1, 0, -1):
        x[i] ^= x[i - 1]
    x[0] ^= t
    scratch = _Scratch(x[0])
    for q in range(1, order):
        for i in range(rank - 1, -1, -1):
            _invert_or_exchange(x, i, q, scratch)


def hilbert_encode(coords: object, order: int) -> np.ndarray:
    """Hilbert indices of points.

    Parameters
    ----------
    coords
        Integer array of shape ``(..., rank)``; each coordinate in ``[0, 2**order)``.
    order
        The curve order ``p``: bits per coordinate.

    Returns
    -------
    numpy.ndarray
        ``uint64`` indices of shape ``coords.shape[:-1]``.

    Raises
    ------
    LayoutError
        For non-integer input, coordinates out of range, or ``rank * order > 64``.
    """
    array = as_index_array(coords, "coords")
    if array.ndim < 1:
        raise LayoutError("coords must have shape (..., rank), got a scalar")
    rank = array.shape[-1]
    check_curve(rank, order)
    check_range(array, order, "coords")
    dtype = coordinate_dtype(order)
    bitmap = interleaved_bitmap((order,) * rank)
    points = array.reshape(-1, rank)
    out = np.empty(points.shape[0], dtype=np.uint64)
    for start in range(0, points.shape[0], BLOCK):
        # a contiguous copy per dimension: the transform works in place, column-wise
        x = np.ascontiguousarray(points[start : start + BLOCK].T, dtype=dtype)
        _axes_to_transpose(x, order)
        out[start : start + BLOCK] = pack(x, bitmap)
    return out.reshape(array.shape[:-1])


def hilbert_decode(index: object, rank: int, order: int) -> np.ndarray:
    """Coordinates of Hilbert indices; the inverse of :func:`hilbert_encode`.

    Parameters
    ----------
    index
        Integer array of any shape; each value in ``[0, 2**(rank * order))``.
    rank, order
        The curve's number of dimensions ``r`` and bits per dimension ``p``.

    Returns
    -------
    numpy.ndarray
        ``int64`` coordinates of shape ``index.shape + (rank,)``.
    """
    check_curve(rank, order)
    array = as_index_array(index, "index")
    check_range(array, rank * order, "index")
    dtype = coordinate_dtype(order)
    bitmap = interleaved_bitmap((order,) * rank)
    keys = array.reshape(-1).astype(np.uint64, copy=False)
    out = np.empty((keys.shape[0], rank), dtype=np.int64)
    for start in range(0, keys.shape[0], BLOCK):
        x = unpack(keys[start : start + BLOCK], bitmap, dtype)
        _transpose_to_axes(x, order)
        store_columns(out[start : start + BLOCK], x)
    return out.reshape((*array.shape, rank))
