"""Checking a whole Hurray file: every structure, checksum, chunk and placement rule."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import BinaryIO

import numpy as np

from ..errors import HurrayFormatError
from ..io import ByteSource, open_source
from .chunk import chunk_box
from .limits import MAX_CHUNK_BYTES, MAX_METADATA_CONTAINERS
from .metadata import VariableMeta
from .reader import ContainerReader

BATCH = 256
"""Chunks fetched and checked together."""


def _padding_problem(var: VariableMeta, chunk_id: int, chunk: np.ndarray) -> str | None:
    box = chunk_box(chunk_id, var.grid_shape, var.chunks)
    inside = tuple(min(k.stop, n) - k.start for k, n in zip(box, var.shape, strict=True))
    mask = np.ones(var.chunks, dtype=bool)
    mask[tuple(slice(0, k) for k in inside)] = False
    padding = chunk[mask]
    zero = "" if chunk.dtype == object else np.zeros((), chunk.dtype)  # 0, "" or b""
    if padding.size and not np.all(padding == zero):
        return f"variable {var.name!r}: chunk {chunk_id} has padding elements that are not zero"
    return None


def _chunk_problems(
    reader: ContainerReader,
    path: str,
    var: VariableMeta,
    ids: np.ndarray,
    entries: np.ndarray | None = None,
) -> list[str]:
    """Problems with the bytes of chunks ``ids`` of ``var`` (their index ``entries``
    when known): each is fetched, checked and decoded, and a bad chunk does not stop
    the check of the ones after it."""
    problems: list[str] = []
    done = 0
    try:
        for chunk in reader.iter_chunks(path, ids, entries):
            problems += filter(None, [_padding_problem(var, int(ids[done]), chunk)])
            done += 1
        return problems
    except HurrayFormatError as err:
        if len(ids) == 1:
            return [*problems, str(err)]
    # something in the batch is bad: check the rest one chunk (one request) at a time,
    # so that each problem is named once and the cost stays linear
    for k in range(done, len(ids)):
        one = None if entries is None else entries[k : k + 1]
        problems += _chunk_problems(reader, path, var, ids[k : k + 1], one)
    return problems


class _Parts:
    """The byte ranges a version references, gathered a block at a time (a stored
    chunk is a row, not a Python object), each block with the name of its rows."""

    def __init__(self) -> None:
        self._blocks: list[tuple[np.ndarray, np.ndarray, Callable[[int], str]]] = []

    def add(
        self,
        offsets: Sequence[int] | np.ndarray,
        lengths: Sequence[int] | np.ndarray,
        name: Callable[[int], str],
    ) -> None:
        """Ranges ``[offsets[k], offsets[k] + lengths[k])``, the ``k``-th named ``name(k)``."""
        self._blocks.append(
            (np.asarray(offsets, dtype=np.int64), np.asarray(lengths, dtype=np.int64), name)
        )

    def overlap_problems(self) -> list[str]:
        """A problem for each range that begins before the end of a range that begins
        earlier (or at the same byte, and is shorter), naming the one reaching furthest."""
        if not self._blocks:
            return []
        offsets = np.concatenate([b[0] for b in self._blocks])
        lengths = np.concatenate([b[1] for b in self._blocks])
        block = np.repeat(np.arange(len(self._blocks)), [len(b[0]) for b in self._blocks])
        item = np.concatenate([np.arange(len(b[0])) for b in self._blocks])
        order = np.lexsort((lengths, offsets))
        starts, ends = offsets[order], offsets[order] + lengths[order]
        reach = np.maximum.accumulate(ends)
        # the range whose end is the furthest so far: the one a later range overlaps
        furthest = np.maximum.accumulate(
            np.where(ends > np.concatenate(([-1], reach[:-1])), np.arange(len(ends)), 0)
        )

        def name(row: int) -> str:
            k = int(order[row])
            return self._blocks[int(block[k])][2](int(item[k]))

        overlapping = np.flatnonzero(starts[1:] < reach[:-1]) + 1
        return [
            f"{name(row)} at bytes [{int(starts[row])}, {int(ends[row])}) overlaps "
            f"{name(int(furthest[row - 1]))}"
            for row in overlapping.tolist()
        ]


class _Disjoint:
    """The placement rule of a file, whose parts may lie anywhere: no two referenced
    byte ranges overlap, the fixed ``parts`` of the file (offset, length, name)
    included."""

    def __init__(self, parts: list[tuple[int, int, str]]) -> None:
        self._parts = _Parts()
        self._parts.add(
            [p[0] for p in parts], [p[1] for p in parts], [p[2] for p in parts].__getitem__
        )

    def add_index(self, path: str, parts: list[tuple[int, int]]) -> None:
        """The byte ranges of the index of ``path``."""
        self._parts.add([o for o, _ in parts], [n for _, n in parts], partial(_index_name, path))

    def add_chunks(self, path: str, ids: np.ndarray, entries: np.ndarray) -> None:
        """Stored chunks ``ids`` of ``path`` and their entries ``entries``."""
        self._parts.add(entries["offset"], entries["size"], partial(_chunk_name, path, ids))

    def problems(self) -> list[str]:
        """The ranges that overlap another."""
        return self._parts.overlap_problems()


def _problems(reader: ContainerReader) -> list[str]:
    """Every problem of a file whose header and metadata are valid: in time and memory
    growing with what the file stores."""
    model = reader.model
    rule = _Disjoint(model.fixed_parts)
    problems: list[str] = []
    for path, var in model.metadata.all_variables():
        index = model.chunk_index(path)
        try:
            rule.add_index(path, index.parts())
            for _, ids, entries in index.stored_chunks():
                rule.add_chunks(path, ids, entries)
                for first in range(0, len(ids), BATCH):
                    batch = slice(first, first + BATCH)
                    problems += _chunk_problems(reader, path, var, ids[batch], entries[batch])
        except HurrayFormatError as err:
            problems.append(str(err))
    return problems + rule.problems() + _uncommitted_problems(reader)


def _index_name(path: str, _: int) -> str:
    return f"the index of {path!r}"


def _chunk_name(path: str, ids: np.ndarray, k: int) -> str:
    return f"chunk {int(ids[k])} of {path!r}"


def _uncommitted_problems(reader: ContainerReader) -> list[str]:
    """Bytes after the end of the version, where the size of the file is known: what a
    write that did not commit leaves (its torn slot, if it got that far, is accepted
    beside them), which the next commit overwrites; reported because nothing checks
    them, and damage to the newest slot of such a file reads as that interrupted
    commit."""
    size = reader.source.size()
    length = reader.header.file_length
    if size is None or size <= length:
        return []
    return [
        f"{size - length} bytes after the end of the version (file_length {length}, the "
        f"file has {size}): left by a write that did not commit, or the newest header "
        "slot is damaged; the file reads as the version its header holds, and the next "
        "write or `hurray compact` drops them"
    ]


def verify_file(
    target: str | os.PathLike[str] | BinaryIO | ByteSource | ContainerReader,
    *,
    max_chunk_bytes: int = MAX_CHUNK_BYTES,
    max_metadata_containers: int = MAX_METADATA_CONTAINERS,
) -> list[str]:
    """Every problem found in the Hurray file ``target``; an empty list for a valid file.

    Checks the header, the metadata, every index (root, page tables and pages), the
    checksum and decoding of every stored chunk, that edge padding is zero and that no
    two referenced byte ranges overlap.  A problem that stops reading (a bad header or
    metadata) is the only one reported.

    Parameters
    ----------
    target
        A path, URL, binary file object or byte source, or a reader already open on
        one (its header and metadata are not parsed again).
    max_chunk_bytes
        Most bytes one decoded chunk may take (see :class:`ContainerReader`); a chunk
        that would take more is a problem.  A reader given as ``target`` keeps its own.
    max_metadata_containers
        Most JSON arrays and objects the metadata may hold (see :class:`ContainerReader`);
        a file with more is reported as such.
    """
    if isinstance(target, ContainerReader):
        reader = target
    else:
        try:
            reader = ContainerReader(
                open_source(target),
                max_chunk_bytes=max_chunk_bytes,
                max_metadata_containers=max_metadata_containers,
            )
        except HurrayFormatError as err:
            return [str(err)]
    return _problems(reader)
