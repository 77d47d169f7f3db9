"""The chunk index of a variable: offset, size and crc32c of every chunk.

Version 1.0: one index per variable, its entries in the row-major order of the chunk
grid (whatever the placement order of the bytes), then the crc32c of the entries.
From 1.1: pages of :data:`PAGE_ENTRIES` entries in placement order, each checked by
the crc32c its page table records; page tables are found through the root.  How a
page and its page table entry are laid out is the one thing 1.1 and 1.2 differ in, a
:class:`PageFormat` of each version (:func:`page_format`): 1.1 pages hold every
entry (:class:`FixedPages`); a 1.2 page holds a bitmap of the stored chunks among
its positions, then the entries of those chunks only, and its page table entry
records its length (:class:`ListedPages`).
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import HurrayFormatError
from .checksum import crc32c, extend_crc32c, verify, verify_crc
from .format import (
    INDEX_ENTRY,
    MAX_PAGE_BYTES,
    PAGE_ENTRIES,
    PAGE_REFERENCE,
    REFERENCE,
    SLOT_HEADER_SIZE,
)


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


def check_references(
    refs: np.ndarray,
    lengths: np.ndarray,
    what: str,
    file_length: int,
    *,
    first: int = 0,
    absent: bool = True,
    names: Sequence[str] | None = None,
) -> None:
    """Check the references of a root or a page table (entries numbered from ``first``)
    to parts of ``lengths`` bytes: a referenced part lies within ``[SLOT_HEADER_SIZE,
    file_length)``; a reference of offset 0 (no part) has crc32c 0, and parts of length
    0 are never referenced.  Offset 0 stands for a part that is absent (an index page
    of missing chunks) where ``absent``; otherwise (the root) only for a part of length
    0 (the page table of a variable without chunks), so that nothing is ever sized by a
    part that was never checked.  ``names`` names each reference, instead of ``what``
    and its number.

    Raises
    ------
    HurrayFormatError
        Naming ``what`` and the first bad reference.
    """
    offsets = refs["offset"].astype(np.uint64)
    lengths = lengths.astype(np.uint64)
    none = offsets == 0
    bad = (none & (refs["crc32c"] != 0)) | (~none & (lengths == 0))
    bad |= ~none & ((offsets < SLOT_HEADER_SIZE) | (offsets > np.uint64(file_length) - lengths))
    bad |= ~none & (lengths > np.uint64(file_length))
    missing = none & (lengths != 0) if not absent else np.zeros(len(refs), dtype=bool)
    bad |= missing
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        name = f"{what} {first + k}" if names is None else names[k]
        if missing[k]:
            raise HurrayFormatError(
                f"{name} is at offset 0 (none), but it has {int(lengths[k])} bytes: only a "
                "variable without chunks has no page table"
            )
        raise HurrayFormatError(
            f"{name} refers to bytes [{int(offsets[k])}, "
            f"{int(offsets[k] + lengths[k])}) (crc32c {int(refs['crc32c'][k]):#010x}), not a "
            f"part of the file's {file_length} bytes"
        )


def page_counts(chunk_count: int, pages: np.ndarray | None = None) -> np.ndarray:
    """Chunk positions on each index page of a variable of ``chunk_count`` chunks, or on
    the pages numbered ``pages``."""
    if pages is None:
        pages = np.arange(-(-chunk_count // PAGE_ENTRIES), dtype=np.int64)
    counts: np.ndarray = np.minimum(PAGE_ENTRIES, chunk_count - PAGE_ENTRIES * pages)
    return counts.astype(np.int64)


class PageFormat(ABC):
    """How the index pages of one format version (1.1 or later) and the page table
    entries referencing them are laid out: packed, parsed and checked.

    Attributes
    ----------
    version
        The format version.
    reference
        The dtype of a page table entry.
    """

    version: tuple[int, int]
    reference: np.dtype

    @abstractmethod
    def full_lengths(self, counts: np.ndarray) -> np.ndarray:
        """Bytes of pages of ``counts`` chunk positions each with every chunk stored:
        the most such pages take."""

    @abstractmethod
    def lengths(self, table: np.ndarray, chunk_count: int, first: int = 0) -> np.ndarray:
        """Bytes of each page that the page table entries ``table`` (of pages ``first``
        on) of a variable of ``chunk_count`` chunks reference."""

    @abstractmethod
    def pack(self, entries: np.ndarray) -> bytes:
        """The bytes of a page holding ``entries``: one :data:`INDEX_ENTRY` per position
        of the page, all zero for a missing chunk."""

    @abstractmethod
    def _parse(self, data: bytes, count: int, what: str, file_length: int) -> np.ndarray:
        """The entries of the page ``data`` (its length and crc32c checked) of ``count``
        positions, checked (see :meth:`unpack`)."""

    def unpack(
        self, data: bytes, count: int, *, length: int, crc: int, what: str, file_length: int
    ) -> np.ndarray:
        """Parse and check an index page of ``count`` chunk positions, referenced with
        ``length`` bytes and crc32c ``crc``; one entry per position, all zero for a
        missing chunk.

        Raises
        ------
        HurrayFormatError
            Naming ``what``: for a short page, a checksum mismatch, a page whose layout
            does not fit its positions (see the subclasses), or a stored chunk that is
            empty or outside the file.
        """
        if len(data) != length:
            raise HurrayFormatError(f"truncated {what}: {len(data)} of {length} bytes")
        verify(data, crc, what)
        return self._parse(data, count, what, file_length)

    def set_reference(self, table: np.ndarray, page: int, offset: int, data: bytes) -> None:
        """Point entry ``page`` of the page ``table`` at the page ``data`` written at
        ``offset``."""
        table["offset"][page] = offset
        table["crc32c"][page] = crc32c(data)

    def check_table(
        self, table: np.ndarray, chunk_count: int, what: str, file_length: int, first: int = 0
    ) -> np.ndarray:
        """Check the page table entries ``table`` (of pages ``first`` on, ``what`` naming
        them) of a variable of ``chunk_count`` chunks: every page lies inside the file
        (see :func:`check_references`); the length of each page they reference.

        Raises
        ------
        HurrayFormatError
            Naming ``what`` and the first bad reference.
        """
        lengths = self.lengths(table, chunk_count, first)
        check_references(table, lengths, what, file_length, first=first)
        return lengths


class FixedPages(PageFormat):
    """Pages of format 1.1: every entry of the page's positions, 20 bytes each, missing
    chunks included (all zero); a page table entry is :data:`REFERENCE` (offset,
    crc32c), the page's length following from its positions."""

    version = (1, 1)
    reference = REFERENCE

    def full_lengths(self, counts: np.ndarray) -> np.ndarray:
        lengths: np.ndarray = counts * INDEX_ENTRY.itemsize
        return lengths

    def lengths(self, table: np.ndarray, chunk_count: int, first: int = 0) -> np.ndarray:
        pages = np.arange(first, first + len(table), dtype=np.int64)
        return self.full_lengths(page_counts(chunk_count, pages))

    def pack(self, entries: np.ndarray) -> bytes:
        return bytes(np.ascontiguousarray(entries, dtype=INDEX_ENTRY).tobytes())

    def _parse(self, data: bytes, count: int, what: str, file_length: int) -> np.ndarray:
        """Raises for a page whose length is not that of ``count`` entries, or a missing
        chunk's entry that is not all zero."""
        if len(data) != count * INDEX_ENTRY.itemsize:
            raise HurrayFormatError(
                f"{what} has {len(data)} bytes, {count} entries take {count * INDEX_ENTRY.itemsize}"
            )
        entries = np.frombuffer(data, dtype=INDEX_ENTRY, count=count)
        _check_entries(entries, entries["size"] == 0, what, file_length)
        return entries


