"""Vectorised scatter and gather of coordinate bits into curve keys.

Both curves end with the same step: the bits of every coordinate are placed at
fixed positions of an integer key.  A *bit map* gives, for each dimension ``d``
and bit ``b`` of that dimension, the key position that holds it.  Packing and
unpacking go a byte at a time through 256-entry lookup tables, so the cost per
point is a handful of table lookups instead of one operation per bit.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .errors import LayoutError

MAX_KEY_BITS = 64
BLOCK = 1 << 16  # points processed per block, sized to stay in cache

BitMap = tuple[tuple[int, ...], ...]
"""``bitmap[d][b]`` is the key position holding bit ``b`` of coordinate ``d``."""


def interleaved_bitmap(bits: tuple[int, ...]) -> BitMap:
    """Bit map of the format's interleaving convention.

    For bit level ``b = 0, 1, ...`` every dimension ``d`` with ``b < bits[d]``
    contributes its bit ``b``; within a level a lower ``d`` takes a more
    significant position.  With equal bits this is the Hilbert packing
    ``b * r + (r - 1 - d)``.
    """
    positions: list[list[int]] = [[] for _ in bits]
    next_position = 0
    for level in range(max(bits, default=0)):
        active = [d for d, n in enumerate(bits) if level < n]
        for rank_in_level, d in enumerate(reversed(active)):
            positions[d].append(next_position + rank_in_level)
        next_position += len(active)
    return tuple(tuple(p) for p in positions)


@lru_cache(maxsize=64)
def _pack_tables(bitmap: BitMap) -> tuple[tuple[np.ndarray, ...], ...]:
    tables = []
    values = np.arange(256, dtype=np.uint64)
    for positions in bitmap:
        per_byte = []
        for first in range(0, len(positions), 8):
            table = np.zeros(256, dtype=np.uint64)
            for j, position in enumerate(positions[first : first + 8]):
                table |= ((values >> np.uint64(j)) & np.uint64(1)) << np.uint64(position)
            per_byte.append(table)
        tables.append(tuple(per_byte))
    return tuple(tables)


@lru_cache(maxsize=64)
def _unpack_tables(bitmap: BitMap, coord_dtype: str) -> tuple[np.ndarray, ...]:
    key_bits = sum(len(p) for p in bitmap)
    owner = {}
    for d, positions in enumerate(bitmap):
        for b, position in enumerate(positions):
            owner[position] = (d, b)
    values = np.arange(256, dtype=np.uint64)
    tables = []
    for first in range(0, key_bits, 8):
        table = np.zeros((len(bitmap), 256), dtype=coord_dtype)
        for j in range(8):
            if first + j in owner:
                d, b = owner[first + j]
                bit = ((values >> np.uint64(j)) & np.uint64(1)) << np.uint64(b)
                table[d] |= bit.astype(coord_dtype)
        tables.append(table)
    return tuple(tables)


def pack(columns: np.ndarray, bitmap: BitMap) -> np.ndarray:
    """Scatter the bits of ``columns`` (shape ``(rank, n)``) into uint64 keys."""
    tables = _pack_tables(bitmap)
    key = np.zeros(columns.shape[1], dtype=np.uint64)
    scratch = np.empty(columns.shape[1], dtype=columns.dtype)
    for column, per_byte in zip(columns, tables, strict=True):
        for k, table in enumerate(per_byte):
            np.right_shift(column, 8 * k, out=scratch)
            np.bitwise_and(scratch, 255, out=scratch)
            key |= table[scratch]
    return key


def unpack(keys: np.ndarray, bitmap: BitMap, coord_dtype: np.dtype) -> np.ndarray:
    """Gather the bits of uint64 ``keys`` back into columns of shape ``(rank, n)``."""
    tables = _unpack_tables(bitmap, np.dtype(coord_dtype).str)
    columns = np.zeros((len(bitmap), keys.shape[0]), dtype=coord_dtype)
    byte = np.empty(keys.shape[0], dtype=np.uint64)
    for k, table in enumerate(tables):
        np.right_shift(keys, np.uint64(8 * k), out=byte)
        np.bitwise_and(byte, np.uint64(255), out=byte)
        for d in range(len(bitmap)):
            columns[d] |= table[d][byte]
    return columns


def as_index_array(values: object, name: str) -> np.ndarray:
    """Return ``values`` as an integer ndarray or raise a :class:`LayoutError`."""
    array = np.asarray(values)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise LayoutError(f"{name} must be integers, got dtype {array.dtype}")
    return array


def check_range(array: np.ndarray, limit_bits: int, name: str) -> None:
    """Raise a :class:`LayoutError` unless every value lies in ``[0, 2**limit_bits)``."""
    if array.size == 0:
        return
    if np.issubdtype(array.dtype, np.signedinteger) and array.min() < 0:
        raise LayoutError(f"{name} must be non-negative, got {array.min()}")
    if limit_bits < 64 and int(array.max()) >= (1 << limit_bits):
        raise LayoutError(f"{name} must be below 2**{limit_bits}, got {int(array.max())}")


def coordinate_dtype(bits: int) -> np.dtype:
    """The narrowest unsigned dtype of at least 16 bits that holds ``bits`` bits."""
    for dtype in (np.uint16, np.uint32):
        if bits <= np.iinfo(dtype).bits:
            return np.dtype(dtype)
    return np.dtype(np.uint64)
