"""Files of giant, mostly missing chunk grids, built by the writers' own head packer
(:func:`xarray_hurray.container.head.pack_pages`) from the pages of their stored
chunks, without a list of every chunk, so that a file of ``2**34`` chunk positions
takes what its page tables take.

For tests and benchmarks of what such files cost a reader: the writers keep an
index entry per chunk of the grid while they write, which is what these files are
built to do without.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

import numpy as np

from ..container.checksum import crc32c
from ..container.chunk import ChunkCodec
from ..container.format import INDEX_ENTRY, PAGE_ENTRIES
from ..container.head import HeadPlan, pack_pages
from ..container.metadata import DatasetMeta, VariableMeta


def write_sparse_file(
    path: str | os.PathLike[str],
    metadata: DatasetMeta,
    stored: Mapping[str, Mapping[int, np.ndarray | bytes]] | None = None,
    *,
    empty_pages: bool = False,
) -> int:
    """Write a file of the current format version of ``metadata`` in which only the
    chunks ``stored`` holds are stored, and return its length.

    Parameters
    ----------
    path
        The file to write (replaced).
    metadata
        The variables; any chunk grid the format allows.
    stored
        By variable path, the chunks stored (row-major chunk id to its elements, the
        chunk cut short at the variable's edge, or to the bytes stored as it, such as
        a codec frame made by hand); every other chunk is missing.
    empty_pages
        Store every page, also those of missing chunks only (a bitmap of zeros, which
        readers must accept), instead of leaving them absent.

    The layout is the writers': the head (header, metadata, root, page tables and the
    room for the pages), the chunks in placement order, and the pages in the head
    where they fit, else after the chunks.
    """
    stored = stored or {}
    plan = HeadPlan(metadata)
    position = plan.length
    chunk_bytes: list[bytes] = []
    pages: dict[str, Iterator[tuple[int, np.ndarray]]] = {}
    for name, var in plan.variables:
        chunks = stored.get(name, {})
        ids = np.array(sorted(chunks), dtype=np.int64)
        positions = var.positions(ids) if len(ids) else ids
        codec = ChunkCodec(var)
        own: dict[int, np.ndarray] = {}  # page -> its entries
        # the stored chunks, in placement order
        for k in np.argsort(positions, kind="stable").tolist():
            given = chunks[int(ids[k])]
            data = given if isinstance(given, bytes) else codec.encode(np.asarray(given))
            page, at = divmod(int(positions[k]), PAGE_ENTRIES)
            if page not in own:
                own[page] = np.zeros(_page_count(var, page), dtype=INDEX_ENTRY)
            own[page][at] = (position, len(data), crc32c(data))
            chunk_bytes.append(data)
            position += len(data)
        pages[name] = _pages(var, own, empty_pages)
    index = pack_pages(plan, pages, position)
    with open(path, "wb") as out:
        out.write(index.head)
        for data in chunk_bytes:
            out.write(data)
        out.write(index.pages)
    return position + len(index.pages)


def _page_count(var: VariableMeta, page: int) -> int:
    """Chunk positions on page ``page`` of ``var``."""
    return min(PAGE_ENTRIES, var.chunk_count - page * PAGE_ENTRIES)


def _pages(
    var: VariableMeta, own: dict[int, np.ndarray], every: bool
) -> Iterator[tuple[int, np.ndarray]]:
    """The pages of ``var`` given its pages ``own`` that hold a stored chunk: those, or,
    with ``every``, every page (the others of missing chunks only)."""
    numbers = range(-(-var.chunk_count // PAGE_ENTRIES)) if every else sorted(own)
    for page in numbers:
        yield page, own.get(page, np.zeros(_page_count(var, page), dtype=INDEX_ENTRY))
