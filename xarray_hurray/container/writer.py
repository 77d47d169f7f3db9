"""Writing a Hurray file: atomically, one chunk at a time, in placement order."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import numpy as np

from ..errors import HurrayValueError
from .checksum import crc32c
from .format import HEADER_SIZE, INDEX_ENTRY, Header
from .index import pack_index
from .metadata import DatasetMeta, VariableMeta


class ContainerWriter:
    """Stream a dataset into a Hurray file.

    The metadata is fixed up front; the index region is reserved after it, chunks
    follow in placement order (variable by variable, each along its chunk curve), and
    closing fills in the indexes and the header.  Bytes go to a temporary file beside
    ``path`` that replaces ``path`` only when the whole file is written, so a failed
    write leaves ``path`` as it was.  Use as a context manager.

    Parameters
    ----------
    path
        The file to create or replace.
    metadata
        The dataset description.
    exclusive
        Fail with :class:`FileExistsError` at closing, instead of replacing it, when a
        file exists at ``path`` (``mode="w-"``); the check and the move are one step.
    """

    def __init__(
        self, path: str | os.PathLike[str], metadata: DatasetMeta, *, exclusive: bool = False
    ) -> None:
        self.path = Path(path)
        self.metadata = metadata
        self.exclusive = exclusive
        self._meta_bytes = metadata.to_bytes()
        self._index_offset = HEADER_SIZE + len(self._meta_bytes)
        self._entries = {
            v.name: np.zeros(v.chunk_count, dtype=INDEX_ENTRY) for v in metadata.variables
        }
        self._expected = self.placement()
        self._next = next(self._expected, None)
        self._tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}.tmp")
        fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self._file = os.fdopen(fd, "wb")
        self._position = self._index_offset + metadata.index_length
        try:
            self._file.write(bytes(self._position))
        except BaseException:
            self.abort()
            raise

    def placement(self) -> Iterator[tuple[VariableMeta, int]]:
        """Every ``(variable, row-major chunk index)`` in the order chunks are written."""
        for var in self.metadata.variables:
            for chunk_id in var.placement.tolist():
                yield var, chunk_id

    def write_chunk(self, name: str, chunk_id: int, data: bytes) -> None:
        """Append the stored bytes of chunk ``chunk_id`` of variable ``name``.

        Raises
        ------
        ValueError
            When the chunk is not the next one in placement order.
        """
        if self._next is None or (self._next[0].name, self._next[1]) != (name, chunk_id):
            expected = "none" if self._next is None else f"{self._next[0].name!r} {self._next[1]}"
            raise HurrayValueError(
                f"chunk {chunk_id} of {name!r} written out of order; the next chunk is {expected}"
            )
        self._file.write(data)
        self._entries[name][chunk_id] = (self._position, len(data), crc32c(data))
        self._position += len(data)
        self._next = next(self._expected, None)

    def close(self) -> None:
        """Write the indexes and the header and move the file into place."""
        if self._next is not None:
            raise HurrayValueError(
                f"cannot close: chunk {self._next[1]} of {self._next[0].name!r} and the "
                "chunks after it were never written"
            )
        header = Header(
            metadata_offset=HEADER_SIZE,
            metadata_length=len(self._meta_bytes),
            metadata_crc32c=crc32c(self._meta_bytes),
            index_offset=self._index_offset,
            index_length=self.metadata.index_length,
            file_length=self._position,
        )
        self._file.seek(0)
        self._file.write(header.pack() + self._meta_bytes)
        for var in self.metadata.variables:
            self._file.write(pack_index(self._entries[var.name]))
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        if self.exclusive:
            # a hard link is created only where no name exists: check and move in one
            os.link(self._tmp, self.path)
            self._tmp.unlink()
            _sync_directory(self.path.parent)
        else:
            move_into_place(self._tmp, self.path)

    def abort(self) -> None:
        """Discard the temporary file; ``path`` is left untouched."""
        self._file.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> ContainerWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            try:
                self.close()
            except BaseException:
                self.abort()
                raise
        else:
            self.abort()


def move_into_place(new: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Put ``new``, a finished file or directory beside ``target``, at ``target``.

    The one way a completed write takes the place of what was there.  A file over a
    file (or over nothing) is a single atomic rename: a reader opens the old file or
    the new one.  A rename cannot replace a directory, nor put one over a file, so
    there the old target is renamed aside first and deleted only once ``new`` is in
    place; should that second rename fail, the old target is put back.  No step
    deletes the old content before the new one is at ``target``.  The rename is made
    durable with a sync of the directory.
    """
    new, target = Path(new), Path(target)
    if not os.path.lexists(target) or not (os.path.isdir(target) or os.path.isdir(new)):
        os.replace(new, target)
    else:
        aside = target.with_name(f".{target.name}.{uuid.uuid4().hex}.old")
        os.replace(target, aside)
        try:
            os.replace(new, target)
        except BaseException:
            os.replace(aside, target)
            raise
        if aside.is_dir() and not aside.is_symlink():
            shutil.rmtree(aside)
        else:
            aside.unlink()
    _sync_directory(target.parent)


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (POSIX); a no-op where directories
    cannot be opened (Windows)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
