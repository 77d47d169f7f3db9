"""What the readers of kerchunk references on this machine can do."""

from __future__ import annotations

import importlib.util

import pytest

reads_local_references = pytest.mark.skipif(
    importlib.util.find_spec("fsspec.implementations.asyn_wrapper") is None,
    reason="fsspec before 2024.12 gives zarr 3 no asynchronous reference file system "
    "over local files (it has no AsyncFileSystemWrapper)",
)
"""Marks a test that reads references to local files through fsspec and zarr."""
