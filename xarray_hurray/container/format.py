"""Constants and binary structures of the Hurray container.

Version 1.0: the fixed 64-byte header, the metadata (UTF-8 JSON), the index region
(one chunk index per variable, in variable order) and the chunk data, back to back.
Version 1.1: a 144-byte header of two slots, each locating the metadata and the root
of the index tree (root -> page table per variable -> pages of 1024 entries in
placement order -> chunks).  Version 1.2: the 1.1 layout, with pages that list only
the stored chunks after a bitmap, and page table entries that record each page's
length (:data:`PAGE_REFERENCE`).  All integers are little-endian.
``docs/spec/container.md`` is the normative description.
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

VERSION = (1, 2)
"""Format version ``(major, minor)`` written by this package.  A reader rejects files of
a later version than its own; a minor version adds to what a major version can hold,
so a newer reader still reads every earlier minor version of its major."""

HEAD_SIZE = 64 * 1024
"""Bytes fetched by a reader's first request."""

HEADER = struct.Struct("<8sHHIQQQQQI")
"""Header fields before its checksum: magic, major, minor, flags, metadata offset,
metadata length, index offset, index length, file length, metadata crc32c."""

HEADER_SIZE = HEADER.size + 4
"""The 1.0 header and its crc32c (from 1.1 on the header is :data:`SLOT_HEADER_SIZE`
bytes)."""

INDEX_ENTRY = np.dtype([("offset", "<u8"), ("size", "<u8"), ("crc32c", "<u4")])
"""One chunk in an index: absolute byte offset, stored size and crc32c of its bytes.
In 1.1, size 0 (with offset and crc32c 0) is a missing chunk: it reads as the fill."""

REFERENCE = np.dtype([("offset", "<u8"), ("crc32c", "<u4")])
"""A 1.1 entry of the root (a variable's page table) or of a page table (one page):
absolute offset and crc32c of the bytes referenced; offset 0 means none."""

PAGE_REFERENCE = np.dtype([("offset", "<u8"), ("length", "<u4"), ("crc32c", "<u4")])
"""A 1.2 page table entry: absolute offset, length and crc32c of one index page;
all three 0 for an absent page (every chunk of it missing)."""

PAGE_ENTRIES = 1024
"""Chunk positions per index page (1.1, 1.2); the last page of a variable may hold
fewer."""

MAX_PAGE_BYTES = PAGE_ENTRIES // 8 + PAGE_ENTRIES * INDEX_ENTRY.itemsize
"""Largest 1.2 page: a full bitmap and an entry for each of its chunks."""

PREFIX = struct.Struct("<8sHHI")
"""The first 16 bytes of a 1.1 (and 1.2) header: magic, major, minor, flags."""

SLOT = struct.Struct("<QQQQQQIII")
"""A 1.1 header slot before its crc32c: generation, metadata offset and length, root
offset and length, file length, metadata crc32c, root crc32c, reserved (0)."""

SLOT_SIZE = SLOT.size + 4
SLOT_HEADER_SIZE = PREFIX.size + 2 * SLOT_SIZE
"""The header of two slots, of every version from 1.1 on: its prefix and the slots."""

MAX_ROOT_BYTES = REFERENCE.itemsize * 2**20
"""Largest 1.1 root a reader accepts (about a million variables)."""


@dataclass(frozen=True)
class Header:
    """Where the parts of a file are.  Offsets are absolute, lengths in bytes."""

    metadata_offset: int
    metadata_length: int
    metadata_crc32c: int
    index_offset: int
    index_length: int
    file_length: int
    version: tuple[int, int] = (1, 0)

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
        """Parse and check the 1.0 header at the start of ``data``.

        Raises
        ------
        HurrayFormatError
            For a short file, a wrong magic number, a version other than 1.0, a
            header checksum mismatch or parts that do not follow each other.
        """
        major, minor = check_version(data)
        if minor != 0:
            raise HurrayFormatError(f"format version {major}.{minor} has no 1.0 header")
        if len(data) < HEADER_SIZE:
            raise HurrayFormatError(
                f"truncated header: {len(data)} bytes, a Hurray header has {HEADER_SIZE}"
            )
        fields = HEADER.unpack_from(data)
        flags = fields[3]
        (stored,) = struct.unpack_from("<I", data, HEADER.size)
        # the checksum first: a damaged header is reported as damage, not as whatever
        # field the damage happened to change
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
        header.check_offsets()
        return header

    def check_offsets(self) -> None:
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


def check_version(data: bytes) -> tuple[int, int]:
    """The ``(major, minor)`` version of the file starting with ``data``, after checking
    its magic number; the first check of every reader.

    Raises
    ------
    HurrayFormatError
        For data that does not start with the magic number, or a version this reader
        does not read (another major version, or a later minor one), naming it.
    """
    if data[: len(MAGIC)] != MAGIC:
        if len(data) < len(MAGIC) and MAGIC.startswith(data):
            raise HurrayFormatError(
                f"truncated header: {len(data)} bytes, a Hurray header has {HEADER_SIZE}"
            )
        raise HurrayFormatError(f"not a Hurray file: magic {data[:8]!r} != {MAGIC!r}")
    if len(data) < PREFIX.size:
        raise HurrayFormatError(
            f"truncated header: {len(data)} bytes, a Hurray header has {HEADER_SIZE}"
        )
    _, major, minor, _ = PREFIX.unpack_from(data)
    if major != VERSION[0] or minor > VERSION[1]:
        raise HurrayFormatError(
            f"unsupported format version {major}.{minor}; this reader reads versions "
            f"{VERSION[0]}.0 to {VERSION[0]}.{VERSION[1]}"
        )
    return major, minor


