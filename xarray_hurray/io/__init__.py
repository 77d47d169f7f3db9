"""Byte-range planning and byte sources: the I/O layer, knowing nothing of the format.

- :class:`MergePolicy` and :func:`plan_reads`: which requests serve a set of byte ranges.
- :func:`open_source`: a picklable, thread-safe reader of byte ranges from a local
  path, a file-like object or an fsspec URL.
"""

from .counting import CountingSource
from .plan import MergePolicy, ReadPlan, plan_reads
from .source import ByteSource, FileObjectSource, FsspecSource, LocalFileSource, open_source

__all__ = [
    "ByteSource",
    "CountingSource",
    "FileObjectSource",
    "FsspecSource",
    "LocalFileSource",
    "MergePolicy",
    "ReadPlan",
    "open_source",
    "plan_reads",
]
