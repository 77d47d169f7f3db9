"""Writing a Hurray file: atomically, one chunk at a time, in placement order."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import HurrayValueError, TargetExistsError
from .checksum import chunk_crcs, crc32c
from .format import INDEX_ENTRY
from .head import HeadPlan, pack_head
from .metadata import DatasetMeta, VariableMeta
from .replace import move_into_place, sync_directory
from .sink import ChunkSink
from .tempfiles import keep_mode, remove_leftovers, temporary_path, writable_target

PLACEMENT_SLICE = 1 << 16
"""Chunks of a placement order handled at a time (turned into Python ints, located
among dask chunks): memory stays small however many chunks there are."""


class ContainerWriter(ChunkSink):
    """Stream a dataset into a Hurray file of the current format version.

    The metadata is fixed up front; the index root and the page tables are reserved
    after it, chunks follow in placement order (variable by variable, first the
    variables every open reads, then the others, each along its chunk curve: see
    :attr:`~.head.HeadPlan.placed`), and committing writes the index pages
    that hold a stored chunk, then fills in the page tables, the root and the header.
    Bytes go to a temporary file beside ``path`` that replaces ``path`` only when
    the whole file is written, so a failed write leaves ``path`` as it was.  Use as
    a context manager.

    Parameters
    ----------
    path
        The file to create or replace.
    metadata
        The dataset description (a tree of groups).
    exclusive
        Fail with :class:`~xarray_hurray.errors.TargetExistsError` at the commit,
        instead of replacing it, when a file exists at ``path`` (``mode="w-"``); the
        check and the move are one step.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        metadata: DatasetMeta,
        *,
        exclusive: bool = False,
    ) -> None:
        self.path = Path(path)
        self.metadata = metadata
        self.exclusive = exclusive
        self._head = HeadPlan(metadata)
        self._variables = dict(self._head.placed)
        # entries in placement order: a variable's chunks arrive in that order
        self._entries = {
            name: np.zeros(var.chunk_count, dtype=INDEX_ENTRY)
            for name, var in self._variables.items()
        }
        self._written = dict.fromkeys(self._entries, 0)
        self._expected = self.placement()
        self._next = next(self._expected, None)
        self.path = writable_target(self.path)
        remove_leftovers(self.path)
        self._tmp = temporary_path(self.path)
        # O_EXCL: never write into a file someone else made at the temporary name
        try:
            fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as err:
            # named by the target: the hidden temporary name means nothing to the caller
            raise type(err)(
                err.errno, f"cannot create a file in its folder ({err.strerror})", str(self.path)
            ) from err
        self._file = os.fdopen(fd, "wb")
        self._position = self._head.length
        self._write_back = WriteBack(fd)
        try:
            keep_mode(self.path, fd)
            # zeros where the header, metadata, root, tables and front pages go: they
            # are known only at the commit, which seeks back and writes them over
            self._file.write(bytes(self._position))
        except BaseException:
            self.abort()
            raise

    @property
    def placed(self) -> list[tuple[str, VariableMeta]]:
        """Every variable with its path, in the order their chunks are written."""
        return self._head.placed

    def placement(self) -> Iterator[tuple[str, int]]:
        """Every ``(variable path, row-major chunk index)`` in the order chunks are
        written."""
        for name, var in self._variables.items():
            # a list of every chunk id of a variable of 10 million chunks takes 360 MB
            for start in range(0, var.chunk_count, PLACEMENT_SLICE):
                for chunk_id in var.placement[start : start + PLACEMENT_SLICE].tolist():
                    yield name, chunk_id

    def write_chunk(
        self, name: str, chunk_id: int, data: bytes | None, crc: int | None = None
    ) -> None:
        """Append the stored bytes of chunk ``chunk_id`` of the variable at path
        ``name``; ``None`` leaves it out (a missing chunk, which reads as the fill).
        ``crc``: the CRC-32C of ``data`` where it is known (None: computed here).

        Raises
        ------
        ValueError
            When the chunk is not the next one in placement order, or ``data`` is
            empty (a stored chunk holds at least one byte).
        """
        if self._next is None or self._next != (name, chunk_id):
            expected = "none" if self._next is None else f"{self._next[0]!r} {self._next[1]}"
            raise HurrayValueError(
                f"chunk {chunk_id} of {name!r} written out of order; the next chunk is {expected}"
            )
        position = self._written[name]
        if data is not None:
            if not data:
                raise HurrayValueError(f"chunk {chunk_id} of {name!r} has no bytes")
            self._file.write(data)
            crc = crc32c(data) if crc is None else crc
            self._entries[name][position] = (self._position, len(data), crc)
            self._position += len(data)
        self._written[name] = position + 1
        self._next = next(self._expected, None)

    def write_chunks(
        self,
        name: str,
        chunk_ids: np.ndarray,
        data: Sequence[bytes | None],
        crcs: Sequence[int] | None = None,
    ) -> None:
        """Append chunks ``chunk_ids`` of the variable at path ``name`` in turn, with the
        stored bytes ``data`` (``None``: missing) and their CRC-32C ``crcs`` where
        known: what as many calls of :meth:`write_chunk` do, with its checks, at a
        fraction of the cost per chunk.

        Raises
        ------
        ValueError
            As :meth:`write_chunk`, for the first chunk it would refuse (the chunks
            before it are written).
        """
        count = len(data)
        if len(chunk_ids) != count:
            raise HurrayValueError(f"{len(chunk_ids)} chunk ids for {count} chunks of {name!r}")
        if crcs is not None and len(crcs) != count:
            raise HurrayValueError(f"{len(crcs)} checksums for {count} chunks of {name!r}")
        checksums = chunk_crcs(data, crcs)
        position = self._written.get(name, 0)
        # -1: missing; 0 (no bytes) is refused below
        sizes = np.fromiter((-1 if d is None else len(d) for d in data), np.int64, count)
        if (
            not count
            or self._next is None
            or self._next[0] != name
            # name is a variable of the file here: the one self._next names
            or not np.array_equal(
                self._variables[name].placement[position : position + count], chunk_ids
            )
            or not sizes.all()
        ):
            # chunk by chunk, to refuse the right one the way write_chunk does
            for chunk_id, one, crc in zip(
                np.asarray(chunk_ids).tolist(), data, checksums, strict=True
            ):
                self.write_chunk(name, chunk_id, one, crc)
            return
        stored = [d for d in data if d is not None]
        write_gathered(self._file, stored)
        kept = sizes > 0
        sizes[~kept] = 0
        ends = self._position + np.cumsum(sizes)
        entries = self._entries[name][position : position + count]
        entries["offset"][kept] = (ends - sizes)[kept]
        entries["size"] = sizes
        entries["crc32c"][kept] = np.asarray(checksums, dtype=np.uint32)[kept]
        self._position = int(ends[-1])
        self._write_back.written(self._position)
        self._written[name] = position + count
        # the placement order moves on past the chunks written
        deque(islice(self._expected, count - 1), maxlen=0)
        self._next = next(self._expected, None)

    def commit(self) -> None:
        """Write the pages, page tables, root and header and move the file into place."""
        if self._next is not None:
            raise HurrayValueError(
                f"cannot commit: chunk {self._next[1]} of {self._next[0]!r} and the "
                "chunks after it were never written"
            )
        index = pack_head(self._head, self._entries, self._position)
        self._write_back.finish()
        self._file.seek(self._position)
        self._file.write(index.pages)
        self._file.seek(0)
        self._file.write(index.head)
        # durable before the rename: else a crash could leave the new name on a file
        # whose bytes never reached the disk
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        if self.exclusive:
            # a hard link is created only where no name exists: check and move in one
            try:
                os.link(self._tmp, self.path)
            except FileExistsError as err:
                raise TargetExistsError(
                    f"{self.path}: another writer created a file there while this one was "
                    "written; it was left as it is",
                    value=str(self.path),
                ) from err
            self._tmp.unlink()
            sync_directory(self.path.parent)
        else:
            move_into_place(self._tmp, self.path)

    def abort(self) -> None:
        """Discard the temporary file; ``path`` is left untouched.

        The file is deleted even when closing it fails, as it does after a full disk
        (ENOSPC) or a file size limit (EFBIG): closing flushes the buffer again.
        """
        try:
            self._write_back.finish()
        except OSError:
            pass  # the write already failed; the file goes either way
        try:
            self._file.close()
        except OSError:
            pass  # the write already failed; the file goes either way
        finally:
            self._tmp.unlink(missing_ok=True)


