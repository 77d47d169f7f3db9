"""Constants and binary structures of the Hurray container, format 1.3.

A file is a 144-byte header of two slots, each locating the metadata (UTF-8 JSON)
and the root of the index tree (root -> page table per variable -> pages in
placement order -> chunks); its parts lie anywhere after the header.  An index page
holds a bitmap of its stored chunks and their entries; a page table entry records
its page's offset, length and checksum (:data:`PAGE_REFERENCE`).  The checksums of
chunks, pages and page tables are bound to their place (:mod:`.checksum`).  All
integers are little-endian.  ``docs/spec/container.md`` is the normative
description.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ..errors import HurrayFormatError
from .checksum import crc32c
from .limits import MAX_METADATA_BYTES

MAGIC = b"\x89HURRAY\n"
"""The first eight bytes of every Hurray file."""

VERSION = (1, 3)
"""Format version ``(major, minor)`` written by this package.  A reader rejects files of
a later version than its own; a minor version adds to what a major version can hold,
so a newer reader reads every minor version of its major from the first release on."""

FIRST_RELEASE = (1, 3)
"""The first released version of the format: the minor versions before it (1.0 to
1.2) were drafts, which no reader reads."""

HEAD_SIZE = 64 * 1024
"""Bytes fetched by a reader's first request."""

INDEX_ENTRY = np.dtype([("offset", "<u8"), ("size", "<u8"), ("crc32c", "<u4")])
"""One chunk in an index: absolute byte offset, stored size and checksum of its bytes.
Size 0 (with offset and checksum 0) is a missing chunk: it reads as the fill."""

REFERENCE = np.dtype([("offset", "<u8"), ("crc32c", "<u4")])
"""An entry of the root: absolute offset and checksum of a variable's page table;
offset 0 means none."""

PAGE_REFERENCE = np.dtype([("offset", "<u8"), ("length", "<u4"), ("crc32c", "<u4")])
"""A page table entry: absolute offset, length and checksum of one index page; all
three 0 for an absent page (every chunk of it missing)."""

PAGE_ENTRIES = 1024
"""Chunk positions per index page; the last page of a variable may hold fewer."""

MAX_PAGE_BYTES = PAGE_ENTRIES // 8 + PAGE_ENTRIES * INDEX_ENTRY.itemsize
"""Largest page: a full bitmap and an entry for each of its chunks."""

PREFIX = struct.Struct("<8sHHI")
"""The first 16 bytes of the header: magic, major, minor, flags."""

SLOT = struct.Struct("<QQQQQQIII")
"""A header slot before its crc32c: generation, metadata offset and length, root
offset and length, file length, metadata crc32c, root crc32c, reserved (0)."""

SLOT_SIZE = SLOT.size + 4
HEADER_SIZE = PREFIX.size + 2 * SLOT_SIZE
"""The header: its prefix and its two slots."""

MAX_ROOT_BYTES = REFERENCE.itemsize * 2**20
"""Largest root a reader accepts (about a million variables)."""


def check_version(data: bytes) -> tuple[int, int]:
    """The ``(major, minor)`` version of the file starting with ``data``, after checking
    its magic number; the first check of every reader.

    Raises
    ------
    HurrayFormatError
        For data that does not start with the magic number, or a version this reader
        does not read (another major version, a later minor one, or a draft before
        :data:`FIRST_RELEASE`), naming it and what to do.
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
    if major == FIRST_RELEASE[0] and minor < FIRST_RELEASE[1]:
        raise HurrayFormatError(draft_refusal((major, minor)), value=(major, minor))
    if major != VERSION[0] or minor > VERSION[1]:
        reads = (
            f"version {_text(VERSION)}"
            if FIRST_RELEASE == VERSION
            else f"versions {_text(FIRST_RELEASE)} to {_text(VERSION)}"
        )
        later = (
            ": read it with a newer release of xarray-hurray" if (major, minor) > VERSION else ""
        )
        raise HurrayFormatError(
            f"unsupported format version {major}.{minor}; this reader reads {reads}{later}",
            value=(major, minor),
        )
    return major, minor


def draft_refusal(version: tuple[int, int]) -> str:
    """What a reader says of a file of the draft format ``version`` (before
    :data:`FIRST_RELEASE`), which no release reads or converts."""
    return (
        f"format version {_text(version)} is a draft of the Hurray format from before its "
        f"first release, {_text(FIRST_RELEASE)}: no release reads it and none converts it, "
        "as no draft was ever released.  Write the data again from its source, or open "
        "the file with the xarray-hurray that wrote it, save it as netCDF or Zarr and "
        "convert that (hurray convert)"
    )


def _text(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))


@dataclass(frozen=True)
class Slot:
    """One version of a file: where its metadata and index root are, and how many bytes
    of the file it uses; ``version`` is the file's format version."""

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
            HEADER_SIZE <= offset and offset + length <= slot.file_length
            for offset, length in (
                (slot.metadata_offset, slot.metadata_length),
                (slot.root_offset, slot.root_length),
            )
        )
        # generation 0 is what an unused (all-zero) slot would hold: never valid
        return slot if fields[8] == 0 and slot.generation >= 1 and inside else None


def pack_header(slot: Slot) -> bytes:
    """A header of version ``slot.version`` whose slot 0 is ``slot`` and whose slot 1
    is unused."""
    prefix = PREFIX.pack(MAGIC, *slot.version, 0)
    return prefix + slot.pack(prefix) + bytes(SLOT_SIZE)


def unpack_header(data: bytes, size: int | None) -> Slot:
    """The active slot of the header at the start of ``data``, given the size of the
    file when known.

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
    major, minor = check_version(data)
    if len(data) < HEADER_SIZE:
        raise HurrayFormatError(
            f"truncated header: {len(data)} bytes, a Hurray header has {HEADER_SIZE}"
        )
    flags = PREFIX.unpack_from(data)[3]
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
