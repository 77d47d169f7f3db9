"""Skilling's Hilbert curve, vectorised over points.

The index mapping is the one the Hurray format mandates for layout tag 0x40:
Skilling (2004), "Programming the Hilbert curve", with bit ``b`` of coordinate
``d`` stored at bit ``b * r + (r - 1 - d)`` of the index.  Each step of the
algorithm runs on whole columns of coordinates, so the Python loop runs over the
``r * p`` bits of the curve, never over points.
"""

from __future__ import annotations

import numpy as np

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
from .errors import LayoutError


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


def _axes_to_transpose(x: np.ndarray, order: int) -> None:
    """Skilling's forward transform, in place on columns ``x`` of shape ``(r, n)``."""
    rank = x.shape[0]
    x0 = x[0]
    t = np.empty_like(x0)
    flip = np.empty_like(x0)
    keep = np.empty_like(x0)
    q = order - 1
    while q > 0:
        p = x.dtype.type((1 << q) - 1)
        for i in range(rank):
            # flip = P where bit q of x[i] is set, else 0
            np.right_shift(x[i], q, out=flip)
            np.bitwise_and(flip, 1, out=flip)
            np.multiply(flip, p, out=flip)
            if i == 0:
                x0 ^= flip
                continue
            # where the bit is clear, exchange the low bits of x[0] and x[i]
            np.bitwise_xor(x0, x[i], out=t)
            np.bitwise_xor(flip, p, out=keep)
            t &= keep
            x[i] ^= t
            flip ^= t
            x0 ^= flip
        q -= 1
    for i in range(1, rank):
        x[i] ^= x[i - 1]
    t[:] = 0
    last = x[rank - 1]
    for q in range(order - 1, 0, -1):
        np.right_shift(last, q, out=flip)
        np.bitwise_and(flip, 1, out=flip)
        np.multiply(flip, x.dtype.type((1 << q) - 1), out=flip)
        t ^= flip
    x ^= t


def _transpose_to_axes(x: np.ndarray, order: int) -> None:
    """Skilling's inverse transform, in place on columns ``x`` of shape ``(r, n)``."""
    rank = x.shape[0]
    x0 = x[0]
    t = x[rank - 1] >> 1
    for i in range(rank - 1, 0, -1):
        x[i] ^= x[i - 1]
    x0 ^= t
    flip = np.empty_like(x0)
    keep = np.empty_like(x0)
    for q in range(1, order):
        p = x.dtype.type((1 << q) - 1)
        for i in range(rank - 1, -1, -1):
            np.right_shift(x[i], q, out=flip)
            np.bitwise_and(flip, 1, out=flip)
            np.multiply(flip, p, out=flip)
            if i == 0:
                x0 ^= flip
                continue
            np.bitwise_xor(x0, x[i], out=t)
            np.bitwise_xor(flip, p, out=keep)
            t &= keep
            x[i] ^= t
            flip ^= t
            x0 ^= flip


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
