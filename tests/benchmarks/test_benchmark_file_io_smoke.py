"""The Hurray-vs-Zarr file benchmark runs end to end in its quick mode."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_quick_run_prints_both_tables() -> None:
    stdout = run_script("benchmarks/file_io.py", "--quick")
    assert "| operation | hurray MB/s | zarr MB/s | hurray / zarr |" in stdout
    assert "| box side | reader | requests / read | MB / read |" in stdout
