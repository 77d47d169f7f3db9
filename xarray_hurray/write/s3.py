"""Where the commit of an update of an ``s3://`` object puts its new version: a new
object, put together by a multipart upload that the store completes at one instant."""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..container import ContainerReader
from ..container.format import SLOT_HEADER_SIZE
from ..container.update import AppendTarget
from ..errors import HurrayFormatError, HurrayValueError
from ..io.multipart import MultipartUpload, Part


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
        Its reader (format 1.1 or later).
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
        return self._head[:SLOT_HEADER_SIZE]

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