WRITE_BACK_BYTES = 64 * 2**20
"""Bytes appended between two background ``fdatasync`` calls of a new file."""


class WriteBack:
    """Flush a file being written to its disk in the background, a few tens of MiB
    at a time, so that the commit's ``fsync`` finds little left to write.

    The commit's ``fsync`` is what makes the file durable; these earlier syncs only
    start the disk's work while the chunks after them are still being encoded, in a
    thread of their own (the call releases the GIL).  At most one is in flight.  A
    no-op where the system has no ``fdatasync`` (macOS, Windows).
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._synced = 0  # bytes covered by the last sync started
        self._pending: Future[None] | None = None
        self._pool: ThreadPoolExecutor | None = None

    def written(self, length: int) -> None:
        """The file now holds ``length`` bytes: start a sync if enough are new and
        none is running."""
        sync = getattr(os, "fdatasync", None)
        if sync is None or length - self._synced < WRITE_BACK_BYTES:
            return
        if self._pending is not None:
            if not self._pending.done():
                return
            self._pending.result()  # a failed sync fails the write here
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="hurray-write-back")
        self._synced = length
        self._pending = self._pool.submit(sync, self._fd)

    def finish(self) -> None:
        """Wait for the sync in flight, raising its error, and stop the thread."""
        pending, self._pending = self._pending, None
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if pending is not None:
            pending.result()


IOV_MAX = 1024
"""Buffers handed to one ``writev`` (POSIX guarantees at least 16; Linux and macOS
take 1024)."""


def write_gathered(file: BinaryIO, buffers: Sequence[bytes]) -> None:
    """Write ``buffers`` one after another at ``file``'s position, in as few calls as
    the system takes: ``os.writev`` of up to :data:`IOV_MAX` buffers, without
    gathering them into one (no copy, the GIL released), where it exists; the
    buffered file's ``writelines`` elsewhere (Windows).
    """
    if not hasattr(os, "writev"):
        file.writelines(buffers)
        return
    file.flush()  # what the buffered file holds comes first
    fd = file.fileno()
    views = [memoryview(b) for b in buffers if b]
    first = 0  # the first buffer not yet written whole
    while first < len(views):
        done = os.writev(fd, views[first : first + IOV_MAX])
        # a write cut short (a signal, a full pipe) leaves the rest for the next call
        while first < len(views) and done >= len(views[first]):
            done -= len(views[first])
            first += 1
        if done:
            views[first] = views[first][done:]
