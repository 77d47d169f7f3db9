"""Byte-range planning and byte sources: the I/O layer, knowing nothing of the format.

- :class:`MergePolicy` and :func:`plan_reads`: which requests serve a set of byte ranges.
- :func:`open_source`: a picklable, thread-safe reader of byte ranges from a local
  path, a file-like object or an fsspec URL; ``ObstoreSource`` (module
  ``obstore_source``, optional extra) reads an object of an obstore store.
- :class:`CostModel`: latency, bandwidth and concurrency, and the merge policy they
  imply (``OBJECT_STORE`` for remote sources).
- :func:`upload_target`, :func:`staged_upload`: writes to URLs and stores as a local
  file uploaded whole.
"""

from .costs import OBJECT_STORE, CostModel
from .plan import MergePolicy, ReadPlan, as_merge_policy, plan_reads
from .source import (
    ByteSource,
    FileObjectSource,
    FsspecSource,
    LocalFileSource,
    SourceChangedError,
    open_source,
)
from .upload import UploadTarget, staged_upload, upload_target

__all__ = [
    "OBJECT_STORE",
    "ByteSource",
    "CostModel",
    "FileObjectSource",
    "FsspecSource",
    "LocalFileSource",
    "MergePolicy",
    "ReadPlan",
    "SourceChangedError",
    "UploadTarget",
    "as_merge_policy",
    "open_source",
    "plan_reads",
    "staged_upload",
    "upload_target",
]
