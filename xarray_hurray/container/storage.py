"""How a file's bytes lie in storage: what ``hurray info`` reports of its order and of
the bytes no version references."""

from __future__ import annotations

from typing import Any

import numpy as np

from .reader import ContainerReader


def storage_order(reader: ContainerReader) -> dict[str, Any]:
    """How well the file's bytes follow the chunk curves, for ``hurray info``.

    Returns ``unreferenced_bytes`` (bytes of the version that nothing references:
    what earlier versions used), ``uncommitted_bytes`` (after the version's end: left
    by a write that did not commit) and, by variable path, ``out_of_order``: stored
    chunks lying before the stored chunk preceding them in placement order.
    """
    header = reader.header
    used = sum(length for _, length, _ in reader.model.fixed_parts)
    out_of_order = {}
    for path, _ in reader.metadata.all_variables():
        used += sum(length for _, length in reader.index_parts(path))
        before, behind = np.empty(0, dtype=np.int64), 0  # the last offset so far
        for _, _, entries in reader.stored_chunks(path):
            offsets = entries["offset"].astype(np.int64)
            used += int(entries["size"].sum())
            behind += int(np.count_nonzero(np.diff(np.concatenate((before, offsets))) < 0))
            before = offsets[-1:]
        out_of_order[path] = behind
    size = reader.source.size()
    return {
        "unreferenced_bytes": header.file_length - used,
        "uncommitted_bytes": None if size is None else size - header.file_length,
        "out_of_order": out_of_order,
    }
