"""Format 1.2 files of giant, mostly missing chunk grids, built from the container's
own pieces (metadata, header slot, page tables, pages, chunk codec) without a list of
every chunk, so that a file of ``2**34`` chunk positions takes what its page tables
take, written block by block.

For tests and benchmarks of what such files cost a reader: the writers keep an
index entry per chunk of the grid while they write, which is what these files are
built to do without.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from ..container.checksum import crc32c, extend_crc32c
from ..container.chunk import ChunkCodec
from ..container.format import (
    INDEX_ENTRY,
    PAGE_ENTRIES,
    PAGE_REFERENCE,
    REFERENCE,
    SLOT_HEADER_SIZE,
    Slot,
    pack_slot_header,
)
from ..container.index import page_format
from ..container.metadata import DatasetMeta

TABLE_BLOCK = 2**20
"""Page table entries written at once (16 MiB)."""


def write_sparse_file(
    path: str | os.PathLike[str],
    metadata: DatasetMeta,
    stored: Mapping[str, Mapping[int, np.ndarray]] | None = None,
    *,
    empty_pages: bool = False,
) -> int:
    """Write a format 1.2 file of ``metadata`` in which only the chunks ``stored``
    holds are stored, and return its length.

    Parameters
    ----------
    path
        The file to write (replaced).
    metadata
        The variables; any chunk grid the format allows.
    stored
        By variable path, the chunks stored (row-major chunk id to its elements, the
        chunk cut short at the variable's edge); every other chunk is missing.
    empty_pages
        Store every page, also those of missing chunks only (a bitmap of zeros, which
        readers must accept), instead of leaving them absent.

    The layout is the writers': header, metadata, root and page tables, then the
    chunks in placement order, then the pages in page order.
    """
    stored = stored or {}
    variables = metadata.all_variables()
    meta = metadata.to_bytes()
    root_offset = SLOT_HEADER_SIZE + len(meta)
    position = root_offset + REFERENCE.itemsize * len(variables)
    tables = []  # per variable: offset of its page table and its number of pages
    for _, var in variables:
        pages = -(-var.chunk_count // PAGE_ENTRIES)
        tables.append((position, pages))
        position += pages * PAGE_REFERENCE.itemsize
    # the stored chunks, placement order within each variable
    chunk_bytes: list[bytes] = []
    pages_of: list[dict[int, np.ndarray]] = []  # per variable: page -> its entries
    for path_, var in variables:
        chunks = stored.get(path_, {})
        ids = np.array(sorted(chunks), dtype=np.int64)
        positions = var.positions(ids) if len(ids) else ids
        codec = ChunkCodec(var)
        own: dict[int, np.ndarray] = {}
        for k in np.argsort(positions, kind="stable").tolist():
            data = codec.encode(np.asarray(chunks[int(ids[k])]))
            page, at = divmod(int(positions[k]), PAGE_ENTRIES)
            if page not in own:
                count = min(PAGE_ENTRIES, var.chunk_count - page * PAGE_ENTRIES)
                own[page] = np.zeros(count, dtype=INDEX_ENTRY)
            own[page][at] = (position, len(data), crc32c(data))
            chunk_bytes.append(data)
            position += len(data)
        pages_of.append(own)
    # the pages, and the references of the tables to them
    page_bytes: list[bytes] = []
    references: list[dict[int, tuple[int, int, int]]] = []
    for (_, var), own, (_, pages) in zip(variables, pages_of, tables, strict=True):
        refs: dict[int, tuple[int, int, int]] = {}
        for page in range(pages) if empty_pages else sorted(own):
            count = min(PAGE_ENTRIES, var.chunk_count - page * PAGE_ENTRIES)
            data = page_format((1, 2)).pack(own.get(page, np.zeros(count, dtype=INDEX_ENTRY)))
            refs[page] = (position, len(data), crc32c(data))
            page_bytes.append(data)
            position += len(data)
        references.append(refs)
    file_length = position
    root = np.zeros(len(variables), dtype=REFERENCE)
    with open(path, "wb") as out:
        out.seek(root_offset + root.nbytes)
        for number, ((table_at, pages), refs) in enumerate(zip(tables, references, strict=True)):
            crc = 0
            for first in range(0, pages, TABLE_BLOCK):
                block = np.zeros(min(TABLE_BLOCK, pages - first), dtype=PAGE_REFERENCE)
                for page, ref in refs.items():
                    if first <= page < first + len(block):
                        block[page - first] = ref
                crc = extend_crc32c(crc, block.tobytes())
                out.write(block.tobytes())
            if pages:
                root[number] = (table_at, crc)
        for data in chunk_bytes + page_bytes:
            out.write(data)
        slot = Slot(
            generation=1,
            metadata_offset=SLOT_HEADER_SIZE,
            metadata_length=len(meta),
            metadata_crc32c=crc32c(meta),
            root_offset=root_offset,
            root_length=root.nbytes,
            root_crc32c=crc32c(root.tobytes()),
            file_length=file_length,
            version=(1, 2),
        )
        out.seek(0)
        out.write(pack_slot_header(slot) + meta + root.tobytes())
    return file_length
