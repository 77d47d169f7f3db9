"""The sinks of a write, and which one takes a write: every sink follows
:class:`~xarray_hurray.container.sink.ChunkSink` (open, write runs, commit, abort).

- a new local file: :class:`~xarray_hurray.container.ContainerWriter`;
- a new ``s3://`` object: :class:`~xarray_hurray.write.multipart.ObjectUpload`, one
  multipart upload (its plan made by
  :func:`~xarray_hurray.write.multipart.multipart_plan`);
- an update of a local file of format 1.1 or later:
  :class:`~xarray_hurray.container.update.InPlaceCommit`, appending to the file;
- an update of an ``s3://`` object: the same commit, into a new object
  (:class:`~xarray_hurray.write.s3.ObjectAppend`);
- an update of a format 1.0 file, and ``compact``:
  :class:`~xarray_hurray.container.update.StagedRewrite`;
- any of these at another remote target: :class:`StagedUpload` around it, built
  locally and uploaded whole.

Every sink but one takes its chunks in the writing process (``write_chunks``).
The new ``s3://`` object is the one whose chunks never reach it: its sink
describes its runs (``runs_in_tasks``), the engine has each uploaded as a part by
the task that joins its encoded chunks, and the sink's commit packs the head from
the sizes and CRCs the tasks return.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..container import ContainerWriter, DatasetMeta
from ..container.sink import ChunkSink
from ..container.update import FileAppend, FileUpdate, InPlaceCommit, StagedRewrite
from ..io import UploadTarget
from ..io.multipart import S3_RULES, object_etag, start_multipart
from .s3 import ObjectAppend


class StagedUpload(ChunkSink):
    """A sink that builds the file in a local temporary directory and uploads it
    whole at the commit: object stores have no rename, and one upload (a single put,
    or a multipart upload the store completes) is their atomic replace.

    Parameters
    ----------
    target
        Where the finished file goes.
    name
        The local file's name.
    open_local
        Opens the sink that builds the file at a local path.
    """

    def __init__(
        self, target: UploadTarget, name: str, open_local: Callable[[Path], ChunkSink]
    ) -> None:
        self.target = target
        self._work = Path(tempfile.mkdtemp(prefix="hurray-upload-"))
        self.path = self._work / name
        try:
            self._local = open_local(self.path)
        except BaseException:
            shutil.rmtree(self._work, ignore_errors=True)
            raise

    def write_chunks(
        self,
        name: str,
        chunk_ids: np.ndarray,
        data: Sequence[bytes | None],
        crcs: Sequence[int] | None = None,
    ) -> None:
        self._local.write_chunks(name, chunk_ids, data, crcs)

    def commit(self) -> None:
        """Finish the local file and upload it; the temporary directory goes either way."""
        try:
            self._local.commit()
            self.target.upload(self.path)
        finally:
            shutil.rmtree(self._work, ignore_errors=True)

    def abort(self) -> None:
        """Drop the local file; nothing was uploaded."""
        try:
            self._local.abort()
        finally:
            shutil.rmtree(self._work, ignore_errors=True)


def new_file_sink(
    target: str | os.PathLike[str] | UploadTarget,
    metadata: DatasetMeta,
    remote: UploadTarget | None,
    exclusive: bool = False,
) -> ChunkSink:
    """The sink of a new file at ``target``: the file itself for a local path, else
    a local file uploaded whole to ``remote``."""

    def local(path: str | os.PathLike[str]) -> ContainerWriter:
        return ContainerWriter(path, metadata, exclusive=exclusive)

    if remote is None:
        return local(target)  # type: ignore[arg-type]
    return StagedUpload(remote, target_name(target), local)


def target_name(target: str | os.PathLike[str] | UploadTarget) -> str:
    """The file name of a target, as progress bars and staged files call it."""
    if isinstance(target, str | os.PathLike):
        return Path(os.fspath(target)).name
    return "remote.hurray"


def update_sink(
    update: FileUpdate,
    metadata: DatasetMeta,
    written: Mapping[str, np.ndarray],
    rewrite: bool = False,
) -> ChunkSink:
    """The sink of the new version of the file ``update`` holds: appended to a local
    file of format 1.1 or later (:class:`InPlaceCommit`) or, for such an ``s3://``
    object, into a new object of the old bytes copied by the store and the new ones
    appended (:class:`~xarray_hurray.write.s3.ObjectAppend`); else, or with
    ``rewrite``, the whole file rewritten in placement order (:class:`StagedRewrite`),
    locally then uploaded whole for an object.  A version committed in place keeps
    the file's format version (its header prefix, sealed into both slots, cannot
    change in place); a file rewritten whole is a new file, of the current version.

    Parameters
    ----------
    update
        The update, its lock held and its base open.
    metadata
        The description of the new version.
    written
        By variable path, the chunks (row-major indices in the new chunk grid) the
        update stores; every other chunk of a variable the base holds with the same
        dimensions is kept.
    rewrite
        Rewrite the file whole even where it could be appended to.
    """
    base, target = update.base, update.target
    in_place = base.model.in_place_updates and not rewrite
    if update.remote is None and in_place:
        appended = FileAppend(target, base.header.file_length)  # type: ignore[arg-type]
        return InPlaceCommit(appended, base, metadata, written)
    if update.remote is None:
        return StagedRewrite(target, base, metadata, written)  # type: ignore[arg-type]
    url = os.fspath(target) if isinstance(target, str | os.PathLike) else ""
    options = update.storage_options or {}
    # below two smallest parts, rewriting the object costs no more than its head
    large = base.header.file_length >= 2 * S3_RULES.min_part
    upload = None
    if in_place and url and large:
        upload = start_multipart(url, options)
    if upload is not None:
        etag = object_etag(url, options)
        return InPlaceCommit(ObjectAppend(url, base, upload, etag), base, metadata, written)

    def local(path: Path) -> StagedRewrite:
        return StagedRewrite(path, base, metadata, written)

    return StagedUpload(update.remote, Path(base.source.name).name or "update.hurray", local)


def compact(
    target: str | os.PathLike[str] | UploadTarget,
    storage_options: Mapping[str, Any] | None = None,
) -> None:
    """Rewrite the file at ``target`` with every chunk in placement order and no
    unreferenced bytes, atomically, under its writer lock (``hurray compact``)."""
    with FileUpdate(target, storage_options) as update:
        with update_sink(update, update.base.metadata, {}, rewrite=True):
            pass
