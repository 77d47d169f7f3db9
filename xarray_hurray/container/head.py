"""The head of a 1.1 file written after its chunks: header, metadata, root, page
tables and every index page, at the start of the file.

A writer that cannot seek back (a multipart upload whose chunks other processes
upload) reserves :attr:`HeadLayout.length` bytes at the start, puts the chunks
anywhere after, and packs the head last from the chunks' offsets, sizes and CRCs.
Its length depends on the metadata alone: every page is in the head, whether it
holds a stored chunk or not.
"""

from __future__ import annotations

import numpy as np

from .checksum import crc32c
from .format import HEADER_SIZE_1_1, INDEX_ENTRY, PAGE_ENTRIES, REFERENCE, Slot, pack_header_1_1
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
        # page tables after the root, then every page
        self.table_offset = self.root_offset + REFERENCE.itemsize * len(self.variables)
        counts = [var.chunk_count for _, var in self.variables]
        tables = sum(len(page_lengths(n)) for n in counts) * REFERENCE.itemsize
        self.page_offset = self.table_offset + tables
        self.length = self.page_offset + sum(counts) * INDEX_ENTRY.itemsize
        """Bytes of the head."""


def pack_head(layout: HeadLayout, entries: dict[str, np.ndarray], file_length: int) -> bytes:
    """The head of a file of ``file_length`` bytes whose chunks ``entries`` describe.

    Parameters
    ----------
    layout
        The head's layout.
    entries
        For each variable path, its index entries (``INDEX_ENTRY``) in placement
        order: absolute offset, size and CRC32C of each chunk, all zero for a
        missing chunk.
    file_length
        The length of the whole file.

    Returns
    -------
    bytes
        ``layout.length`` bytes, to be stored at offset 0.
    """
    meta = layout.metadata_bytes
    variables = layout.variables
    root = np.zeros(len(variables), dtype=REFERENCE)
    tables: list[bytes] = []
    pages: list[bytes] = []
    table_at = layout.table_offset
    page_at = layout.page_offset
    for number, (path, var) in enumerate(variables):
        rows = np.ascontiguousarray(entries[path], dtype=INDEX_ENTRY)
        if len(rows) != var.chunk_count:
            raise ValueError(
                f"{len(rows)} index entries for the {var.chunk_count} chunks of {path!r}"
            )
        table = np.zeros(len(page_lengths(var.chunk_count)), dtype=REFERENCE)
        for page in range(len(table)):
            data = rows[page * PAGE_ENTRIES : (page + 1) * PAGE_ENTRIES].tobytes()
            table[page] = (page_at, crc32c(data))
            pages.append(data)
            page_at += len(data)
        if len(table):
            root[number] = (table_at, crc32c(table.tobytes()))
        tables.append(table.tobytes())
        table_at += len(table) * REFERENCE.itemsize
    root_bytes = root.tobytes()
    slot = Slot(
        generation=1,
        metadata_offset=HEADER_SIZE_1_1,
        metadata_length=len(meta),
        metadata_crc32c=crc32c(meta),
        root_offset=layout.root_offset,
        root_length=len(root_bytes),
        root_crc32c=crc32c(root_bytes),
        file_length=file_length,
    )
    head = b"".join([pack_header_1_1(slot), meta, root_bytes, *tables, *pages])
    assert len(head) == layout.length
    return head
