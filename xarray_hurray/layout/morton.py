"""Morton (Z-order) keys with a bit count per dimension (ADR-005).

Bit level ``b = 0, 1, ...`` contributes bit ``b`` of every dimension ``d`` with
``b < bits[d]``; within a level a lower ``d`` is more significant.  With equal
bits this is the Hilbert packing without Skilling's transform, and a dimension
with zero bits drops out of the key.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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


def parse_morton_bits(bits: Sequence[int]) -> tuple[int, ...]:
    """Validate per-dimension ``morton_bits`` and return them as a tuple of ints."""
    if isinstance(bits, str | bytes) or not all(
        isinstance(b, int | np.integer) and not isinstance(b, bool) for b in bits
    ):
        raise LayoutError(f"morton_bits must be a sequence of integers, got {bits!r}")
    parsed = tuple(int(b) for b in bits)
    if any(b < 0 for b in parsed):
        raise LayoutError(f"morton_bits must be non-negative, got {parsed}")
    if sum(parsed) > MAX_KEY_BITS:
        raise LayoutError(
            f"sum(morton_bits) = {sum(parsed)} exceeds the {MAX_KEY_BITS}-bit index limit"
        )
    return parsed


def morton_encode(coords: object, bits: Sequence[int]) -> np.ndarray:
    """Morton codes of points.

    Parameters
    ----------
    coords
        Integer array of shape ``(..., len(bits))``; ``coords[..., d]`` in ``[0, 2**bits[d])``.
    bits
        The per-dimension ``morton_bits``.

    Returns
    -------
    numpy.ndarray
        ``uint64`` codes of shape ``coords.shape[:-1]``.
    """
    bits = parse_morton_bits(bits)
    array = as_index_array(coords, "coords")
    if array.ndim < 1 or array.shape[-1] != len(bits):
        raise LayoutError(
            f"coords must have shape (..., {len(bits)}) for {len(bits)} morton_bits, "
            f"got {array.shape}"
        )
    for d, n in enumerate(bits):
        check_range(array[..., d], n, f"coords[..., {d}]")
    dtype = coordinate_dtype(max(bits, default=0))
    bitmap = interleaved_bitmap(bits)
    # the count spelled out: with no dimensions (bits == ()) reshape cannot infer a -1
    points = array.reshape(math.prod(array.shape[:-1]), len(bits))
    out = np.empty(points.shape[0], dtype=np.uint64)
    for start in range(0, points.shape[0], BLOCK):
        columns = np.ascontiguousarray(points[start : start + BLOCK].T, dtype=dtype)
        out[start : start + BLOCK] = pack(columns, bitmap)
    return out.reshape(array.shape[:-1])


def morton_decode(index: object, bits: Sequence[int]) -> np.ndarray:
    """Coordinates of Morton codes; the inverse of :func:`morton_encode`.

    Returns
    -------
    numpy.ndarray
        ``int64`` coordinates of shape ``index.shape + (len(bits),)``.
    """
    bits = parse_morton_bits(bits)
    array = as_index_array(index, "index")
    check_range(array, sum(bits), "index")
    dtype = coordinate_dtype(max(bits, default=0))
    bitmap = interleaved_bitmap(bits)
    keys = array.reshape(-1).astype(np.uint64, copy=False)
    out = np.empty((keys.shape[0], len(bits)), dtype=np.int64)
    for start in range(0, keys.shape[0], BLOCK):
        store_columns(
            out[start : start + BLOCK], unpack(keys[start : start + BLOCK], bitmap, dtype)
        )
    return out.reshape((*array.shape, len(bits)))
