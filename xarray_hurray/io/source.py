"""Picklable, thread-safe readers of byte ranges.

A source holds only what names its bytes (a path, a URL and its storage options, or
a file-like object); handles are opened lazily in each process and never pickled.
Reads past the end return fewer bytes: callers decide whether that is an error.
"""

from __future__ import annotations

# asyncio is imported in the functions that await: a reader that never awaits skips
# its import (25 ms of a cold process)
import os
import queue
import reprlib
import stat
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, as_completed
from typing import Any, BinaryIO, ClassVar

import numpy as np

from ..errors import HurrayChangedError, HurrayTypeError, HurrayValueError
from .costs import OBJECT_STORE
from .plan import MergePolicy
from .pool import SharedThreadPool
from .remote import (
    DEFAULT_RETRY,
    ObjectVersion,
    RetryPolicy,
    changed,
    http_range,
    info_version,
    s3_range,
    with_retries,
)

_O_BINARY = getattr(os, "O_BINARY", 0)
"""Open flag that stops Windows from translating line ends (0 elsewhere)."""


class ByteSource(ABC):
    """Random access to the bytes of one file."""

    @property
    @abstractmethod
    def name(self) -> str:
        """What the bytes are, for messages."""

    @abstractmethod
    def read(self, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)``; fewer when the file ends before ``stop``."""

    def read_ranges(self, ranges: np.ndarray) -> list[bytes]:
        """The bytes of each ``[start, stop)`` row of ``ranges``."""
        return [self.read(int(start), int(stop)) for start, stop in ranges]

    def read_ranges_as_completed(self, ranges: np.ndarray) -> Iterator[tuple[int, bytes]]:
        """``(row, bytes)`` for each ``[start, stop)`` row of ``ranges``, in the order the
        answers arrive, so that a caller can use each answer while the others are still
        on their way.  By default every range is read first, then given in row order."""
        yield from enumerate(self.read_ranges(ranges))

    async def read_ranges_async(self, ranges: np.ndarray) -> list[bytes]:
        """:meth:`read_ranges` as a coroutine; by default it runs in a thread, so the
        event loop goes on while the blocking read waits."""
        import asyncio

        return await asyncio.to_thread(self.read_ranges, ranges)

    def size(self) -> int | None:
        """Size of the file in bytes when it is known without a request, else None."""
        return None

    @property
    def local(self) -> bool:
        """Whether a request costs a system call and no round trip (a local file).

        A reader then reads a large read's ranges a piece at a time in the threads
        that decode them, in placement order, instead of fetching them all before
        decoding: the reads overlap the decoding, on every core, and only the
        pieces being decoded are held.
        """
        return False

    def default_policy(self) -> MergePolicy:
        """The merge policy for reads from this source when the caller gives none."""
        return MergePolicy()

    @property
    def pins_content(self) -> bool:
        """Whether no answer from another version of the file can pass for the version
        first read: true of a local file (read through the descriptor first opened,
        its identity checked when reopened) and of bytes in memory; of a remote
        object, where its version is pinned by a strong ETag or a version id.  Where
        not (a server sending no ETag, whose Last-Modified counts whole seconds), a
        replacement of the same size is told only by the bytes, and the reader checks
        every chunk's checksum whatever ``verify_checksums`` says."""
        return True


def _completed(futures: dict[Future[bytes], int]) -> Iterator[tuple[int, bytes]]:
    try:
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        for future in futures:
            future.cancel()


def _arrivals(
    arrived: queue.SimpleQueue[tuple[int, bytes] | None], future: Future[Any], count: int
) -> Iterator[tuple[int, bytes]]:
    """The ``count`` answers put on ``arrived`` as they come; None there ends them
    early, when ``future`` (the coroutine fetching them) failed: its error is raised.
    Stopping early cancels the fetches still under way."""
    try:
        for _ in range(count):
            answer = arrived.get()
            if answer is None:
                future.result()  # raises the failure that ended the fetches
                raise RuntimeError("the fetches ended before every answer arrived")
            yield answer
    finally:
        future.cancel()


