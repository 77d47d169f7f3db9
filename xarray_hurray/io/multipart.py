"""Multipart uploads: one object written as numbered parts, from any process.

A store's multipart upload takes the parts of one object in any order and from any
number of clients, and makes the object appear only when the upload is completed
with the list of parts; aborting it discards every part and leaves the target as it
was.  This module knows byte ranges only:

- :class:`MultipartUpload`: an upload in progress, picklable, so that Dask workers
  upload parts themselves (:meth:`~MultipartUpload.upload_part` returns the
  :class:`Part` to complete with) while one process completes or aborts it.
- :func:`start_multipart`: begin one at a target, where the store offers it
  (``s3://`` through s3fs); None elsewhere.
- :func:`cut_runs`: cut a sequence of pieces (chunks) into runs of consecutive
  pieces, one part each, within the store's rules (:class:`PartRules`) and a memory
  budget per part.
- :func:`pending_uploads`: the uploads in progress at a target (after a client was
  killed, or in tests, to show that nothing was left behind).
"""

from __future__ import annotations

import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import HurrayValueError, TargetExistsError


@dataclass(frozen=True)
class PartRules:
    """What a store requires of the parts of one multipart upload.

    Parameters
    ----------
    min_part
        Smallest part in bytes, except the last (the part with the highest number).
    max_part
        Largest part in bytes.
    max_parts
        Most parts in one upload; part numbers run from 1 to this.
    """

    min_part: int = 5 * 2**20
    max_part: int = 5 * 2**30
    max_parts: int = 10_000


S3_RULES = PartRules()
"""Amazon S3's rules (and those of S3-compatible stores such as moto's server): parts
of 5 MiB to 5 GiB except the last, at most 10,000 of them."""


@dataclass(frozen=True)
class Part:
    """A part uploaded: its number and the identity the store gave it."""

    number: int
    etag: str


class MultipartUpload(ABC):
    """One multipart upload in progress at one target.

    Instances are picklable and hold no connection: any process may upload parts.
    Uploading a part again under the same number replaces it, so a task that is
    run twice (a worker lost and its task rerun) does no harm.
    """

    rules: PartRules = S3_RULES

    @property
    @abstractmethod
    def name(self) -> str:
        """The target, for messages."""

    @abstractmethod
    def upload_part(self, number: int, data: bytes | memoryview) -> Part:
        """Upload ``data`` as part ``number`` (1-based)."""

    @abstractmethod
    def copy_part(self, number: int, source: str, start: int, stop: int, etag: str) -> Part:
        """Make bytes ``[start, stop)`` of the object ``source`` (a URL of the same
        store) part ``number``, copied by the store: nothing is downloaded.  The copy
        fails unless ``source`` still has the version ``etag``."""

    @abstractmethod
    def complete(self, parts: Sequence[Part], exclusive: bool = False) -> None:
        """Join ``parts`` in number order into the object, which appears now, replacing
        any object at the target; with ``exclusive``, only if there is none (else
        :class:`~xarray_hurray.errors.TargetExistsError`, and the upload stays open
        for an abort).  Part
        numbers may have gaps."""

    @abstractmethod
    def abort(self) -> None:
        """Discard the upload and every part uploaded to it; the target is untouched.
        Aborting an upload that is already gone is not an error."""


