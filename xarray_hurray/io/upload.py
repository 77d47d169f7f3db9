"""Where a finished file can be uploaded in one piece: a URL, or an object with an
``upload`` method.

Object stores have no rename, so the atomic temporary-file-then-replace of a local
write becomes: write the finished file to a local temporary directory, then put it
at the target in one upload (a single put, or a multipart upload that the store
completes atomically; :class:`xarray_hurray.write.sinks.StagedUpload`).  A write that
fails before the upload completes leaves the target as it was.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from ..errors import HurrayValueError
from .source import FsspecSource, is_url


@runtime_checkable
class UploadTarget(Protocol):
    """Somewhere a finished local file can be uploaded in one piece."""

    def upload(self, local_path: str | os.PathLike[str]) -> None:
        """Put the file ``local_path`` at the target."""


def upload_target(
    target: str | os.PathLike[str] | UploadTarget,
    storage_options: Mapping[str, Any] | None = None,
) -> UploadTarget | None:
    """The remote target of a write, or None for a local path.

    URLs (``"scheme://..."``) are written through fsspec with
    ``storage_options``; objects with an ``upload`` method (such as
    :class:`~xarray_hurray.io.obstore_source.ObstoreSource`) are used as they are.
    """
    if isinstance(target, UploadTarget):
        if storage_options is not None:
            raise HurrayValueError("storage_options apply to URLs, not to an upload target object")
        return target
    path = os.fspath(target)
    if is_url(path):
        return FsspecSource(path, storage_options)
    if storage_options is not None:
        raise HurrayValueError(f"storage_options apply to URLs, not to the local path {path!r}")
    return None
