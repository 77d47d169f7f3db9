"""Opening a Hurray file: a source for the target, a merge policy, a reader."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, BinaryIO

from ..io import ByteSource, MergePolicy, as_merge_policy, open_source
from .limits import MAX_CHUNK_BYTES
from .reader import ContainerReader


def open_reader(
    target: str | os.PathLike[str] | BinaryIO | ByteSource,
    *,
    storage_options: Mapping[str, Any] | None = None,
    merge_policy: MergePolicy | Mapping[str, int] | None = None,
    verify_checksums: bool = True,
    max_chunk_bytes: int = MAX_CHUNK_BYTES,
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
    """
    return ContainerReader(
        open_source(target, storage_options),
        as_merge_policy(merge_policy),
        verify_checksums,
        max_chunk_bytes,
    )
