"""The sinks of a write, and the one function that chooses which one takes it.

Every sink follows :class:`~xarray_hurray.container.sink.ChunkSink` (the chunks come
to the writing process) or :class:`~xarray_hurray.container.sink.TaskSink` (the
tasks that encode the chunks write them).  :func:`choose_sink` decides from the
target and the base (the version the write starts from; none for a new file):

=====================  ==========================  =================================
target                 base                        sink
=====================  ==========================  =================================
local path             none                        ``ContainerWriter``
``s3://`` object       none                        ``ObjectUpload`` (task sink)
other remote           none                        ``StagedUpload(ContainerWriter)``
local path             any                         ``InPlaceCommit(FileAppend)``
local path             ``compact``                 ``StagedRewrite``
``s3://`` object       two parts large             ``InPlaceCommit(ObjectAppend)``
any other remote       any                         ``StagedUpload(StagedRewrite)``
=====================  ==========================  =================================

- :mod:`.staged`: :class:`~.staged.StagedUpload`, a file built locally and uploaded
  whole at the commit.
- :mod:`.parts`: :class:`~.parts.ObjectUpload`, a new ``s3://`` object as one
  multipart upload whose parts the tasks upload.
- :mod:`.append`: :class:`~.append.FileAppend` and :class:`~.append.ObjectAppend`,
  where an in-place commit puts a new version's bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ...container import ContainerReader, ContainerWriter, DatasetMeta
from ...container.sink import ChunkSink, Sink
from ...container.update import InPlaceCommit, StagedRewrite
from ...io import UploadTarget
from ...io.multipart import DEFAULT_PART_BYTES, S3_RULES, object_etag, start_multipart
from ..target import WriteTarget
from .append import FileAppend, ObjectAppend
from .parts import ObjectUpload, PartLayout
from .staged import StagedUpload

__all__ = ["ChosenSink", "StagedUpload", "choose_sink", "compact"]


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


def compact(
    location: str | os.PathLike[str] | UploadTarget,
    storage_options: Mapping[str, Any] | None = None,
) -> None:
    """Rewrite the file at ``location`` with every chunk in placement order and no
    unreferenced bytes, atomically, under its writer lock (``hurray compact``).

    Raises
    ------
    FileNotFoundError
        When there is no file.
    """
    target = WriteTarget.resolve(location, storage_options)
    with target.lock(), target.open() as base:
        chosen = choose_sink(target, base, base.metadata, {}, rewrite=True)
        with chosen.open():
            pass
