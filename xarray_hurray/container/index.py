"""The chunk index of a variable: offset, size and crc32c of every chunk.

Version 1.0: one index per variable, its entries in the row-major order of the chunk
grid (whatever the placement order of the bytes), then the crc32c of the entries.
Version 1.1: pages of :data:`PAGE_ENTRIES` entries in placement order, each checked
by the crc32c its page table records; page tables are found through the root.
"""

from __future__ import annotations

import struct

import numpy as np

from ..errors import HurrayFormatError
from .checksum import crc32c, verify
from .format import HEADER_SIZE_1_1, INDEX_ENTRY, PAGE_ENTRIES


def pack_index(entries: np.ndarray) -> bytes:
    """The bytes of an index given its entries (an array of :data:`INDEX_ENTRY`)."""
    body = np.ascontiguousarray(entries, dtype=INDEX_ENTRY).tobytes()
    return body + struct.pack("<I", crc32c(body))


def unpack_index(
    data: bytes, count: int, name: str, data_offset: int, file_length: int
) -> np.ndarray:
    """Parse and check the index of variable ``name`` holding ``count`` chunks.

    Every chunk must lie inside the data region ``[data_offset, file_length)``.

    Raises
    ------
    HurrayFormatError
        For a short index, a checksum mismatch or a chunk outside the data region.
    """
    expected = count * INDEX_ENTRY.itemsize + 4
    if len(data) != expected:
        raise HurrayFormatError(
            f"truncated index of variable {name!r}: {len(data)} of {expected} bytes"
        )
    (stored,) = struct.unpack_from("<I", data, expected - 4)
    verify(data[:-4], stored, f"the index of variable {name!r}")
    entries = np.frombuffer(data, dtype=INDEX_ENTRY, count=count)
    ends = entries["offset"] + entries["size"]
    outside = (entries["offset"] < data_offset) | (ends > file_length) | (ends < entries["offset"])
    if outside.any():
        bad = int(np.flatnonzero(outside)[0])
        raise HurrayFormatError(
            f"chunk {bad} of variable {name!r} at bytes [{entries['offset'][bad]}, "
            f"{ends[bad]}) lies outside the data region [{data_offset}, {file_length})"
        )
    return entries


def check_references(refs: np.ndarray, lengths: np.ndarray, what: str, file_length: int) -> None:
    """Check 1.1 references (root or page table entries) to parts of ``lengths`` bytes:
    a referenced part lies within ``[HEADER_SIZE_1_1, file_length)``; a reference of
    offset 0 (no part) has crc32c 0, and parts of length 0 are never referenced.

    Raises
    ------
    HurrayFormatError
        Naming ``what`` and the first bad reference.
    """
    offsets = refs["offset"].astype(np.uint64)
    lengths = lengths.astype(np.uint64)
    none = offsets == 0
    bad = (none & (refs["crc32c"] != 0)) | (~none & (lengths == 0))
    bad |= ~none & ((offsets < HEADER_SIZE_1_1) | (offsets > np.uint64(file_length) - lengths))
    bad |= ~none & (lengths > np.uint64(file_length))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise HurrayFormatError(
            f"{what} {k} refers to bytes [{int(offsets[k])}, {int(offsets[k] + lengths[k])}) "
            f"(crc32c {int(refs['crc32c'][k]):#010x}), not a part of the file's "
            f"{file_length} bytes"
        )


def unpack_page(data: bytes, count: int, crc: int, what: str, file_length: int) -> np.ndarray:
    """Parse and check a 1.1 index page of ``count`` entries whose crc32c is ``crc``.

    Raises
    ------
    HurrayFormatError
        For a short page, a checksum mismatch, a missing chunk entry that is not all
        zero or a stored chunk outside the file.
    """
    expected = count * INDEX_ENTRY.itemsize
    if len(data) != expected:
        raise HurrayFormatError(f"truncated {what}: {len(data)} of {expected} bytes")
    verify(data, crc, what)
    entries = np.frombuffer(data, dtype=INDEX_ENTRY, count=count)
    sizes = entries["size"]
    missing = sizes == 0
    bad = missing & ((entries["offset"] != 0) | (entries["crc32c"] != 0))
    ends = entries["offset"] + sizes
    bad |= ~missing & (
        (entries["offset"] < HEADER_SIZE_1_1) | (ends > file_length) | (ends < entries["offset"])
    )
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise HurrayFormatError(
            f"entry {k} of {what}: offset {int(entries['offset'][k])}, size {int(sizes[k])}, "
            f"crc32c {int(entries['crc32c'][k]):#010x} is neither a missing chunk (all zero) "
            f"nor a chunk inside the file's {file_length} bytes"
        )
    return entries


def page_lengths(chunk_count: int) -> np.ndarray:
    """Bytes of each index page of a variable of ``chunk_count`` chunks (1.1)."""
    pages = -(-chunk_count // PAGE_ENTRIES)
    counts = np.full(pages, PAGE_ENTRIES, dtype=np.int64)
    if pages:
        counts[-1] = chunk_count - PAGE_ENTRIES * (pages - 1)
    return counts * INDEX_ENTRY.itemsize
