"""The write-memory benchmark runs end to end in its quick mode."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_quick_run_prints_a_row_per_dask_chunk_size() -> None:
    stdout = run_script("benchmarks/write_memory.py", "--quick")
    rows = [
        line.split("|") for line in stdout.splitlines() if line.startswith("| ") and " x " in line
    ]
    # dask chunks of 32 x 32 up to 64 x 64 over a 128 x 128 field, doubling in size
    assert [row[1].strip() for row in rows] == ["32 x 32", "32 x 64", "64 x 64"]
    for row in rows:
        hurray, zarr = float(row[3]), float(row[4])
        assert hurray > 0 and zarr > 0
    assert "Baseline" in stdout
