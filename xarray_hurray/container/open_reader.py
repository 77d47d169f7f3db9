"""Opening a Hurray file: a source for the target, a merge policy, a reader; and the
one test of whether a file is a Hurray file at all."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, BinaryIO

from ..io import ByteSource, FileObjectSource, MergePolicy, as_merge_policy, open_source
from .format import MAGIC
from .limits import MAX_CHUNK_BYTES, MAX_METADATA_CONTAINERS
from .reader import ContainerReader


def has_magic(target: str | os.PathLike[str] | BinaryIO | ByteSource) -> bool:
    """Whether ``target`` starts with :data:`~.format.MAGIC`, the mark of a Hurray file.

    Only the first eight bytes are read.  A file object is read from its start and
    left at the position it had, so a caller probing it (xarray guessing an engine)
    can still read it from where it was.  xarray's own probe
    (``try_read_magic_number_from_file_or_path``) is not used: it is private to
    xarray, which the container does not depend on, and it rewinds file objects to
    their start instead.

    Parameters
    ----------
    target
        A local path, an fsspec URL (one small range request), a seekable binary
        file object or a byte source.

    Raises
    ------
    OSError
        When ``target`` cannot be read.
    """
    source = open_source(target)
    if not isinstance(source, FileObjectSource):
        return source.read(0, len(MAGIC)) == MAGIC
    position = source.fileobj.tell()
    try:
        return source.read(0, len(MAGIC)) == MAGIC
    finally:
        source.fileobj.seek(position)


def open_reader(
    target: str | os.PathLike[str] | BinaryIO | ByteSource,
    *,
    storage_options: Mapping[str, Any] | None = None,
    merge_policy: MergePolicy | Mapping[str, int] | None = None,
    verify_checksums: bool = True,
    max_chunk_bytes: int = MAX_CHUNK_BYTES,
    max_metadata_containers: int = MAX_METADATA_CONTAINERS,
) -> ContainerReader:
    """Open a Hurray file and return its :class:`ContainerReader`.

    Parameters
    ----------
    target
        A local path, an fsspec URL, a binary file-like object or a byte source.
    storage_options
        fsspec options for a URL target.
    merge_policy
        A policy, or a mapping of its fields, overriding the source's default.
    verify_checksums
        ``False`` skips the crc32c of every chunk, for trusted data; header,
        metadata and indexes are always checked.
    max_chunk_bytes
        Most bytes one decoded chunk may take (see :class:`ContainerReader`).
    max_metadata_containers
        Most JSON arrays and objects the metadata may hold (see :class:`ContainerReader`).
    """
    return ContainerReader(
        open_source(target, storage_options),
        as_merge_policy(merge_policy),
        verify_checksums,
        max_chunk_bytes,
        max_metadata_containers,
    )