@dataclass(frozen=True)
class Slot:
    """One version of a 1.1 or 1.2 file: where its metadata and index root are, and
    how many bytes of the file it uses; ``version`` is the file's format version."""

    generation: int
    metadata_offset: int
    metadata_length: int
    metadata_crc32c: int
    root_offset: int
    root_length: int
    root_crc32c: int
    file_length: int
    version: tuple[int, int] = VERSION

    def pack(self, prefix: bytes) -> bytes:
        """The 64 bytes of this slot, sealed with the crc32c of ``prefix`` (the 16
        header bytes before the slots) and the slot's fields."""
        body = SLOT.pack(
            self.generation,
            self.metadata_offset,
            self.metadata_length,
            self.root_offset,
            self.root_length,
            self.file_length,
            self.metadata_crc32c,
            self.root_crc32c,
            0,
        )
        # the prefix is sealed into each slot: a slot copied under another version's
        # prefix fails its check
        return body + struct.pack("<I", crc32c(prefix + body))

    @classmethod
    def unpack(cls, prefix: bytes, data: bytes) -> Slot | None:
        """The slot held by ``data`` (64 bytes) if it is valid, else None."""
        body = data[: SLOT.size]
        (stored,) = struct.unpack_from("<I", data, SLOT.size)
        if crc32c(prefix + body) != stored:
            return None
        fields = SLOT.unpack(body)
        _, major, minor, _ = PREFIX.unpack(prefix)
        slot = cls(
            generation=fields[0],
            metadata_offset=fields[1],
            metadata_length=fields[2],
            root_offset=fields[3],
            root_length=fields[4],
            file_length=fields[5],
            metadata_crc32c=fields[6],
            root_crc32c=fields[7],
            version=(major, minor),
        )
        inside = all(
            SLOT_HEADER_SIZE <= offset and offset + length <= slot.file_length
            for offset, length in (
                (slot.metadata_offset, slot.metadata_length),
                (slot.root_offset, slot.root_length),
            )
        )
        # generation 0 is what an unused (all-zero) slot would hold: never valid
        return slot if fields[8] == 0 and slot.generation >= 1 and inside else None


def pack_slot_header(slot: Slot) -> bytes:
    """A header of version ``slot.version`` (1.1 or later) whose slot 0 is ``slot``
    and whose slot 1 is unused."""
    prefix = PREFIX.pack(MAGIC, *slot.version, 0)
    return prefix + slot.pack(prefix) + bytes(SLOT_SIZE)


def unpack_slot_header(data: bytes, size: int | None) -> Slot:
    """The active slot of the header of two slots (1.1 or later) at the start of
    ``data``, given the size of the file when known.

    The active slot is the valid one of the greater generation.  A damaged slot (not
    all zero and not valid) is accepted only beside a file longer than the active
    version: the trace of a commit that did not complete.

    Raises
    ------
    HurrayFormatError
        For a short header, flags other than 0, no valid slot, two valid slots of one
        generation, a damaged slot that no interrupted commit explains, a file shorter
        than the active version or metadata larger than a reader accepts.
    """
    if len(data) < SLOT_HEADER_SIZE:
        raise HurrayFormatError(
            f"truncated header: {len(data)} bytes, a header of two slots has {SLOT_HEADER_SIZE}"
        )
    _, major, minor, flags = PREFIX.unpack_from(data)
    prefix = data[: PREFIX.size]
    if flags != 0:
        raise HurrayFormatError(
            f"header flags must be 0 in version {major}.{minor}, got {flags:#x}"
        )
    raw = [data[PREFIX.size + k * SLOT_SIZE : PREFIX.size + (k + 1) * SLOT_SIZE] for k in (0, 1)]
    slots = [Slot.unpack(prefix, r) for r in raw]
    damaged = [k for k in (0, 1) if slots[k] is None and any(raw[k])]
    valid = [s for s in slots if s is not None]
    if not valid:
        raise HurrayFormatError(
            "damaged header: no valid slot (checksum mismatch or invalid fields)"
        )
    if len(valid) == 2 and valid[0].generation == valid[1].generation:
        raise HurrayFormatError(f"both header slots hold generation {valid[0].generation}")
    active = max(valid, key=lambda s: s.generation)
    if active.metadata_length > MAX_METADATA_BYTES:
        raise HurrayFormatError(
            f"metadata length {active.metadata_length} exceeds the {MAX_METADATA_BYTES} "
            "bytes a reader accepts"
        )
    if active.root_length > MAX_ROOT_BYTES or active.root_length % REFERENCE.itemsize:
        raise HurrayFormatError(
            f"root length {active.root_length} is not a multiple of {REFERENCE.itemsize} "
            f"up to {MAX_ROOT_BYTES}"
        )
    if size is not None and size < active.file_length:
        raise HurrayFormatError(
            f"the file has {size} bytes but its header records {active.file_length}: "
            "the file is truncated"
        )
    # A commit writes the new version's bytes after the active version's end, then its
    # slot: a torn slot write leaves a damaged slot beside a longer file.  With the file
    # exactly as long as the active version, no commit explains the damage.
    if damaged and (size is None or size == active.file_length):
        raise HurrayFormatError(
            f"header slot {damaged[0]} is damaged (checksum mismatch or invalid fields)"
        )
    return active
