"""The one function that chooses which sink takes a write, from the target and the base
(the table of :mod:`xarray_hurray.write.sinks`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from ...container import ContainerReader, ContainerWriter, DatasetMeta
from ...container.sink import ChunkSink, Sink
from ...container.update import InPlaceCommit
from ...io.multipart import DEFAULT_PART_BYTES, S3_RULES, object_etag, start_multipart
from ..target import WriteTarget
from .append import FileAppend, ObjectAppend
from .parts import ObjectUpload, PartLayout
from .rewrite import StagedRewrite
from .staged import StagedUpload


@dataclass(frozen=True)
class ChosenSink:
    """The sink a write goes to: ``open`` opens it when the write runs (picklable,
    so that a pending write can run on a Dask worker); ``in_tasks``: it is a
    :class:`~xarray_hurray.container.sink.TaskSink`, whose parts must be encoded
    by Dask tasks."""

    open: Callable[[], Sink]
    in_tasks: bool = False


def choose_sink(
    target: WriteTarget,
    base: ContainerReader | None,
    metadata: DatasetMeta,
    written: Mapping[str, np.ndarray],
    *,
    exclusive: bool = False,
    part_bytes: int = DEFAULT_PART_BYTES,
    rewrite: bool = False,
) -> ChosenSink:
    """The sink of the version ``metadata`` at ``target``, from ``base``, the version
    it starts from (None: a new file), as the table of this module says.  Choosing
    writes nothing; a new ``s3://`` object has its parts laid out now, so that one
    that cannot be written is refused first.

    Parameters
    ----------
    target
        Where the write goes.
    base
        The file's version the write starts from, its lock held; None for a new file.
    metadata
        The description of the new version.
    written
        By variable path, the chunks (row-major indices in the new chunk grid) an
        update stores; every other chunk of a variable the base holds with the same
        dimensions is kept.
    exclusive
        A new file does not replace one another writer made meanwhile (the write
        then fails with :class:`~xarray_hurray.errors.TargetExistsError`).
    part_bytes
        Input bytes per part of a new ``s3://`` object.
    rewrite
        Rewrite the file whole even where it could be appended to.

    Raises
    ------
    ValueError
        For a new ``s3://`` object that cannot be written in parts.
    """
    if base is None:
        multipart = target.multipart
        if multipart is not None:
            url, options = multipart
            layout = PartLayout.of(url, metadata, part_bytes)
            return ChosenSink(partial(ObjectUpload, url, options, layout, exclusive), True)
        return ChosenSink(partial(_new_file, target, metadata, exclusive))
    return ChosenSink(partial(_new_version, target, base, metadata, written, rewrite))


def _new_file(target: WriteTarget, metadata: DatasetMeta, exclusive: bool) -> ChunkSink:
    """The sink of a new file: the file itself for a local path, else a local file
    uploaded whole."""

    def local(path: str | os.PathLike[str]) -> ContainerWriter:
        return ContainerWriter(path, metadata, exclusive=exclusive)

    if target.remote is None:
        return local(target.location)  # type: ignore[arg-type]
    return StagedUpload(target.remote, target.name, local)


def _new_version(
    target: WriteTarget,
    base: ContainerReader,
    metadata: DatasetMeta,
    written: Mapping[str, np.ndarray],
    rewrite: bool,
) -> ChunkSink:
    """The sink of a new version of the file ``base`` reads: appended to a local
    file (:class:`InPlaceCommit`) or, for an ``s3://`` object, into a new object of
    the old bytes copied by the store and the new ones appended; with ``rewrite``, or
    for an object smaller than two parts, the whole file rewritten in placement order
    (:class:`StagedRewrite`), locally then uploaded whole for an object."""
    in_place = not rewrite
    if target.remote is None and in_place:
        appended = FileAppend(target.location, base.header.file_length)  # type: ignore[arg-type]
        return InPlaceCommit(appended, base, metadata, written)
    if target.remote is None:
        return StagedRewrite(target.location, base, metadata, written)  # type: ignore[arg-type]
    url, options = target.url, target.storage_options or {}
    # below two smallest parts, rewriting the object costs no more than its head
    large = base.header.file_length >= 2 * S3_RULES.min_part
    upload = start_multipart(url, options) if in_place and url and large else None
    if upload is not None:
        etag = object_etag(url, options)
        return InPlaceCommit(ObjectAppend(url, base, upload, etag), base, metadata, written)

    def local(path: Path) -> StagedRewrite:
        return StagedRewrite(path, base, metadata, written)

    return StagedUpload(target.remote, Path(base.source.name).name or "update.hurray", local)
