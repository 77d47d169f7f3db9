"""Vectorised scatter and gather of coordinate bits into curve keys.

Both curves end with the same step: the bits of every coordinate are placed at
fixed positions of an integer key.  A *bit map* gives, for each dimension ``d``
and bit ``b`` of that dimension, the key position that holds it.  Packing and
unpacking go up to 16 bits at a time through lookup tables, so the cost per
point is a few table lookups instead of one operation per bit.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..errors import LayoutError

MAX_KEY_BITS = 64
BLOCK = 1 << 16  # points processed per block, sized to stay in cache
PIECE_BITS = 16  # bits looked up at once: tables of at most 65,536 entries

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


def _pieces(width: int) -> list[tuple[int, int]]:
    """Split ``width`` bits into ``(first bit, bit count)`` pieces of at most ``PIECE_BITS``."""
    return [(first, min(PIECE_BITS, width - first)) for first in range(0, width, PIECE_BITS)]


@lru_cache(maxsize=64)
def _pack_tables(bitmap: BitMap) -> tuple[tuple[np.ndarray, ...], ...]:
    tables = []
    for positions in bitmap:
        per_piece = []
        for first, count in _pieces(len(positions)):
            values = np.arange(1 << count, dtype=np.uint64)
            table = np.zeros(1 << count, dtype=np.uint64)
            for j in range(count):
                bit = (values >> np.uint64(j)) & np.uint64(1)
                table |= bit << np.uint64(positions[first + j])
            per_piece.append(table)
        tables.append(tuple(per_piece))
    return tuple(tables)


@lru_cache(maxsize=64)
def _unpack_tables(bitmap: BitMap, coord_dtype: str) -> tuple[np.ndarray, ...]:
    owner = {}
    for d, positions in enumerate(bitmap):
        for b, position in enumerate(positions):
            owner[position] = (d, b)
    tables = []
    for first, count in _pieces(len(owner)):
        values = np.arange(1 << count, dtype=np.uint64)
        table = np.zeros((len(bitmap), 1 << count), dtype=coord_dtype)
        for j in range(count):
            d, b = owner[first + j]
            bit = ((values >> np.uint64(j)) & np.uint64(1)) << np.uint64(b)
            table[d] |= bit.astype(coord_dtype)
        tables.append(table)
    return tuple(tables)


def pack(columns: np.ndarray, bitmap: BitMap) -> np.ndarray:
    """Scatter the bits of ``columns`` (shape ``(rank, n)``) into uint64 keys.

    Every value of ``columns[d]`` must be below ``2**len(bitmap[d])``.
    """
    tables = _pack_tables(bitmap)
    key = np.zeros(columns.shape[1], dtype=np.uint64)
    scratch = np.empty(columns.shape[1], dtype=columns.dtype)
    for column, positions, per_piece in zip(columns, bitmap, tables, strict=True):
        for (first, count), table in zip(_pieces(len(positions)), per_piece, strict=True):
            if first == 0 and count == len(positions):
                # one piece covers the coordinate: index with it directly, no copy
                key |= table[column]
                continue
            np.right_shift(column, first, out=scratch)
            np.bitwise_and(scratch, (1 << count) - 1, out=scratch)
            key |= table[scratch]
    return key


def unpack(keys: np.ndarray, bitmap: BitMap, coord_dtype: np.dtype) -> np.ndarray:
    """Gather the bits of uint64 ``keys`` back into columns of shape ``(rank, n)``.

    Every key must be below ``2**(total bits of the map)``.
    """
    tables = _unpack_tables(bitmap, np.dtype(coord_dtype).str)
    key_bits = sum(len(p) for p in bitmap)
    columns = np.zeros((len(bitmap), keys.shape[0]), dtype=coord_dtype)
    piece = np.empty(keys.shape[0], dtype=np.uint64)
    for (first, count), table in zip(_pieces(key_bits), tables, strict=True):
        np.right_shift(keys, np.uint64(first), out=piece)
        # the top piece needs no mask: keys are below 2**key_bits by contract
        if first + count < key_bits:
            np.bitwise_and(piece, np.uint64((1 << count) - 1), out=piece)
        for d in range(len(bitmap)):
            # piece holds values below 2**count (at most 2**16): reinterpreting its
            # uint64 as intp (same width) indexes the table without a converted copy
            columns[d] |= table[d][piece.view(np.intp)]
    return columns


def store_columns(out: np.ndarray, columns: np.ndarray) -> None:
    """Write columns of shape ``(rank, n)`` into ``out`` of shape ``(n, rank)``, one at a time.

    Column by column is several times faster than one strided, casting write of ``columns.T``.
    """
    for d, column in enumerate(columns):
        out[:, d] = column


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
    # a 64-bit limit holds every value of the widest (uint64) index array
    if limit_bits < 64 and int(array.max()) >= (1 << limit_bits):
        raise LayoutError(f"{name} must be below 2**{limit_bits}, got {int(array.max())}")


def coordinate_dtype(bits: int) -> np.dtype:
    """The narrowest unsigned dtype of at least 16 bits that holds ``bits`` bits."""
    for dtype in (np.uint16, np.uint32):
        if bits <= np.iinfo(dtype).bits:
            return np.dtype(dtype)
    return np.dtype(np.uint64)
