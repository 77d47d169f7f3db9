"""What the readers of kerchunk references on this machine can do."""

from __future__ import annotations

import importlib.util

import pytest

# fsspec 2024.12 brought the asynchronous wrapper; its absence marks the older releases
_OLD_FSSPEC = importlib.util.find_spec("fsspec.implementations.asyn_wrapper") is None

reads_local_references = pytest.mark.skipif(
    _OLD_FSSPEC,
    reason="fsspec before 2024.12 gives zarr 3 no asynchronous reference file system "
    "over local files (it has no AsyncFileSystemWrapper)",
)
"""Marks a test that reads references to local files through fsspec and zarr."""

reads_s3_references = pytest.mark.skipif(
    _OLD_FSSPEC,
    reason="fsspec before 2024.12: its asynchronous reference file system over s3 "
    "answers zarr 3's read of a referenced chunk with None",
)
"""Marks a test that reads references to ``s3://`` objects through fsspec and zarr."""
