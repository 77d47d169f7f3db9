"""Where the index of a new file (format 1.1 or 1.2) goes, and its bytes packed from
the chunks' offsets, sizes and CRCs.

Every writer of a new file lays it out the same way: the head (header, metadata,
root and page tables) at offset 0, the chunks after it in placement order, and the
index pages either in the head (so that opening the file reads them too) or after
the chunks, leaving out the pages that hold no stored chunk.  The head's length
depends on the metadata alone, so a writer that cannot seek back (a multipart
upload whose chunks other processes upload) reserves it first, puts the chunks
anywhere after it, and packs the head last.

In 1.1 a page's length is fixed, so the pages go in the head exactly when all of
them fit in the first :data:`~.format.HEAD_SIZE` bytes.  A 1.2 page's length depends
on which chunks are stored, known only at the end: the head reserves room for the
pages up to the first ``HEAD_SIZE`` bytes (no more than the pages could take), and
the pages go there when they fit, the rest of the room left as zeros; otherwise
they follow the chunks and the whole room stays zeros.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checksum import crc32c
from .format import (
    HEAD_SIZE,
    INDEX_ENTRY,
    PAGE_ENTRIES,
    REFERENCE,
    SLOT_HEADER_SIZE,
    VERSION,
    Slot,
    pack_slot_header,
)
from .index import pack_page, page_lengths, page_reference, set_reference
from .metadata import DatasetMeta


class HeadPlan:
    """Where the pieces of the head of ``metadata`` go.

    Parameters
    ----------
    metadata
        The dataset description.
    version
        The format version of the file: 1.1 or 1.2.
    """

    def __init__(self, metadata: DatasetMeta, version: tuple[int, int] = VERSION) -> None:
        self.metadata = metadata
        self.version = version
        self.metadata_bytes = metadata.to_bytes()
        self.variables = metadata.all_variables()
        self.root_offset = SLOT_HEADER_SIZE + len(self.metadata_bytes)
        self.table_offsets: dict[str, int] = {}
        """Offset of each variable's page table, by path."""
        position = self.root_offset + REFERENCE.itemsize * len(self.variables)
        reference = page_reference(version)
        for path, var in self.variables:
            self.table_offsets[path] = position
            position += len(page_lengths(var.chunk_count)) * reference.itemsize
        self.page_bytes = sum(
            int(page_lengths(var.chunk_count, version).sum()) for _, var in self.variables
        )
        """Bytes of every page of every variable, every chunk stored: the most the
        pages can take."""
        self.page_offset = position
        """Where the pages start when they are in the head."""
        if version < (1, 2):
            self.reserve = self.page_bytes if position + self.page_bytes <= HEAD_SIZE else 0
        else:
            self.reserve = max(0, min(self.page_bytes, HEAD_SIZE - position))
        """Bytes the head keeps for the pages after the page tables."""
        self.length = position + self.reserve
        """Bytes of the head."""
        self.pages_may_follow = self.page_bytes > self.reserve
        """Whether the pages may go after the chunks: when they could take more than
        the room in the head (in 1.2, whether they do is known only at the end)."""


def version_slot(
    generation: int,
    metadata: tuple[int, bytes],
    root: tuple[int, bytes],
    file_length: int,
    version: tuple[int, int],
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
    version
        The file's format version (an update keeps the base's).
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
        version=version,
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


def pack_head(plan: HeadPlan, entries: dict[str, np.ndarray], chunks_end: int) -> PackedHead:
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
    meta = plan.metadata_bytes
    root = np.zeros(len(plan.variables), dtype=REFERENCE)
    tables: list[np.ndarray] = []
    pages: list[tuple[np.ndarray, int, bytes]] = []  # (table, page number, bytes)
    for path, var in plan.variables:
        rows = np.ascontiguousarray(entries[path], dtype=INDEX_ENTRY)
        if len(rows) != var.chunk_count:
            raise ValueError(
                f"{len(rows)} index entries for the {var.chunk_count} chunks of {path!r}"
            )
        table = np.zeros(len(page_lengths(var.chunk_count)), dtype=page_reference(plan.version))
        for page in range(len(table)):
            chunk_rows = rows[page * PAGE_ENTRIES : (page + 1) * PAGE_ENTRIES]
            # a page of missing chunks only is left out (1.1 keeps it when the pages
            # are in the head): its table entry stays zero, which reads as every
            # chunk missing
            if chunk_rows["size"].any() or (plan.version < (1, 2) and plan.reserve):
                pages.append((table, page, pack_page(chunk_rows, plan.version)))
        tables.append(table)
    packed = sum(len(data) for _, _, data in pages)
    # the pages go in the head when they fit in the room kept for them (in 1.1 they
    # fill it exactly or it is empty); the bytes of the room they leave are zeros
    front = packed <= plan.reserve
    page_at = plan.page_offset if front else chunks_end
    for table, page, data in pages:
        set_reference(table, page, page_at, data)
        page_at += len(data)
    for number, (path, _) in enumerate(plan.variables):
        if len(tables[number]):
            root[number] = (plan.table_offsets[path], crc32c(tables[number].tobytes()))
    root_bytes = root.tobytes()
    page_bytes = b"".join(data for _, _, data in pages)
    trailing = b"" if front else page_bytes
    slot = version_slot(
        1,
        (SLOT_HEADER_SIZE, meta),
        (plan.root_offset, root_bytes),
        chunks_end + len(trailing),
        plan.version,
    )
    head = [pack_slot_header(slot), meta, root_bytes, *(t.tobytes() for t in tables)]
    if front:
        head.append(page_bytes)
    packed_head = b"".join(head)
    # the plan promised this length before any chunk was placed after it
    assert len(packed_head) <= plan.length
    return PackedHead(packed_head + bytes(plan.length - len(packed_head)), trailing)
