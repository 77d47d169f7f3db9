"""The chunk index of a variable: pages of :data:`PAGE_ENTRIES` chunk positions in
placement order, found through the variable's page table, which the root references.

A page holds a bitmap of the stored chunks among its positions, then an entry
(offset, size, checksum) for each stored chunk only; a page table entry records its
page's offset, length and checksum.  The checksums of chunks, pages and page tables
are bound to their place (:class:`~.checksum.Places`): in memory an entry holds the
CRC-32C of its chunk's bytes, :func:`bound` gives what the file stores for it and,
applied to that, gives it back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import HurrayFormatError
from .checksum import Places, crc32c, extend_crc32c, verify, verify_crc
from .format import (
    HEADER_SIZE,
    INDEX_ENTRY,
    MAX_PAGE_BYTES,
    PAGE_ENTRIES,
    PAGE_REFERENCE,
)
from .metadata import VariableMeta


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
    to parts of ``lengths`` bytes: a referenced part lies within ``[HEADER_SIZE,
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
    bad |= ~none & ((offsets < HEADER_SIZE) | (offsets > np.uint64(file_length) - lengths))
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


def bound(entries: np.ndarray, places: np.ndarray) -> np.ndarray:
    """``entries`` (:data:`INDEX_ENTRY`) with the checksum of each stored chunk
    exclusive-or the place of its chunk (``places``, one per entry): what a file stores
    for entries holding the CRC-32C of their chunks' bytes, and those entries from what
    it stores (an exclusive or is its own inverse).  A missing chunk's entry stays all
    zero."""
    out: np.ndarray = np.array(entries, dtype=INDEX_ENTRY)
    out["crc32c"] ^= np.where(out["size"] != 0, places, 0).astype(np.uint32)
    return out


def bound_page(var: VariableMeta, places: Places, page: int, rows: np.ndarray) -> np.ndarray:
    """The entries ``rows`` of page ``page`` of ``var`` (one per chunk position, holding
    the CRC-32C of each chunk's bytes) as the file stores them: each stored chunk's
    checksum bound to its place among ``places``."""
    rows = np.ascontiguousarray(rows, dtype=INDEX_ENTRY)
    stored = np.flatnonzero(rows["size"])
    chunk_places = np.zeros(len(rows), dtype=np.uint32)
    if len(stored):
        chunk_places[stored] = places.chunks(var.chunk_ids(stored + page * PAGE_ENTRIES))
    return bound(rows, chunk_places)


def full_page_lengths(counts: np.ndarray) -> np.ndarray:
    """Bytes of pages of ``counts`` chunk positions each with every chunk stored: the
    most such pages take (a full bitmap and an entry per position)."""
    lengths: np.ndarray = counts * INDEX_ENTRY.itemsize + -(-counts // 8)
    return lengths


def pack_page(entries: np.ndarray) -> bytes:
    """The bytes of a page holding ``entries`` (as the file stores them, see
    :func:`bound`): one :data:`INDEX_ENTRY` per position of the page, all zero for a
    missing chunk.  The bitmap of the stored chunks (bit ``j % 8`` of byte ``j // 8``
    for position ``j``), then the entries of the stored chunks only."""
    entries = np.ascontiguousarray(entries, dtype=INDEX_ENTRY)
    stored = entries["size"] != 0
    return bytes(np.packbits(stored, bitorder="little").tobytes() + entries[stored].tobytes())


def set_page_reference(table: np.ndarray, page: int, offset: int, data: bytes, place: int) -> None:
    """Point entry ``page`` of the page ``table`` at the page ``data`` written at
    ``offset``, its checksum bound to the page's ``place``."""
    table["offset"][page] = offset
    table["length"][page] = len(data)
    table["crc32c"][page] = crc32c(data) ^ place


def unpack_page(
    data: bytes, count: int, *, length: int, crc: int, what: str, file_length: int
) -> np.ndarray:
    """Parse and check an index page of ``count`` chunk positions, referenced with
    ``length`` bytes and the checksum ``crc`` (unbound: the CRC-32C its bytes must
    have); one entry per position, as the file stores it, all zero for a missing
    chunk.

    Raises
    ------
    HurrayFormatError
        Naming ``what``: for a short page, a checksum mismatch, a bitmap bit set past
        the page's positions, a length that does not fit the bitmap, or a stored chunk
        that is empty or outside the file.
    """
    if len(data) != length:
        raise HurrayFormatError(f"truncated {what}: {len(data)} of {length} bytes")
    verify(data, crc, what, placed=True)
    bitmap = -(-count // 8)
    if length < bitmap:
        raise HurrayFormatError(f"{what} has {length} bytes, less than its {bitmap}-byte bitmap")
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
    _check_entries(listed_entries, what, file_length)
    entries = np.zeros(count, dtype=INDEX_ENTRY)
    entries[stored] = listed_entries
    return entries


def check_page_table(table: np.ndarray, what: str, file_length: int, first: int = 0) -> None:
    """Check the page table entries ``table`` (of pages ``first`` on, ``what`` naming
    them): an absent page (offset 0) has length and checksum 0, no page is longer than
    :data:`MAX_PAGE_BYTES` (checked before any page is read), and every page lies
    inside the file (see :func:`check_references`).

    Raises
    ------
    HurrayFormatError
        Naming ``what`` and the first bad reference.
    """
    lengths = table["length"].astype(np.int64)
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
    check_references(table, lengths, what, file_length, first=first)


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
        Their references (offset, length, checksum).
    """

    count: int
    pages: np.ndarray
    refs: np.ndarray

    @cached_property
    def lengths(self) -> np.ndarray:
        """Bytes of each present page."""
        return self.refs["length"].astype(np.int64)

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
    *,
    place: int,
    what: str,
    file_length: int,
) -> PageTable:
    """Read and check the page table of ``count`` pages at the root ``reference``
    (offset, checksum bound to the table's ``place``), :data:`TABLE_BLOCK` entries at a
    time, through ``read(start, stop)``.

    The checksum is taken over the blocks as they come; a structural problem found
    before the end is raised only once the checksum matched, so that damage is
    reported as damage, as for every other part.

    Raises
    ------
    HurrayFormatError
        Naming ``what``: a short table, a checksum mismatch (damage, or another
        variable's table), or the first bad page reference (see
        :func:`check_page_table`).
    """
    offset, crc = reference
    size = PAGE_REFERENCE.itemsize
    running = 0
    present, refs = [], []
    problem: HurrayFormatError | None = None
    for first in range(0, count, TABLE_BLOCK):
        n = min(TABLE_BLOCK, count - first)
        start = offset + first * size
        data = read(start, start + n * size)
        if len(data) != n * size:
            raise HurrayFormatError(
                f"truncated page table of {what}: bytes [{start}, {start + n * size})"
                f" returned {len(data)}"
            )
        running = extend_crc32c(running, data)
        if problem is not None:
            continue
        block = np.frombuffer(data, dtype=PAGE_REFERENCE)
        try:
            check_page_table(block, f"page of {what}", file_length, first)
        except HurrayFormatError as err:
            problem = err
            continue
        held = np.flatnonzero(block["offset"] != 0)
        present.append(held + first)
        refs.append(block[held])
    if count:  # a variable without chunks has no table: its reference is all zero
        verify_crc(running, crc ^ place, f"page table of {what}", placed=True)
    if problem is not None:
        raise problem
    return PageTable(
        count,
        np.concatenate(present or [np.empty(0, dtype=np.int64)]).astype(np.int64),
        np.concatenate(refs or [np.empty(0, dtype=PAGE_REFERENCE)]),
    )


def _check_entries(entries: np.ndarray, what: str, file_length: int) -> None:
    """Raise for the first of the ``entries`` a page lists that is not a stored chunk
    of at least one byte inside ``[HEADER_SIZE, file_length)``."""
    sizes = entries["size"]
    ends = entries["offset"] + sizes
    bad = (
        (sizes == 0)
        | (entries["offset"] < HEADER_SIZE)
        | (ends > file_length)
        | (ends < entries["offset"])
    )
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise HurrayFormatError(
            f"entry {k} of {what}: offset {int(entries['offset'][k])}, size {int(sizes[k])}, "
            f"crc32c {int(entries['crc32c'][k]):#010x} is not a stored chunk (at least one "
            f"byte) inside the file's {file_length} bytes"
        )
