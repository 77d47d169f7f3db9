"""Where the index of a new file goes, and its bytes packed from the chunks' offsets,
sizes and CRCs.  A new file is of the current format version (:data:`~.format.VERSION`),
whichever writer makes it.

Every writer of a new file lays it out the same way: the head (header, metadata,
root and page tables) at offset 0, the chunks after it in placement order (the
variables every open reads first, :attr:`HeadPlan.placed`), and the
index pages either in the head (so that opening the file reads them too) or after
the chunks, leaving out the pages that hold no stored chunk.  The head's length
depends on the metadata alone, so a writer that cannot seek back (a multipart
upload whose chunks other processes upload) reserves it first, puts the chunks
anywhere after it, and packs the head last.

A page's length depends on which chunks are stored, known only at the end: the head
reserves room for the pages up to the first :data:`~.format.HEAD_SIZE` bytes (no
more than the pages could take), and the pages go there when they fit, the rest of
the room left as zeros; otherwise the pages of the variables placed first (those
every open reads) go there as far as they fit, a variable's pages all together,
and the others follow the chunks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .checksum import Bytes, Places, crc32c
from .format import (
    HEAD_SIZE,
    HEADER_SIZE,
    INDEX_ENTRY,
    PAGE_ENTRIES,
    PAGE_REFERENCE,
    REFERENCE,
    Slot,
    pack_header,
)
from .front import placement_order
from .index import bound_page, full_page_lengths, pack_page, page_counts, set_page_reference
from .metadata import DatasetMeta


class HeadPlan:
    """Where the pieces of the head of a new file of ``metadata`` go.

    Parameters
    ----------
    metadata
        The dataset description.
    """

    def __init__(self, metadata: DatasetMeta) -> None:
        self.metadata = metadata
        self.metadata_bytes = metadata.to_bytes()
        self.variables = metadata.all_variables()
        """Every variable with its path, in variable number order (the root's)."""
        self.placed = placement_order(metadata)
        """The same, in the order their chunks follow the head: the variables every
        open reads first (:mod:`~.front`), so that the head's read covers them."""
        self.root_offset = HEADER_SIZE + len(self.metadata_bytes)
        self.table_offsets: dict[str, int] = {}
        """Offset of each variable's page table, by path."""
        position = self.root_offset + REFERENCE.itemsize * len(self.variables)
        for path, var in self.variables:
            self.table_offsets[path] = position
            position += -(-var.chunk_count // PAGE_ENTRIES) * PAGE_REFERENCE.itemsize
        self.page_bytes = sum(
            int(full_page_lengths(page_counts(var.chunk_count)).sum()) for _, var in self.variables
        )
        """Bytes of every page of every variable, every chunk stored: the most the
        pages can take."""
        self.page_offset = position
        """Where the pages start when they are in the head."""
        self.reserve = max(0, min(self.page_bytes, HEAD_SIZE - position))
        """Bytes the head keeps for the pages after the page tables."""
        self.length = position + self.reserve
        """Bytes of the head."""
        self.pages_may_follow = self.page_bytes > self.reserve
        """Whether the pages may go after the chunks: when they could take more than
        the room in the head (whether they do is known only at the end)."""


def version_slot(
    generation: int,
    metadata: tuple[int, bytes],
    root: tuple[int, bytes],
    file_length: int,
) -> Slot:
    """The header slot of a version whose metadata and index root are the bytes given,
    at the offsets given: how every writer finishes a version, a new file
    (:func:`pack_head`) and an update committed in place alike.

    Parameters
    ----------
    generation
        The version's number: 1 for a new file, one more than the base's for an update.
    metadata, root
        The offset and the bytes of the version's metadata and of its index root.
    file_length
        Where the version ends.
    """
    (metadata_offset, metadata_bytes), (root_offset, root_bytes) = metadata, root
    return Slot(
        generation=generation,
        metadata_offset=metadata_offset,
        metadata_length=len(metadata_bytes),
        metadata_crc32c=crc32c(metadata_bytes),
        root_offset=root_offset,
        root_length=len(root_bytes),
        root_crc32c=crc32c(root_bytes),
        file_length=file_length,
    )


@dataclass(frozen=True)
class PackedHead:
    """A new file's index, packed: ``head`` goes at offset 0 and ``pages`` (empty
    when the pages are in the head) right after the chunks."""

    head: bytes
    pages: bytes

    @property
    def front_pages(self) -> bool:
        """Whether the pages are in the head."""
        return not self.pages


def pack_head(plan: HeadPlan, entries: Mapping[str, np.ndarray], chunks_end: int) -> PackedHead:
    """The head and the trailing pages of a file whose chunks ``entries`` describe.

    Parameters
    ----------
    plan
        The head's plan.
    entries
        For each variable path, its index entries (``INDEX_ENTRY``) in placement
        order: absolute offset, size and CRC32C of each chunk, all zero for a
        missing chunk.
    chunks_end
        The offset just after the last chunk (and any bytes the writer left
        between chunks): where trailing pages start.  The file ends after them.

    Returns
    -------
    PackedHead
        ``plan.length`` bytes of head and the trailing pages.
    """
    pages: dict[str, list[tuple[int, np.ndarray]]] = {}
    for path, var in plan.variables:
        rows = np.ascontiguousarray(entries[path], dtype=INDEX_ENTRY)
        if len(rows) != var.chunk_count:
            raise ValueError(
                f"{len(rows)} index entries for the {var.chunk_count} chunks of {path!r}"
            )
        # a page of missing chunks only is left out: its table entry stays zero, which
        # reads as every chunk missing
        cut = (rows[first : first + PAGE_ENTRIES] for first in range(0, len(rows), PAGE_ENTRIES))
        pages[path] = [(page, own) for page, own in enumerate(cut) if own["size"].any()]
    return pack_pages(plan, pages, chunks_end)


def _pages_in_head(
    plan: HeadPlan, packed: Sequence[tuple[str, np.ndarray, int, bytes]]
) -> set[str]:
    """The variables whose pages go in the room the head keeps for them: every
    variable's when they all fit; else, in the order their chunks are placed (the
    variables every open reads first), each variable whose pages fit in the room
    its predecessors left.  A variable's pages stay together, back to back."""
    sizes: dict[str, int] = {}
    for path, _, _, data in packed:
        sizes[path] = sizes.get(path, 0) + len(data)
    if sum(sizes.values()) <= plan.reserve:
        return set(sizes)
    chosen, room = set(), plan.reserve
    for path, _ in plan.placed:
        if 0 < sizes.get(path, 0) <= room:
            chosen.add(path)
            room -= sizes[path]
    return chosen


def pack_pages(
    plan: HeadPlan, pages: Mapping[str, Iterable[tuple[int, np.ndarray]]], chunks_end: int
) -> PackedHead:
    """The head and the trailing pages of a file whose index pages are ``pages``: for
    a variable path, its pages in ascending order, each as its number and its entries
    (one ``INDEX_ENTRY`` per chunk position of the page, in placement order, holding
    the CRC-32C of each chunk's bytes, all zero for a missing chunk).  A page not given
    is absent (all its chunks missing), as are the pages of a variable not in
    ``pages``: so a grid of any number of chunks costs its page table and the pages
    given (see :func:`pack_head`).  The checksums of chunks, pages and page tables are
    bound to their places.

    Raises
    ------
    ValueError
        For a page out of order or outside the variable's grid, or whose entries are
        not one per position of the page.
    """
    root = np.zeros(len(plan.variables), dtype=REFERENCE)
    tables: list[np.ndarray] = []
    packed: list[tuple[str, np.ndarray, int, bytes]] = []  # (path, table, page, bytes)
    places: dict[str, Places] = {}
    for path, var in plan.variables:
        places[path] = own = Places(path, var.grid_shape)
        table = np.zeros(-(-var.chunk_count // PAGE_ENTRIES), dtype=PAGE_REFERENCE)
        last = -1
        for page, rows in pages.get(path, ()):
            count = min(PAGE_ENTRIES, var.chunk_count - page * PAGE_ENTRIES)
            if not last < page < len(table) or len(rows) != count:
                raise ValueError(
                    f"page {page} of {path!r} with {len(rows)} entries: the pages of its "
                    f"{len(table)} come in ascending order, each with an entry per position"
                )
            last = page
            packed.append((path, table, page, pack_page(bound_page(var, own, page, rows))))
        tables.append(table)
    in_head = _pages_in_head(plan, packed)
    head_pages = [item for item in packed if item[0] in in_head]
    trailing_pages = [item for item in packed if item[0] not in in_head]
    for pages_here, page_at in ((head_pages, plan.page_offset), (trailing_pages, chunks_end)):
        for path, table, page, data in pages_here:
            set_page_reference(table, page, page_at, data, places[path].page(page))
            page_at += len(data)
    for number, (path, _) in enumerate(plan.variables):
        if len(tables[number]):
            crc = crc32c(tables[number].data) ^ places[path].table
            root[number] = (plan.table_offsets[path], crc)
    root_bytes = root.tobytes()
    page_bytes = b"".join(data for _, _, _, data in head_pages)
    trailing = b"".join(data for _, _, _, data in trailing_pages)
    meta = plan.metadata_bytes
    slot = version_slot(
        1, (HEADER_SIZE, meta), (plan.root_offset, root_bytes), chunks_end + len(trailing)
    )
    # the tables as they lie in their arrays, joined once: a giant grid's table is
    # copied only into the head
    head: list[Bytes] = [pack_header(slot), meta, root_bytes, *(t.data for t in tables)]
    head.append(page_bytes)  # those of the pages that go in the head
    size = sum(memoryview(part).nbytes for part in head)
    # the plan promised this length before any chunk was placed after it
    assert size <= plan.length
    return PackedHead(b"".join([*head, bytes(plan.length - size)]), trailing)
