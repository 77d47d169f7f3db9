"""Files of format 1.1, for tests and benchmarks of reading and updating them: the
package writes new files of the current version only, and reads 1.1 files for ever
(``tests/data/hurray_file_golden_1_1.hurray`` is one that the 1.1 writer wrote).

:func:`write_1_1` lays a file out as that writer did, from the format's own pieces
(the 1.1 pages of :func:`~xarray_hurray.container.index.page_format`, the header
slot), so that the file it gives for the golden file's content is the golden file,
byte for byte.
"""

from __future__ import annotations

import os

import numpy as np

from ..container.checksum import crc32c
from ..container.format import HEAD_SIZE, REFERENCE, SLOT_HEADER_SIZE, pack_slot_header
from ..container.head import version_slot
from ..container.index import page_counts, page_format
from ..container.reader import ContainerReader

VERSION_1_1 = (1, 1)

PAGES_1_1 = page_format(VERSION_1_1)
"""The pages of 1.1: every entry of the page's positions."""


def write_1_1(reader: ContainerReader, path: str | os.PathLike[str]) -> int:
    """Write the file that ``reader`` reads (any version) to ``path`` in format 1.1,
    every stored chunk copied as stored, laid out as the 1.1 writer laid out a new
    file; its length.

    That layout: the header (slot 0 of generation 1), the metadata, the root and the
    page tables; then, when every page (every entry of every position) fits in the
    first 64 KiB, all pages, also those of missing chunks only; then the stored chunks,
    variable by variable in placement order; then, where the pages did not fit, the
    pages that hold a stored chunk, back to back in variable and page order.
    """
    meta = reader.metadata.to_bytes()
    variables = reader.metadata.all_variables()
    root_offset = SLOT_HEADER_SIZE + len(meta)
    position = root_offset + REFERENCE.itemsize * len(variables)
    tables, pages = [], []  # per variable: its table, its entries of each page
    for path_, var in variables:
        entries = reader.entries(path_, var.placement)
        counts = page_counts(var.chunk_count)
        tables.append((position, np.zeros(len(counts), dtype=PAGES_1_1.reference)))
        position += tables[-1][1].nbytes
        pages.append(np.split(entries, np.cumsum(counts)[:-1]) if len(counts) else [])
    every_page = sum(
        int(PAGES_1_1.full_lengths(page_counts(var.chunk_count)).sum()) for _, var in variables
    )
    front = position + every_page <= HEAD_SIZE
    head_length = position + (every_page if front else 0)
    chunks = []  # (offset in the new file, bytes)
    at = head_length
    for own in pages:
        for rows in own:
            stored = np.flatnonzero(rows["size"])
            for k in stored.tolist():
                start, size = int(rows["offset"][k]), int(rows["size"][k])
                chunks.append(reader.source.read(start, start + size))
                rows["offset"][k] = at
                at += size
    page_at = position if front else at
    page_bytes = []
    for (_, table), own in zip(tables, pages, strict=True):
        for page, rows in enumerate(own):
            if front or rows["size"].any():
                data = PAGES_1_1.pack(rows)
                PAGES_1_1.set_reference(table, page, page_at, data)
                page_bytes.append(data)
                page_at += len(data)
    root = np.zeros(len(variables), dtype=REFERENCE)
    for number, (offset, table) in enumerate(tables):
        if len(table):
            root[number] = (offset, crc32c(table.tobytes()))
    length = page_at if not front else at
    slot = version_slot(
        1, (SLOT_HEADER_SIZE, meta), (root_offset, root.tobytes()), length, VERSION_1_1
    )
    head = [pack_slot_header(slot), meta, root.tobytes(), *(t.tobytes() for _, t in tables)]
    with open(path, "wb") as out:
        out.writelines(head + (page_bytes if front else []) + chunks)
        out.writelines([] if front else page_bytes)
    return length
