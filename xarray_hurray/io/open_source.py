"""Which byte source reads a target: the one place that chooses among the sources."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, BinaryIO

from ..errors import HurrayValueError
from .http_source import HttpSource, plain_http
from .source import ByteSource, FileObjectSource, FsspecSource, LocalFileSource, is_url


def open_source(
    target: str | os.PathLike[str] | BinaryIO | ByteSource,
    storage_options: Mapping[str, Any] | None = None,
) -> ByteSource:
    """The byte source for a path, a URL (``"scheme://..."``) or a file-like object.

    A plain ``http(s)://`` URL is read with the standard library
    (:class:`~xarray_hurray.io.http_source.HttpSource`); ``storage_options`` go to
    fsspec and imply a URL or path read through fsspec.
    """
    if isinstance(target, ByteSource):
        return target
    if isinstance(target, str | os.PathLike):
        path = os.fspath(target)
        if storage_options is None and is_url(path) and plain_http(path):
            return HttpSource(path)
        if storage_options is not None or is_url(path):
            return FsspecSource(path, storage_options)
        return LocalFileSource(path)
    if storage_options is not None:
        raise HurrayValueError("storage_options apply only to paths and URLs, not to file objects")
    return FileObjectSource(target)