class ListedPages(PageFormat):
    """Pages of format 1.2: the bitmap of the stored chunks (bit ``j % 8`` of byte
    ``j // 8`` for position ``j``), then the entries of the stored chunks only; a page
    table entry is :data:`PAGE_REFERENCE` (offset, length, crc32c), all zero for an
    absent page."""

    version = (1, 2)
    reference = PAGE_REFERENCE

    def full_lengths(self, counts: np.ndarray) -> np.ndarray:
        lengths: np.ndarray = counts * INDEX_ENTRY.itemsize + -(-counts // 8)
        return lengths

    def lengths(self, table: np.ndarray, chunk_count: int, first: int = 0) -> np.ndarray:
        return table["length"].astype(np.int64)

    def pack(self, entries: np.ndarray) -> bytes:
        entries = np.ascontiguousarray(entries, dtype=INDEX_ENTRY)
        stored = entries["size"] != 0
        return bytes(np.packbits(stored, bitorder="little").tobytes() + entries[stored].tobytes())

    def _parse(self, data: bytes, count: int, what: str, file_length: int) -> np.ndarray:
        """Raises for a bitmap bit set past the page's positions or a length that does
        not fit the bitmap."""
        length, bitmap = len(data), -(-count // 8)
        if length < bitmap:
            raise HurrayFormatError(
                f"{what} has {length} bytes, less than its {bitmap}-byte bitmap"
            )
        bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8, count=bitmap), bitorder="little")
        if bits[count:].any():
            j = count + int(np.flatnonzero(bits[count:])[0])
            raise HurrayFormatError(
                f"{what}: bitmap bit {j} is set, past the page's {count} chunk positions"
            )
        stored = bits[:count].astype(bool)
        listed = int(stored.sum())
        if length != bitmap + listed * INDEX_ENTRY.itemsize:
            raise HurrayFormatError(
                f"{what} has page_length {length}; its bitmap lists {listed} stored chunks, "
                f"which take {bitmap + listed * INDEX_ENTRY.itemsize} bytes"
            )
        listed_entries = np.frombuffer(data, dtype=INDEX_ENTRY, count=listed, offset=bitmap)
        # numbered as listed on the page: the k-th entry after the bitmap
        _check_entries(listed_entries, None, what, file_length)
        entries = np.zeros(count, dtype=INDEX_ENTRY)
        entries[stored] = listed_entries
        return entries

    def set_reference(self, table: np.ndarray, page: int, offset: int, data: bytes) -> None:
        super().set_reference(table, page, offset, data)
        table["length"][page] = len(data)

    def check_table(
        self, table: np.ndarray, chunk_count: int, what: str, file_length: int, first: int = 0
    ) -> np.ndarray:
        """Also: an absent page (offset 0) has length 0 and no page is longer than
        :data:`MAX_PAGE_BYTES`, checked before any page is read."""
        lengths = self.lengths(table, chunk_count, first)
        too_long = lengths > MAX_PAGE_BYTES
        bad = too_long | ((table["offset"] == 0) & (lengths != 0))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            why = (
                f"exceeds the largest page ({MAX_PAGE_BYTES} bytes)"
                if too_long[k]
                else "is not 0 for an absent page (offset 0)"
            )
            raise HurrayFormatError(f"{what} {first + k}: its page_length {int(lengths[k])} {why}")
        return super().check_table(table, chunk_count, what, file_length, first)


