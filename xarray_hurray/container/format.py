"""Constants and binary structures of the Hurray container.

A file is, in order: the fixed 64-byte header, the metadata (UTF-8 JSON), the index
region (one chunk index per variable, in variable order) and the chunk data.  All
integers are little-endian.  ``docs/spec/container.md`` is the normative description.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ..errors import HurrayFormatError
from .checksum import crc32c, verify
from .limits import MAX_METADATA_BYTES

MAGIC = b"\x89HURRAY\n"
"""The first eight bytes of every Hurray file."""

VERSION = (1, 0)
"""Format version ``(major, minor)`` written by this package.  A reader rejects files of
a later version than its own; a minor version adds to what a major version can hold,
so a newer reader still reads every earlier minor version of its major."""

HEAD_SIZE = 64 * 1024
"""Bytes fetched by a reader's first request."""

HEADER = struct.Struct("<8sHHIQQQQQI")
"""Header fields before its checksum: magic, major, minor, flags, metadata offset,
metadata length, index offset, index length, file length, metadata crc32c."""

HEADER_SIZE = HEADER.size + 4
"""The header and its crc32c."""

INDEX_ENTRY = np.dtype([("offset", "<u8"), ("size", "<u8"), ("crc32c", "<u4")])
"""One chunk in an index: absolute byte offset, stored size and crc32c of its bytes."""


@dataclass(frozen=True)
class Header:
    """Where the parts of a file are.  Offsets are absolute, lengths in bytes."""

    metadata_offset: int
    metadata_length: int
    metadata_crc32c: int
    index_offset: int
    index_length: int
    file_length: int
    version: tuple[int, int] = VERSION

    def pack(self) -> bytes:
        """The 64 header bytes, checksum included."""
        body = HEADER.pack(
            MAGIC,
            *self.version,
            0,
            self.metadata_offset,
            self.metadata_length,
            self.index_offset,
            self.index_length,
            self.file_length,
            self.metadata_crc32c,
        )
        return body + struct.pack("<I", crc32c(body))

    @classmethod
    def unpack(cls, data: bytes) -> Header:
        """Parse and check the header at the start of ``data``.

        Raises
        ------
        HurrayFormatError
            For a short file, a wrong magic number, an unknown major version, a
            header checksum mismatch or parts that do not follow each other.
        """
        if len(data) < HEADER_SIZE:
            if not MAGIC.startswith(data[: len(MAGIC)]):
                raise HurrayFormatError(f"not a Hurray file: magic {data[:8]!r} != {MAGIC!r}")
            raise HurrayFormatError(
                f"truncated header: {len(data)} bytes, a Hurray header has {HEADER_SIZE}"
            )
        fields = HEADER.unpack_from(data)
        magic, major, minor, flags = fields[:4]
        if magic != MAGIC:
            raise HurrayFormatError(f"not a Hurray file: magic {magic!r} != {MAGIC!r}")
        if major != VERSION[0] or minor > VERSION[1]:
            raise HurrayFormatError(
                f"unsupported format version {major}.{minor}; this reader reads versions "
                f"{VERSION[0]}.0 to {VERSION[0]}.{VERSION[1]}"
            )
        (stored,) = struct.unpack_from("<I", data, HEADER.size)
        verify(data[: HEADER.size], stored, "header")
        if flags != 0:
            raise HurrayFormatError(f"header flags must be 0 in version {major}, got {flags:#x}")
        header = cls(
            metadata_offset=fields[4],
            metadata_length=fields[5],
            index_offset=fields[6],
            index_length=fields[7],
            file_length=fields[8],
            metadata_crc32c=fields[9],
            version=(major, minor),
        )
        header.check_layout()
        return header

    def check_layout(self) -> None:
        """Check that header, metadata and index follow each other inside the file."""
        if self.metadata_offset != HEADER_SIZE:
            raise HurrayFormatError(
                f"metadata offset {self.metadata_offset} != header size {HEADER_SIZE}"
            )
        if self.metadata_length > MAX_METADATA_BYTES:
            raise HurrayFormatError(
                f"metadata length {self.metadata_length} exceeds the {MAX_METADATA_BYTES} "
                "bytes a reader accepts"
            )
        if self.index_offset != self.metadata_offset + self.metadata_length:
            raise HurrayFormatError(
                f"index offset {self.index_offset} does not follow the metadata, which ends "
                f"at {self.metadata_offset + self.metadata_length}"
            )
        if self.data_offset > self.file_length:
            raise HurrayFormatError(
                f"index ends at {self.data_offset}, after the end of the file "
                f"({self.file_length} bytes)"
            )

    @property
    def data_offset(self) -> int:
        """Where the chunk data begins."""
        return self.index_offset + self.index_length
