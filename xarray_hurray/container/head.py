"""Where the index of a new 1.1 file goes, and its bytes packed from the chunks'
offsets, sizes and CRCs.

Every writer of a new file lays it out the same way: the head (header, metadata,
root and page tables) at offset 0, the chunks after it in placement order, and the
index pages either in the head (when the whole head still fits in the first
:data:`~.format.HEAD_SIZE` bytes, so that opening the file reads them too) or after
the chunks, leaving out the pages that hold no stored chunk.  The head's length
depends on the metadata alone, so a writer that cannot seek back (a multipart
upload whose chunks other processes upload) reserves it first, puts the chunks
anywhere after it, and packs the head last.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checksum import crc32c
from .format import (
    HEAD_SIZE,
    HEADER_SIZE_1_1,
    INDEX_ENTRY,
    PAGE_ENTRIES,
    REFERENCE,
    Slot,
    pack_header_1_1,
)
from .index import page_lengths
from .metadata import DatasetMeta


class HeadLayout:
    """Where the pieces of the head of ``metadata`` go.

    Parameters
    ----------
    metadata
        The dataset description.
    """

    def __init__(self, metadata: DatasetMeta) -> None:
        self.metadata = metadata
        self.metadata_bytes = metadata.to_bytes()
        self.variables = metadata.all_variables()
        self.root_offset = HEADER_SIZE_1_1 + len(self.metadata_bytes)
        self.table_offsets: dict[str, int] = {}
        """Offset of each variable's page table, by path."""
        position = self.root_offset + REFERENCE.itemsize * len(self.variables)
        for path, var in self.variables:
            self.table_offsets[path] = position
            position += len(page_lengths(var.chunk_count)) * REFERENCE.itemsize
        self.page_bytes = sum(int(page_lengths(var.chunk_count).sum()) for _, var in self.variables)
        """Bytes of every page of every variable."""
        self.front_pages = position + self.page_bytes <= HEAD_SIZE
        """Whether the pages go in the head (all of them) rather than after the chunks
        (those holding a stored chunk)."""
        self.page_offset = position
        """Where the pages start when they are in the head."""
        self.length = position + (self.page_bytes if self.front_pages else 0)
        """Bytes of the head."""


@dataclass(frozen=True)
class PackedIndex:
    """A new file's index, packed: ``head`` goes at offset 0 and ``pages`` (empty
    when the pages are in the head) right after the chunks."""

    head: bytes
    pages: bytes


def pack_index(layout: HeadLayout, entries: dict[str, np.ndarray], chunks_end: int) -> PackedIndex:
    """The head and the trailing pages of a file whose chunks ``entries`` describe.

    Parameters
    ----------
    layout
        The head's layout.
    entries
        For each variable path, its index entries (``INDEX_ENTRY``) in placement
        order: absolute offset, size and CRC32C of each chunk, all zero for a
        missing chunk.
    chunks_end
        The offset just after the last chunk (and any bytes the writer left
        between chunks): where trailing pages start.  The file ends after them.

    Returns
    -------
    PackedIndex
        ``layout.length`` bytes of head and the trailing pages.
    """
    meta = layout.metadata_bytes
    root = np.zeros(len(layout.variables), dtype=REFERENCE)
    tables: list[bytes] = []
    pages: list[bytes] = []
    page_at = layout.page_offset if layout.front_pages else chunks_end
    for number, (path, var) in enumerate(layout.variables):
        rows = np.ascontiguousarray(entries[path], dtype=INDEX_ENTRY)
        if len(rows) != var.chunk_count:
            raise ValueError(
                f"{len(rows)} index entries for the {var.chunk_count} chunks of {path!r}"
            )
        table = np.zeros(len(page_lengths(var.chunk_count)), dtype=REFERENCE)
        for page in range(len(table)):
            chunk_rows = rows[page * PAGE_ENTRIES : (page + 1) * PAGE_ENTRIES]
            # after the chunks, a page of missing chunks only is left out: its
            # table entry stays zero, which reads as every chunk missing
            if not layout.front_pages and not chunk_rows["size"].any():
                continue
            data = chunk_rows.tobytes()
            table[page] = (page_at, crc32c(data))
            pages.append(data)
            page_at += len(data)
        if len(table):
            root[number] = (layout.table_offsets[path], crc32c(table.tobytes()))
        tables.append(table.tobytes())
    root_bytes = root.tobytes()
    trailing = b"" if layout.front_pages else b"".join(pages)
    slot = Slot(
        generation=1,
        metadata_offset=HEADER_SIZE_1_1,
        metadata_length=len(meta),
        metadata_crc32c=crc32c(meta),
        root_offset=layout.root_offset,
        root_length=len(root_bytes),
        root_crc32c=crc32c(root_bytes),
        file_length=chunks_end + len(trailing),
    )
    head = [pack_header_1_1(slot), meta, root_bytes, *tables]
    if layout.front_pages:
        head += pages
    packed = b"".join(head)
    # the layout promised this length before any chunk was placed after it
    assert len(packed) == layout.length
    return PackedIndex(packed, trailing)