PAGE_FORMATS: dict[tuple[int, int], PageFormat] = {
    pages.version: pages for pages in (FixedPages(), ListedPages())
}
"""The page format of each version from 1.1 on."""


def page_format(version: tuple[int, int]) -> PageFormat:
    """The page format of format ``version`` (1.1 or later)."""
    return PAGE_FORMATS[version]


TABLE_BLOCK = 2**20
"""Page table entries read and checked at once (16 MiB in 1.2)."""


@dataclass(frozen=True)
class PageTable:
    """The checked page table of a variable, as the pages it references: the present
    ones only, so that the absent pages of a giant grid of missing chunks cost nothing
    once their table is checked.

    Attributes
    ----------
    count
        Pages of the variable, present or absent.
    pages
        The numbers of the present pages, ascending.
    refs
        Their references (offset, crc32c and, from 1.2, length).
    lengths
        Bytes of each present page.
    """

    count: int
    pages: np.ndarray
    refs: np.ndarray
    lengths: np.ndarray

    @cached_property
    def present_bytes(self) -> int:
        """Bytes of every present page together."""
        return int(self.lengths.sum())

    def find(self, pages: np.ndarray) -> np.ndarray:
        """The row in :attr:`refs` of each of ``pages``; -1 for an absent page."""
        pages = np.asarray(pages, dtype=np.int64)
        if not len(self.pages):
            return np.full(pages.shape, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.pages, pages), len(self.pages) - 1)
        found: np.ndarray = np.where(self.pages[at] == pages, at, -1)
        return found

    def dense(self) -> np.ndarray:
        """The table as stored: a reference per page, zero for an absent page."""
        table = np.zeros(self.count, dtype=self.refs.dtype)
        table[self.pages] = self.refs
        return table


