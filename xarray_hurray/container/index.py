"""The chunk index of a variable: offset, size and crc32c of every chunk.

The entries follow the row-major order of the chunk grid (whatever the placement
order of the bytes), then comes the crc32c of the entries.
"""

from __future__ import annotations

import struct

import numpy as np

from ..errors import HurrayFormatError
from .checksum import crc32c, verify
from .format import INDEX_ENTRY


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
