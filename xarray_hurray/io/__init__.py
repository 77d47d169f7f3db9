"""Byte-range planning and byte sources: the I/O layer, knowing nothing of the format.

- :class:`MergePolicy` and :func:`plan_reads`: which requests serve a set of byte ranges
  (:func:`group_runs`, the interval merge under them).
- :func:`open_source`: a picklable, thread-safe reader of byte ranges from a local
  path, a file-like object, a plain ``http(s)`` URL (:class:`HttpSource`, the
  standard library's client) or an fsspec URL; ``ObstoreSource`` (module
  ``obstore_source``, optional extra) reads an object of an obstore store.
- :class:`HurrayChangedError` (a :class:`SourceChangedError`): a remote object or
  local file replaced under a reader (remote sources pin the version their first
  read saw); :class:`SourceReadError`:
  a remote read that failed on every attempt of its :class:`RetryPolicy`;
  :class:`RangeIgnoredWarning`: an HTTP server that sends whole files for ranges.
- :class:`CostModel`: latency, bandwidth and concurrency, and the merge policy they
  imply (``OBJECT_STORE`` for object stores, ``PLAIN_HTTP`` for plain http(s)).
- :func:`upload_target`: where a write to a URL or a store uploads the finished file.
- :func:`start_multipart`, :class:`MultipartUpload`, :func:`cut_runs`,
  :func:`pending_uploads` (module ``multipart``): one object uploaded as parts from
  any number of processes, within the store's part rules.
"""

from typing import TYPE_CHECKING

from ..errors import HurrayChangedError, RangeIgnoredWarning, SourceChangedError, SourceReadError
from ..lazy import lazy_attributes
from .costs import OBJECT_STORE, PLAIN_HTTP, CostModel
from .http_source import HttpSource
from .open_source import open_source
from .plan import MergePolicy, ReadPlan, as_merge_policy, group_runs, plan_reads
from .remote import DEFAULT_RETRY, ObjectVersion, RetryPolicy
from .source import (
    ByteSource,
    FileObjectSource,
    FsspecSource,
    LocalFileSource,
    is_url,
)
from .upload import UploadTarget, upload_target

if TYPE_CHECKING:
    from .multipart import (
        S3_RULES,
        MultipartUpload,
        Part,
        PartRules,
        cut_runs,
        pending_uploads,
        start_multipart,
    )

__all__ = [
    "DEFAULT_RETRY",
    "OBJECT_STORE",
    "PLAIN_HTTP",
    "S3_RULES",
    "ByteSource",
    "CostModel",
    "FileObjectSource",
    "FsspecSource",
    "HttpSource",
    "HurrayChangedError",
    "LocalFileSource",
    "MergePolicy",
    "MultipartUpload",
    "ObjectVersion",
    "Part",
    "PartRules",
    "RangeIgnoredWarning",
    "ReadPlan",
    "RetryPolicy",
    "SourceChangedError",
    "SourceReadError",
    "UploadTarget",
    "as_merge_policy",
    "cut_runs",
    "group_runs",
    "is_url",
    "open_source",
    "pending_uploads",
    "plan_reads",
    "start_multipart",
    "upload_target",
]

# The multipart uploads load on first use: a reader never needs them.
__getattr__, __dir__ = lazy_attributes(
    __name__,
    dict.fromkeys(
        [
            "S3_RULES",
            "MultipartUpload",
            "Part",
            "PartRules",
            "cut_runs",
            "pending_uploads",
            "start_multipart",
        ],
        "xarray_hurray.io.multipart",
    ),
)