class S3MultipartUpload(MultipartUpload):
    """A multipart upload to an ``s3://`` URL through s3fs.

    Parameters
    ----------
    url
        The object's URL.
    storage_options
        Options for s3fs (credentials, endpoint).
    upload_id
        The upload's id, from :meth:`start`.
    """

    def __init__(self, url: str, storage_options: Mapping[str, Any], upload_id: str) -> None:
        self.url = url
        self.storage_options = dict(storage_options)
        self.upload_id = upload_id

    @classmethod
    def start(cls, url: str, storage_options: Mapping[str, Any]) -> S3MultipartUpload:
        """Create a multipart upload at ``url``."""
        fs, bucket, key = _s3(url, storage_options)
        answer = fs.call_s3("create_multipart_upload", Bucket=bucket, Key=key)
        return cls(url, storage_options, answer["UploadId"])

    @property
    def name(self) -> str:
        return self.url

    def _part_target(self, number: int) -> tuple[Any, str, str]:
        """The file system, bucket and key a part ``number`` goes to, the number checked
        before any request so that a bad one is refused with its value named."""
        if not 1 <= number <= self.rules.max_parts:
            raise HurrayValueError(f"part number {number} outside 1..{self.rules.max_parts}")
        return _s3(self.url, self.storage_options)

    def upload_part(self, number: int, data: bytes | memoryview) -> Part:
        fs, bucket, key = self._part_target(number)
        answer = fs.call_s3(
            "upload_part",
            Bucket=bucket,
            Key=key,
            UploadId=self.upload_id,
            PartNumber=number,
            Body=bytes(data),
        )
        return Part(number, answer["ETag"])

    def copy_part(self, number: int, source: str, start: int, stop: int, etag: str) -> Part:
        fs, bucket, key = self._part_target(number)
        _, source_bucket, source_key = _s3(source, self.storage_options)
        answer = fs.call_s3(
            "upload_part_copy",
            Bucket=bucket,
            Key=key,
            UploadId=self.upload_id,
            PartNumber=number,
            CopySource={"Bucket": source_bucket, "Key": source_key},
            CopySourceRange=f"bytes={start}-{stop - 1}",
            CopySourceIfMatch=etag,
        )
        return Part(number, answer["CopyPartResult"]["ETag"])

    def complete(self, parts: Sequence[Part], exclusive: bool = False) -> None:
        # the store joins the parts before it answers, which takes a while for a big
        # object (moto's server copies every byte; S3 documents minutes at most):
        # longer than s3fs's 15 s read timeout, whose retry would find the upload gone
        options = dict(self.storage_options)
        config = dict(options.get("config_kwargs", {}))
        config["read_timeout"] = max(config.get("read_timeout", 0), COMPLETE_TIMEOUT)
        fs, bucket, key = _s3(self.url, {**options, "config_kwargs": config})
        listed = [{"PartNumber": p.number, "ETag": p.etag} for p in sorted(parts, key=_number)]
        # S3's conditional write: completes only where no object exists
        condition = {"IfNoneMatch": "*"} if exclusive else {}
        try:
            fs.call_s3(
                "complete_multipart_upload",
                Bucket=bucket,
                Key=key,
                UploadId=self.upload_id,
                MultipartUpload={"Parts": listed},
                **condition,
            )
        except OSError as err:
            if exclusive and "PreconditionFailed" in repr(err) + repr(err.__cause__):
                raise TargetExistsError(
                    f"{self.url}: an object appeared at the target during the write; it was "
                    "left as it is",
                    value=self.url,
                ) from err
            # an answer lost after the store completed (a timeout, a dropped
            # connection, a retry that finds the upload gone): the object is there
            if not self._landed(fs, bucket, key, parts):
                raise
        finally:
            fs.invalidate_cache(self.url)

    def _landed(self, fs: Any, bucket: str, key: str, parts: Sequence[Part]) -> bool:
        """Whether this upload, completed with ``parts``, is the object at the target:
        the upload is no longer in progress and the object's ETag is the one S3 gives
        a multipart object (the MD5 of the parts' MD5s, then the part count)."""
        if self.upload_id in pending_uploads(self.url, self.storage_options):
            return False
        try:
            etag = str(fs.call_s3("head_object", Bucket=bucket, Key=key)["ETag"]).strip('"')
        except FileNotFoundError:
            return False
        return etag == multipart_etag(parts)

    def abort(self) -> None:
        fs, bucket, key = _s3(self.url, self.storage_options)
        try:
            fs.call_s3("abort_multipart_upload", Bucket=bucket, Key=key, UploadId=self.upload_id)
        except FileNotFoundError:  # s3fs's translation of NoSuchUpload: already gone
            pass

    def __repr__(self) -> str:
        return f"S3MultipartUpload({self.url!r}, upload_id={self.upload_id[:12]!r}...)"


def multipart_etag(parts: Sequence[Part]) -> str:
    """The ETag S3 gives the object completed from ``parts``, whose ETags are the MD5
    of their bytes (objects without KMS encryption)."""
    digests = b"".join(bytes.fromhex(p.etag.strip('"')) for p in sorted(parts, key=_number))
    return f"{hashlib.md5(digests, usedforsecurity=False).hexdigest()}-{len(parts)}"


def _number(part: Part) -> int:
    return part.number


def _s3(url: str, storage_options: Mapping[str, Any]) -> tuple[Any, str, str]:
    """The s3fs file system (cached per process by fsspec), bucket and key of ``url``."""
    import fsspec

    fs, path = fsspec.core.url_to_fs(url, **storage_options)
    bucket, key, _ = fs.split_path(path)
    return fs, bucket, key


def _is_s3(url: str) -> bool:
    return url.split("://", 1)[0] in ("s3", "s3a")