def _identity(fd: int) -> tuple[int, int, int, int]:
    """What tells one version of a file from another: device, inode, size, mtime."""
    stat = os.fstat(fd)
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


class _Descriptor:
    """An open file descriptor, closed when the last reference to it is dropped.

    A read holds a reference for as long as it uses the descriptor, so closing a
    source while other threads read from it never closes a descriptor under them
    (whose number the system could meanwhile give to another file).
    """

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __del__(self, close: Callable[[int], None] = os.close) -> None:
        close(self.fd)


def _read_fully(read: Callable[[int, int], bytes], start: int, stop: int) -> bytes:
    """Bytes ``[start, stop)`` from ``read(size, offset)``, which may return fewer bytes
    than asked for before the end of the file (``pread`` returns at most about 2 GiB)."""
    want = max(stop - start, 0)
    data = read(want, start)
    if len(data) == want or not data:
        return data
    parts, got = [data], len(data)
    while got < want:
        more = read(want - got, start + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class LocalFileSource(ByteSource):
    """A file on the local file system, read with ``os.pread`` (no shared seek).

    The first open records the file's identity (device, inode, size, modification
    time), which travels with the pickled source; a reopen in another process, or
    after :meth:`close`, that finds a different file raises :class:`HurrayChangedError`
    rather than mixing the old metadata with the new bytes.  After
    :meth:`allow_appends`, the same file grown longer is accepted too.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        identity: tuple[int, int, int, int] | None = None,
        appends: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self._identity = identity
        self._appends = appends
        self._descriptor: _Descriptor | None = None
        self._pid = -1
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.path

    def _open(self) -> _Descriptor:
        with self._lock:
            # a forked child opens the file again, as any new process does, so that it
            # too finds the file it reads checked against the identity first seen
            if self._descriptor is None or self._pid != os.getpid():
                # non-blocking: opening a FIFO for reading would wait for a writer
                flags = os.O_RDONLY | _O_BINARY | getattr(os, "O_NONBLOCK", 0)
                descriptor = _Descriptor(os.open(self.path, flags))
                mode = os.fstat(descriptor.fd).st_mode
                if not stat.S_ISREG(mode):
                    raise HurrayValueError(
                        f"{self.path} is not a regular file (a FIFO, device, socket or "
                        "directory): it cannot hold a Hurray file",
                        value=self.path,
                    )
                found = _identity(descriptor.fd)
                if self._identity is not None and not self._same(found):
                    raise HurrayChangedError(
                        f"{self.path} was replaced or modified after it was opened; "
                        "open it again to read the new file",
                        value=self.path,
                    )
                self._descriptor, self._pid, self._identity = descriptor, os.getpid(), found
            return self._descriptor

    def _same(self, found: tuple[int, int, int, int]) -> bool:
        """Whether ``found`` is the identity of the file first opened (or, after
        :meth:`allow_appends`, of that file grown by appends)."""
        assert self._identity is not None
        if not self._appends:
            return found == self._identity
        return found[:2] == self._identity[:2] and found[2] >= self._identity[2]

    def allow_appends(self) -> None:
        """Accept the file grown since it was opened, as long as it is the same file
        (device and inode): its format promises that appends leave every byte a
        reader of its earlier version uses as it was (a Hurray commit)."""
        self._appends = True

    def read(self, start: int, stop: int) -> bytes:
        # the local name keeps the descriptor alive for the whole read, even when
        # close() drops the source's reference meanwhile (see _Descriptor)
        descriptor = self._open()
        return _read_fully(lambda size, offset: os.pread(descriptor.fd, size, offset), start, stop)

    def size(self) -> int:
        descriptor = self._open()
        return os.fstat(descriptor.fd).st_size

    @property
    def local(self) -> bool:
        return True

    def close(self) -> None:
        """Drop the handle of this process (it closes once no read uses it); the next
        read reopens it."""
        with self._lock:
            self._descriptor = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "identity": self._identity, "appends": self._appends}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["path"], state["identity"], state.get("appends", False))


PREFIX_BYTES = 16
"""Bytes of a byte string that an error message shows."""

_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = 80


def _describe(value: object) -> str:
    """``value`` for an error message, short whatever its size: a byte string by its
    first :data:`PREFIX_BYTES` bytes and its length (the whole file, pasted into a
    message, would bury it), anything else by a repr cut to about 80 characters."""
    if isinstance(value, bytes | bytearray):
        more = "..." if len(value) > PREFIX_BYTES else ""
        return (
            f"a byte string of {len(value)} bytes, {bytes(value[:PREFIX_BYTES])!r}{more}; "
            "wrap it in io.BytesIO to read it"
        )
    return _SHORT_REPR.repr(value)


class FileObjectSource(ByteSource):
    """A seekable binary file-like object, read under a lock.

    Pickling pickles the object itself, which works for in-memory buffers such as
    :class:`io.BytesIO` and fails clearly for objects that cannot be pickled.
    """

    def __init__(self, fileobj: BinaryIO) -> None:
        if not (hasattr(fileobj, "read") and hasattr(fileobj, "seek")):
            raise HurrayTypeError(
                f"expected a seekable binary file-like object, got {_describe(fileobj)}",
                value=fileobj,
            )
        self.fileobj = fileobj
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return getattr(self.fileobj, "name", type(self.fileobj).__name__)

    def read(self, start: int, stop: int) -> bytes:
        # seek and read are two calls on one shared position: one reader at a time
        with self._lock:
            return _read_fully(self._read_at, start, stop)

    def _read_at(self, size: int, offset: int) -> bytes:
        self.fileobj.seek(offset)
        data = self.fileobj.read(size)
        if not isinstance(data, bytes):
            raise HurrayTypeError(f"{self.name} must be opened in binary mode")
        return data

    def size(self) -> int:
        with self._lock:
            return self.fileobj.seek(0, os.SEEK_END)

    def __getstate__(self) -> dict[str, Any]:
        return {"fileobj": self.fileobj}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["fileobj"])


class RemoteSource(ByteSource):
    """A remote object, pinned to the version of it that the first read saw.

    Each answer's version is handed to :meth:`_check_version`: the first pins it and
    every later one, in this process or after pickling, must be the same version, else
    :class:`HurrayChangedError` (:mod:`.remote`).  Subclasses pickle the pinned
    version with what names the object and give it back to ``__init__``.

    Parameters
    ----------
    version
        The version to pin from the start (a pickled source carries its own).
    """

    def __init__(self, version: ObjectVersion | None = None) -> None:
        self._version = version
        # guards the pin; a subclass may guard its own lazily made state with it too
        self._lock = threading.Lock()

    @property
    def version(self) -> ObjectVersion | None:
        """The pinned version, None before the first read."""
        return self._version

    def size(self) -> int | None:
        """The size of the pinned version, once a read has pinned one."""
        return None if self._version is None else self._version.size

    def _check_version(self, found: ObjectVersion | None) -> None:
        """Pin ``found`` if nothing is pinned yet, else require that it is the pinned
        version; None (nothing known of the answer's version) passes.

        Raises
        ------
        HurrayChangedError
            When ``found`` differs from the pinned version, naming this source.
        """
        if found is None:
            return
        # concurrent first reads race to pin: the first wins, the others are compared
        with self._lock:
            if self._version is None:
                self._version = found
                return
            conflict = self._version.conflict(found)
        if conflict:
            raise changed(self.name, conflict)

    @property
    def pins_content(self) -> bool:
        version = self._version
        if version is None:
            return False
        return bool(version.version_id or (version.etag and not version.etag.startswith("W/")))

    def _unpin(self) -> None:
        """Forget the pinned version (this source replaced the object): the next read
        pins the new one."""
        with self._lock:
            self._version = None


class PooledSource(RemoteSource):
    """A remote object whose ranges are fetched one request each, the ranges of one
    read concurrently in a pool of threads (the reader's merge policy has already
    decided what to merge).

    Subclasses give :meth:`_fetch`, which reads one range and checks its version, and
    ``_threads``, the pool.
    """

    _threads: ClassVar[SharedThreadPool]
    """The pool whose threads fetch the ranges of a read."""

    @abstractmethod
    def _fetch(self, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)`` of the pinned version (pinning it at the first read)."""

    def read(self, start: int, stop: int) -> bytes:
        return self._fetch(start, stop)

    def read_ranges(self, ranges: np.ndarray) -> list[bytes]:
        if len(ranges) <= 1:
            return [self._fetch(int(a), int(b)) for a, b in ranges]
        return list(self._threads().map(lambda row: self._fetch(int(row[0]), int(row[1])), ranges))

    def read_ranges_as_completed(self, ranges: np.ndarray) -> Iterator[tuple[int, bytes]]:
        """``(row, bytes)`` for each ``[start, stop)`` row of ``ranges``, every range sent
        to the pool at once and given as it completes.  The first failed read raises;
        reads not yet started are then cancelled, as they are when the caller stops
        early."""
        if len(ranges) <= 1:
            return enumerate(self.read_ranges(ranges))
        pool = self._threads()
        futures = {pool.submit(self._fetch, int(a), int(b)): k for k, (a, b) in enumerate(ranges)}
        return _completed(futures)

    async def read_ranges_async(self, ranges: np.ndarray) -> list[bytes]:
        """:meth:`read_ranges` as a coroutine: every range waits in this source's pool
        of threads, not in the event loop's default one (a few threads on a small
        machine), so concurrent reads keep all their requests in flight."""
        import asyncio

        loop = asyncio.get_running_loop()
        pool = self._threads()
        fetches = [loop.run_in_executor(pool, self._fetch, int(a), int(b)) for a, b in ranges]
        return list(await asyncio.gather(*fetches))


class FsspecSource(RemoteSource):
    """A URL read through fsspec; the file system is created lazily per process.

    The first read pins the object's version and every later read, in this process or
    after pickling, must find the same version, else :class:`HurrayChangedError`
    (:mod:`.remote`).  ``http(s)://`` and ``s3://`` reads are conditional requests
    (``If-Match``, the S3 version id) whose answers are checked as well, each attempt
    with a timeout and transient failures retried as ``retry`` says; the ranges of one
    read are fetched concurrently, up to ``OBJECT_STORE.concurrency`` at a time.  Other
    file systems are read with ``cat_ranges`` and the version their ``info`` reports is
    checked after every read.

    Parameters
    ----------
    url
        The object's fsspec URL.
    storage_options
        Options for the fsspec file system.
    retry
        Timeout and retries of ``http(s)`` and ``s3`` requests; :data:`DEFAULT_RETRY`
        (30 s per attempt, 4 retries) when None.
    version
        The version to pin from the start (a pickled source carries its own).
    """

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        *,
        retry: RetryPolicy | None = None,
        version: ObjectVersion | None = None,
    ) -> None:
        super().__init__(version)
        self.url = url
        self.storage_options = dict(storage_options or {})
        self.retry = retry or DEFAULT_RETRY
        self._fs: Any = None
        self._path = ""

    @property
    def name(self) -> str:
        return self.url

    def _resolve(self) -> tuple[Any, str]:
        with self._lock:
            if self._fs is None:
                import fsspec

                self._fs, self._path = fsspec.core.url_to_fs(self.url, **self.storage_options)
            return self._fs, self._path

    def read(self, start: int, stop: int) -> bytes:
        return self.read_ranges(np.array([[start, stop]], dtype=np.int64))[0]

    def read_ranges(self, ranges: np.ndarray) -> list[bytes]:
        if len(ranges) == 0:
            return []
        fs, path = self._resolve()
        fetch = self._ranged_fetch(fs)
        if fetch is None:
            return self._read_checked_by_info(fs, path, ranges)
        from fsspec.asyn import sync

        blobs: list[bytes] = sync(fs.loop, self._gather, fs, path, fetch, ranges)
        return blobs

    async def read_ranges_async(self, ranges: np.ndarray) -> list[bytes]:
        """:meth:`read_ranges` as a coroutine.  ``http(s)`` and ``s3`` ranges are fetched
        on the file system's own event loop (its connections belong to it), awaited
        from the caller's without a thread; other file systems read in a thread."""
        if len(ranges) == 0:
            return []
        import asyncio

        fs, path = await asyncio.to_thread(self._resolve)
        fetch = self._ranged_fetch(fs)
        if fetch is None:
            return await asyncio.to_thread(self._read_checked_by_info, fs, path, ranges)
        future = asyncio.run_coroutine_threadsafe(self._gather(fs, path, fetch, ranges), fs.loop)
        return await asyncio.wrap_future(future)

    @staticmethod
    def _ranged_fetch(fs: Any) -> Callable[..., Any] | None:
        """The conditional range request of ``fs``'s protocol, None for the others."""
        protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
        return http_range if "http" in protocols else s3_range if "s3" in protocols else None

    def read_ranges_as_completed(self, ranges: np.ndarray) -> Iterator[tuple[int, bytes]]:
        if len(ranges) <= 1:
            return enumerate(self.read_ranges(ranges))
        fs, path = self._resolve()
        fetch = self._ranged_fetch(fs)
        if fetch is None:
            return enumerate(self._read_checked_by_info(fs, path, ranges))
        import asyncio

        arrived: queue.SimpleQueue[tuple[int, bytes] | None] = queue.SimpleQueue()
        future = asyncio.run_coroutine_threadsafe(
            self._gather(fs, path, fetch, ranges, arrived.put), fs.loop
        )
        # after every answer, or at the first failure: the end of the answers
        future.add_done_callback(lambda _: arrived.put(None))
        return _arrivals(arrived, future, len(ranges))

    async def _gather(
        self,
        fs: Any,
        path: str,
        fetch: Callable[..., Any],
        ranges: np.ndarray,
        arrived: Callable[[tuple[int, bytes]], None] | None = None,
    ) -> list[bytes]:
        """Fetch every range with ``fetch`` on ``fs``'s event loop, at most
        ``OBJECT_STORE.concurrency`` at a time (the number the merge policy plans for);
        each answer is also handed to ``arrived`` as ``(row, bytes)`` once it is in."""
        import asyncio

        slots = asyncio.Semaphore(OBJECT_STORE.concurrency)

        async def one(row: int, start: int, stop: int) -> bytes:
            data = b""
            if stop > start:
                async with slots:
                    data, version = await with_retries(
                        lambda: fetch(fs, path, start, stop, self._version),
                        self.retry,
                        f"reading bytes [{start}, {stop}) of {self.url}",
                    )
                self._check_version(version)
            if arrived is not None:
                arrived((row, data))
            return data

        rows = enumerate(ranges.tolist())
        return list(await asyncio.gather(*(one(k, int(a), int(b)) for k, (a, b) in rows)))

    def _read_checked_by_info(self, fs: Any, path: str, ranges: np.ndarray) -> list[bytes]:
        """Read through ``cat_ranges``; the version ``info`` reports is pinned before the
        first read and checked after each."""
        # pinned before and checked after: bytes read while the object was replaced
        # fail the second check instead of being returned
        if self._version is None:
            self._check_version(info_version(fs.info(path)))
        starts = [int(s) for s in ranges[:, 0]]
        stops = [int(s) for s in ranges[:, 1]]
        blobs = fs.cat_ranges([path] * len(starts), starts, stops, on_error="raise")
        self._check_version(info_version(fs.info(path)))
        return [bytes(b) for b in blobs]

    def default_policy(self) -> MergePolicy:
        return OBJECT_STORE.merge_policy()

    def upload(self, local_path: str | os.PathLike[str]) -> None:
        """Put the finished file ``local_path`` at this URL.

        The file system's own upload is used (for s3fs a single put, or a multipart
        upload for large files): the object appears only when the upload completes.
        The next read pins the new object.
        """
        fs, path = self._resolve()
        fs.put_file(os.fspath(local_path), path)
        self._unpin()

    def __getstate__(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "storage_options": self.storage_options,
            "retry": self.retry,
            "version": self._version,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(
            self,
            state["url"],
            state["storage_options"],
            retry=state["retry"],
            version=state["version"],
        )


def is_url(path: str) -> bool:
    """Whether ``path`` is read through fsspec: it names a protocol (``"s3://..."``,
    also chained as ``"simplecache::s3://..."``); anything else is a local path."""
    return "://" in path
