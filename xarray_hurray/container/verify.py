"""Checking a whole Hurray file: every structure, checksum, chunk and placement rule."""

from __future__ import annotations

import os
from typing import BinaryIO

import numpy as np

from ..errors import HurrayFormatError
from ..io import ByteSource, open_source
from .format import HEADER_SIZE_1_1
from .limits import MAX_CHUNK_BYTES, MAX_METADATA_CONTAINERS
from .metadata import VariableMeta
from .reader import ContainerReader

BATCH = 256
"""Chunks fetched and checked together."""


def _placement_problems(
    var: VariableMeta, entries: np.ndarray, start: int
) -> tuple[list[str], int]:
    """Problems with where the chunks of ``var`` lie, given that they should follow each
    other from byte ``start`` in placement order, and where the next variable begins."""
    placed = entries[var.placement]
    expected = start + np.concatenate(([0], np.cumsum(placed["size"].astype(np.int64))))
    wrong = np.flatnonzero(placed["offset"].astype(np.int64) != expected[:-1])
    problems = []
    if wrong.size:
        k = int(wrong[0])
        problems.append(
            f"variable {var.name!r}: chunk {int(var.placement[k])} starts at byte "
            f"{int(placed['offset'][k])}, but its place in the chunk order is byte {expected[k]}"
        )
    return problems, int(expected[-1])


def _padding_problem(var: VariableMeta, chunk_id: int, chunk: np.ndarray) -> str | None:
    corner = np.unravel_index(chunk_id, var.grid_shape)
    inside = tuple(min(c, n - i * c) for i, c, n in zip(corner, var.chunks, var.shape, strict=True))
    mask = np.ones(var.chunks, dtype=bool)
    mask[tuple(slice(0, k) for k in inside)] = False
    padding = chunk[mask]
    zero = "" if chunk.dtype == object else np.zeros((), chunk.dtype)  # 0, "" or b""
    released = chunk.dtype.kind in "SU" and np.all(padding == chunk.dtype.type("0"))
    # (format 1.0 writers pad fixed-width text with the character "0": valid too)
    if padding.size and not np.all(padding == zero) and not released:
        return f"variable {var.name!r}: chunk {chunk_id} has padding elements that are not zero"
    return None


def _chunk_problems(
    reader: ContainerReader, path: str, var: VariableMeta, ids: np.ndarray
) -> list[str]:
    """Problems with the bytes of chunks ``ids`` of ``var``: each is fetched, checked and
    decoded, and a bad chunk does not stop the check of the ones after it."""
    problems: list[str] = []
    done = 0
    try:
        for chunk in reader.iter_chunks(path, ids):
            problems += filter(None, [_padding_problem(var, int(ids[done]), chunk)])
            done += 1
        return problems
    except HurrayFormatError as err:
        if len(ids) == 1:
            return [*problems, str(err)]
    # something in the batch is bad: check the rest one chunk (one request) at a time,
    # so that each problem is named once and the cost stays linear
    for chunk_id in ids[done:]:
        problems += _chunk_problems(reader, path, var, chunk_id.reshape(1))
    return problems


def _overlap_problems(parts: list[tuple[int, int, str]]) -> list[str]:
    """Problems with referenced byte ranges ``(offset, length, what)`` that overlap."""
    problems = []
    end, last = 0, ""
    for offset, length, what in sorted(parts):
        if offset < end:
            problems.append(f"{what} at bytes [{offset}, {offset + length}) overlaps {last}")
        if offset + length > end:
            end, last = offset + length, what
    return problems


def _verify_1_1(reader: ContainerReader) -> list[str]:
    """Every problem of a 1.1 or 1.2 file whose header, metadata and root are valid."""
    header = reader.header
    problems: list[str] = []
    parts = [
        (0, HEADER_SIZE_1_1, "the header"),
        (header.metadata_offset, header.metadata_length, "the metadata"),
        (header.root_offset, header.root_length, "the index root"),  # type: ignore[union-attr]
    ]
    for path, var in reader.metadata.all_variables():
        try:
            entries = reader.index(path)
            parts += [(o, n, f"the index of {path!r}") for o, n in reader.index_parts(path)]
        except HurrayFormatError as err:
            problems.append(str(err))
            continue
        stored = entries["size"] != 0
        parts += [
            (int(o), int(n), f"chunk {int(i)} of {path!r}")
            for i, o, n in zip(
                np.flatnonzero(stored),
                entries["offset"][stored],
                entries["size"][stored],
                strict=True,
            )
        ]
        ids = var.placement[stored[var.placement]]
        for first in range(0, len(ids), BATCH):
            problems += _chunk_problems(reader, path, var, ids[first : first + BATCH])
    # bytes after file_length (a write that did not commit) are no problem: the
    # format allows them, readers ignore them and the next commit overwrites them
    return problems + _overlap_problems(parts)


def verify_file(
    target: str | os.PathLike[str] | BinaryIO | ByteSource | ContainerReader,
    *,
    max_chunk_bytes: int = MAX_CHUNK_BYTES,
    max_metadata_containers: int = MAX_METADATA_CONTAINERS,
) -> list[str]:
    """Every problem found in the Hurray file ``target``; an empty list for a valid file.

    Checks the header, the metadata, every index (1.1, 1.2: root, page tables and pages),
    the crc32c and decoding of every stored chunk and that edge padding is zero.  In
    1.0 files, also the placement of every chunk (adjacent, in the recorded chunk
    order, ending at the end of the file); in 1.1 and 1.2 files, that no two referenced
    byte ranges overlap.  A problem that stops reading (a bad header or metadata) is
    the only one reported.

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
    if reader.version >= (1, 1):
        return _verify_1_1(reader)
    problems: list[str] = []
    position = reader.header.data_offset  # type: ignore[union-attr]
    for var in reader.metadata.variables:
        try:
            entries = reader.index(var.name)
        except HurrayFormatError as err:
            problems.append(str(err))
            continue
        placement_problems, position = _placement_problems(var, entries, position)
        problems += placement_problems
        for first in range(0, var.chunk_count, BATCH):
            problems += _chunk_problems(reader, var.name, var, var.placement[first : first + BATCH])
    if position != reader.header.file_length and not problems:
        problems.append(
            f"the chunks end at byte {position}, the file at {reader.header.file_length}"
        )
    return problems
