"""Checking a whole Hurray file: every structure, checksum, chunk and placement rule."""

from __future__ import annotations

import os
from typing import BinaryIO

import numpy as np

from ..errors import HurrayFormatError
from ..io import ByteSource, open_source
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


def _chunk_problems(reader: ContainerReader, var: VariableMeta, ids: np.ndarray) -> list[str]:
    """Problems with the bytes of chunks ``ids`` of ``var``: each is fetched, checked and
    decoded, and a bad chunk does not stop the check of the ones after it."""
    problems: list[str] = []
    done = 0
    try:
        for chunk in reader.iter_chunks(var.name, ids):
            problems += filter(None, [_padding_problem(var, int(ids[done]), chunk)])
            done += 1
        return problems
    except HurrayFormatError as err:
        if len(ids) == 1:
            return [*problems, str(err)]
    # something in the batch is bad: check the rest one chunk (one request) at a time,
    # so that each problem is named once and the cost stays linear
    for chunk_id in ids[done:]:
        problems += _chunk_problems(reader, var, chunk_id.reshape(1))
    return problems


def verify_file(
    target: str | os.PathLike[str] | BinaryIO | ByteSource | ContainerReader,
) -> list[str]:
    """Every problem found in the Hurray file ``target``; an empty list for a valid file.

    Checks the header, the metadata, every index, the placement of every chunk
    (adjacent, in the recorded chunk order, ending at the end of the file), the
    crc32c and decoding of every chunk and that edge padding is zero.  A problem
    that stops reading (a bad header or metadata) is the only one reported.

    Parameters
    ----------
    target
        A path, URL, binary file object or byte source, or a reader already open on
        one (its header and metadata are not parsed again).
    """
    if isinstance(target, ContainerReader):
        reader = target
    else:
        try:
            reader = ContainerReader(open_source(target))
        except HurrayFormatError as err:
            return [str(err)]
    problems: list[str] = []
    position = reader.header.data_offset
    for var in reader.metadata.variables:
        try:
            entries = reader.index(var.name)
        except HurrayFormatError as err:
            problems.append(str(err))
            continue
        placement_problems, position = _placement_problems(var, entries, position)
        problems += placement_problems
        for first in range(0, var.chunk_count, BATCH):
            problems += _chunk_problems(reader, var, var.placement[first : first + BATCH])
    if position != reader.header.file_length and not problems:
        problems.append(
            f"the chunks end at byte {position}, the file at {reader.header.file_length}"
        )
    return problems