def start_multipart(url: str, storage_options: Mapping[str, Any]) -> MultipartUpload | None:
    """Begin a multipart upload at ``url``, or None where the store has none this
    package can drive from several processes (every scheme but ``s3://``)."""
    if not _is_s3(url):
        return None
    return S3MultipartUpload.start(url, storage_options)


def object_etag(url: str, storage_options: Mapping[str, Any]) -> str:
    """The ETag of the ``s3://`` object at ``url`` now: the version a later
    :meth:`MultipartUpload.copy_part` insists on."""
    fs, bucket, key = _s3(url, storage_options)
    return str(fs.call_s3("head_object", Bucket=bucket, Key=key)["ETag"])


def multipart_target(target: object) -> tuple[str, dict[str, Any]] | None:
    """The URL and storage options of an upload target that :func:`start_multipart`
    serves (an ``s3://`` :class:`~xarray_hurray.io.source.FsspecSource`), else None."""
    from .source import FsspecSource

    if isinstance(target, FsspecSource) and _is_s3(target.url):
        return target.url, target.storage_options
    return None


def pending_uploads(url: str, storage_options: Mapping[str, Any]) -> list[str]:
    """The ids of the multipart uploads in progress at ``url`` (an ``s3://`` object).

    An upload whose client was killed before it could complete or abort stays in
    progress, its parts stored and billed, until it is aborted (``S3MultipartUpload``
    with the id) or a lifecycle rule of the bucket removes it.
    """
    if not _is_s3(url):
        raise HurrayValueError(f"listing multipart uploads needs an s3:// URL, not {url!r}")
    fs, bucket, key = _s3(url, storage_options)
    answer = fs.call_s3("list_multipart_uploads", Bucket=bucket, Prefix=key)
    return [u["UploadId"] for u in answer.get("Uploads", []) if u["Key"] == key]


COMPLETE_TIMEOUT = 900
"""Seconds to wait for the store's answer to a completion."""

DEFAULT_PART_BYTES = 64 * 2**20
"""Bytes of input per part when the caller sets no budget: a worker holds about this
much per part it builds."""


def cut_runs(
    sizes: np.ndarray,
    part_bytes: int = DEFAULT_PART_BYTES,
    rules: PartRules = S3_RULES,
    reserved: int = 1,
) -> np.ndarray:
    """Cut pieces of ``sizes`` bytes, in order, into runs of consecutive pieces.

    Each run becomes one part.  Runs are cut where the running total crosses a
    multiple of the part size, so there are at most ``ceil(total / part size)`` of
    them and each holds at most a part size plus one piece.  The part size is
    ``part_bytes``, raised to the store's minimum part, and raised further when the
    parts would not fit in the store's part count with ``reserved`` parts kept for
    the caller.  Runs may come out smaller than the minimum part when their pieces
    shrink (compression): the caller pads them or merges them.

    Parameters
    ----------
    sizes
        Bytes of each piece (an upper bound, such as a chunk's size before compression).
    part_bytes
        Wished bytes per run: what one worker holds while it builds a part.
    rules
        The store's rules.
    reserved
        Part numbers kept for other parts (the head of a file).

    Returns
    -------
    numpy.ndarray
        Start index of each run, then ``len(sizes)``: run ``k`` is pieces
        ``[starts[k], starts[k + 1])``.  No run is empty.

    Raises
    ------
    ValueError
        When the pieces cannot fit: more bytes than ``max_parts - reserved`` parts of
        the largest size hold, or a piece larger than the largest part.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    available = rules.max_parts - reserved
    if available < 1:
        raise HurrayValueError(f"{reserved} reserved parts leave none of {rules.max_parts}")
    total = int(sizes.sum())
    largest = int(sizes.max(initial=0))
    part = max(part_bytes, rules.min_part, math.ceil(total / available))
    # a run holds less than a part size plus its last piece
    if part + largest - 1 > rules.max_part:
        raise HurrayValueError(
            f"{total} bytes in pieces of up to {largest} bytes do not fit in "
            f"{available} parts of at most {rules.max_part} bytes; split the output "
            "into several objects"
        )
    if len(sizes) == 0:
        return np.zeros(1, dtype=np.int64)
    ends = np.cumsum(sizes)
    # a run ends with the piece that reaches the next multiple of the part size
    starts = np.searchsorted(ends, np.arange(1, math.ceil(total / part) + 1) * part, side="left")
    # the run reaching the total takes the empty pieces after it: they would make
    # one more run, of no bytes, past the part count
    last = np.minimum(starts, len(sizes) - 1)
    after = np.where(ends[last] >= total, len(sizes), starts + 1)
    return np.unique(np.concatenate([[0], after, [len(sizes)]]))