def read_page_table(
    read: Callable[[int, int], bytes],
    reference: tuple[int, int],
    count: int,
    chunk_count: int,
    *,
    pages: PageFormat,
    what: str,
    file_length: int,
) -> PageTable:
    """Read and check the page table of ``count`` pages at the root ``reference``
    (offset, crc32c) of a variable of ``chunk_count`` chunks, :data:`TABLE_BLOCK`
    entries at a time, through ``read(start, stop)``.

    The checksum is taken over the blocks as they come; a structural problem found
    before the end is raised only once the checksum matched, so that damage is
    reported as damage, as for every other part.

    Raises
    ------
    HurrayFormatError
        Naming ``what``: a short table, a checksum mismatch, or the first bad page
        reference (see :meth:`PageFormat.check_table`).
    """
    dtype = pages.reference
    offset, crc = reference
    running = 0
    present, refs, lengths = [], [], []
    problem: HurrayFormatError | None = None
    for first in range(0, count, TABLE_BLOCK):
        n = min(TABLE_BLOCK, count - first)
        start = offset + first * dtype.itemsize
        data = read(start, start + n * dtype.itemsize)
        if len(data) != n * dtype.itemsize:
            raise HurrayFormatError(
                f"truncated page table of {what}: bytes [{start}, {start + n * dtype.itemsize})"
                f" returned {len(data)}"
            )
        running = extend_crc32c(running, data)
        if problem is not None:
            continue
        block = np.frombuffer(data, dtype=dtype)
        try:
            block_lengths = pages.check_table(
                block, chunk_count, f"page of {what}", file_length, first
            )
        except HurrayFormatError as err:
            problem = err
            continue
        held = np.flatnonzero(block["offset"] != 0)
        present.append(held + first)
        refs.append(block[held])
        lengths.append(block_lengths[held])
    verify_crc(running, crc, f"page table of {what}")
    if problem is not None:
        raise problem
    return PageTable(
        count,
        np.concatenate(present or [np.empty(0, dtype=np.int64)]).astype(np.int64),
        np.concatenate(refs or [np.empty(0, dtype=dtype)]),
        np.concatenate(lengths or [np.empty(0, dtype=np.int64)]).astype(np.int64),
    )


def _check_entries(
    entries: np.ndarray, missing: np.ndarray | None, what: str, file_length: int
) -> None:
    """Raise for the first bad entry: one that is not a stored chunk of at least one
    byte inside ``[SLOT_HEADER_SIZE, file_length)``, except, on a page of every entry
    (1.1), where ``missing`` (the entries of size 0) it must be all zero.  ``missing``
    is None for the entries a 1.2 page lists, which are all stored chunks."""
    sizes = entries["size"]
    ends = entries["offset"] + sizes
    outside = (
        (sizes == 0)
        | (entries["offset"] < SLOT_HEADER_SIZE)
        | (ends > file_length)
        | (ends < entries["offset"])
    )
    if missing is None:
        bad = outside
        rule = "not a stored chunk (at least one byte)"
    else:
        bad = np.where(missing, (entries["offset"] != 0) | (entries["crc32c"] != 0), outside)
        rule = "neither a missing chunk (all zero) nor a chunk"
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise HurrayFormatError(
            f"entry {k} of {what}: offset {int(entries['offset'][k])}, size {int(sizes[k])}, "
            f"crc32c {int(entries['crc32c'][k]):#010x} is {rule} inside the file's "
            f"{file_length} bytes"
        )
