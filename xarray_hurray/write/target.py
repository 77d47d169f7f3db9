"""Where a write goes, resolved once: a local path, an fsspec URL, an ``s3://`` object
or an upload target, with what a write asks of it (whether a file is there, its
writer lock, its current version)."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..container import ContainerReader, open_reader
from ..container.lock import lock_file
from ..container.tempfiles import writable_target
from ..io import UploadTarget, open_source, upload_target
from ..io.multipart import multipart_target
from ..io.source import LocalFileSource


@dataclass(frozen=True, eq=False)
class WriteTarget:
    """The target of a write, made by :meth:`resolve` from what the caller gave.

    Parameters
    ----------
    location
        The local path, the URL or the upload target.
    storage_options
        fsspec options for a URL.
    remote
        Where the finished file is uploaded; None for a local path.
    """

    location: str | os.PathLike[str] | UploadTarget
    storage_options: Mapping[str, Any] | None
    remote: UploadTarget | None

    @classmethod
    def resolve(
        cls,
        location: str | os.PathLike[str] | UploadTarget,
        storage_options: Mapping[str, Any] | None = None,
    ) -> WriteTarget:
        """The target at ``location``; a local one is checked before any work.

        Raises
        ------
        ValueError
            For storage options with a local path or an upload target, and a local
            path that names a FIFO, device or socket.
        IsADirectoryError, FileNotFoundError
            For a local path that is a directory, or whose directory does not exist.
        """
        remote = upload_target(location, storage_options)
        if remote is None:
            path = os.fspath(location)  # type: ignore[arg-type]  # local: a path
            writable_target(path)  # a FIFO, device or socket
            if os.path.isdir(path):
                raise IsADirectoryError(
                    errno.EISDIR, "cannot write a Hurray file over a directory", path
                )
            parent = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(parent):
                raise FileNotFoundError(errno.ENOENT, "no directory to write the file in", parent)
        return cls(location, storage_options, remote)

    @property
    def local(self) -> str | os.PathLike[str] | None:
        """The local path; None for a remote target."""
        return self.location if self.remote is None else None  # type: ignore[return-value]

    @property
    def multipart(self) -> tuple[str, dict[str, Any]] | None:
        """The URL and options of an ``s3://`` object written by a multipart upload."""
        return multipart_target(self.remote)

    @property
    def url(self) -> str:
        """The URL of a remote target given as one, else ``""``."""
        if self.remote is None or not isinstance(self.location, str | os.PathLike):
            return ""
        return os.fspath(self.location)

    @property
    def name(self) -> str:
        """The file name, as progress bars and staged files call it."""
        if isinstance(self.location, str | os.PathLike):
            return Path(os.fspath(self.location)).name
        return "remote.hurray"

    def exists(self) -> bool:
        """Whether there is a file at the target."""
        if self.remote is None:
            return os.path.exists(self.location)  # type: ignore[arg-type]
        try:
            open_source(self.location, self.storage_options).read(0, 1)  # type: ignore[arg-type]
        except FileNotFoundError:
            return False
        return True

    @contextlib.contextmanager
    def lock(self) -> Iterator[bool]:
        """Hold the writer lock of the file at a local target while the block runs,
        and say whether there is a file (then locked).  Objects cannot be locked:
        two writes of one object at once both succeed and the last one wins."""
        if self.remote is not None:
            yield self.exists()
            return
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(lock_file(self.location))  # type: ignore[arg-type]
            except FileNotFoundError:
                yield False
                return
            yield True

    @contextlib.contextmanager
    def open(self) -> Iterator[ContainerReader]:
        """The version of the file at the target, open while the block runs.

        Raises
        ------
        FileNotFoundError
            When there is no file.
        """
        base = open_reader(self.location, storage_options=self.storage_options)  # type: ignore[arg-type]
        try:
            yield base
        finally:
            if isinstance(base.source, LocalFileSource):
                # the base's descriptor goes with the write, not when its reader is
                # collected: after a rewrite it alone holds the old version's space
                base.source.close()
