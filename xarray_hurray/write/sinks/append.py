"""Where an :class:`~xarray_hurray.container.update.InPlaceCommit` puts the bytes of a
new version, side by side: :class:`FileAppend`, after the base's end in its local
file; :class:`ObjectAppend`, into a new ``s3://`` object put together by a multipart
upload that the store completes at one instant."""

from __future__ import annotations

import itertools
import math
import os

import numpy as np

from ...container import ContainerReader
from ...container.format import HEADER_SIZE
from ...container.update import AppendTarget
from ...errors import HurrayFormatError, HurrayValueError
from ...io.multipart import MultipartUpload, Part

WRITE_BUFFER = 4 * 2**20
"""Bytes gathered before one ``pwrite`` while appending a version."""


class FileAppend(AppendTarget):
    """The bytes of a new version appended to its local file, the header slot written
    in place.

    Parameters
    ----------
    path
        The file, already locked by the caller.
    base_length
        Where the base's bytes end: a discarded version is cut off there.
    """

    def __init__(self, path: str | os.PathLike[str], base_length: int) -> None:
        self._fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
        self._base_length = base_length
        self._slot_started = False  # from then on the new version may be the file's

    @property
    def buffer_bytes(self) -> int:
        return WRITE_BUFFER

    def store(self, data: bytes, offset: int) -> None:
        _write_at(self._fd, data, offset)

    def header(self) -> bytes:
        return os.pread(self._fd, HEADER_SIZE, 0)

    def sync(self) -> None:
        os.fsync(self._fd)

    def write_slot(self, slot: bytes, offset: int) -> None:
        # a pwrite that fails writes nothing (one cut short returns its count), so
        # until the first one returns no byte of the slot is in the file and discard
        # may still cut the appended bytes off (a full disk that allocates even to
        # overwrite); after it, a reader may see the new version, and a torn slot
        # is accepted only beside the bytes after the version's end
        done = os.pwrite(self._fd, slot, offset)
        self._slot_started = True
        _write_at(self._fd, slot[done:], offset + done)
        os.fsync(self._fd)
        os.close(self._fd)

    def discard(self, stored: bool) -> None:
        """Cut off whatever of the new version reached the file, so that the file ends
        where the base does and its space is given back, unless a byte of the new
        slot was written: then its version may be the file's and needs those bytes."""
        try:
            if stored and not self._slot_started:
                os.ftruncate(self._fd, self._base_length)
        finally:
            os.close(self._fd)


def _write_at(fd: int, data: bytes, offset: int) -> None:
    """Write all of ``data`` at ``offset`` (``pwrite`` may write less than asked)."""
    view = memoryview(data)
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done


class ObjectAppend(AppendTarget):
    """Where an :class:`~xarray_hurray.container.update.InPlaceCommit` of an object
    puts its new version: a new object, put together by a multipart upload that the
    store completes at one instant.

    Part 1 is the first bytes of the old object (at least the store's smallest part)
    with the new header slot, downloaded and uploaded; the rest of the old version's
    bytes are copied by the store itself (``UploadPartCopy``), never downloaded; the
    new bytes follow as uploaded parts.  Every copy insists on the version of the
    object the update read (its ETag), so an object changed meanwhile fails the
    update instead of mixing two versions.

    Parameters
    ----------
    url
        The object.
    base
        Its reader.
    upload
        A multipart upload started at ``url``.
    etag
        The ETag of the object ``base`` reads.
    """

    def __init__(self, url: str, base: ContainerReader, upload: MultipartUpload, etag: str) -> None:
        self.url, self.upload, self.etag = url, upload, etag
        rules = upload.rules
        length = base.header.file_length
        # the head part is the smallest part; the copies after it are at least as large
        if length < 2 * rules.min_part:
            raise HurrayValueError(f"{url} is too small for a multipart commit; rewrite it")
        head = rules.min_part
        self._head = base.source.read(0, head)
        if len(self._head) != head:
            raise HurrayFormatError(f"truncated object {url}: its first {head} bytes")
        pieces = math.ceil((length - head) / rules.max_part)
        cuts = np.linspace(head, length, pieces + 1).astype(np.int64).tolist()
        self._copies = list(itertools.pairwise(cuts))
        self._parts: list[Part] = []
        self._next_part = 2 + len(self._copies)

    @property
    def buffer_bytes(self) -> int:
        return PART_BYTES

    def store(self, data: bytes, offset: int) -> None:
        # the new bytes follow each other: each buffer is the next part
        self._parts.append(self.upload.upload_part(self._next_part, data))
        self._next_part += 1

    def header(self) -> bytes:
        return self._head[:HEADER_SIZE]

    def sync(self) -> None:
        pass  # the store holds an uploaded part durably

    def write_slot(self, slot: bytes, offset: int) -> None:
        head = self._head[:offset] + slot + self._head[offset + len(slot) :]
        parts = [self.upload.upload_part(1, head)]
        for number, (start, stop) in enumerate(self._copies, start=2):
            parts.append(self.upload.copy_part(number, self.url, start, stop, self.etag))
        self.upload.complete(parts + self._parts)  # the commit

    def discard(self, stored: bool) -> None:
        """Abort the upload: the store drops every part, the object stays as it was."""
        self.upload.abort()


PART_BYTES = 64 * 2**20
"""New bytes gathered into one uploaded part of an :class:`ObjectAppend`."""
