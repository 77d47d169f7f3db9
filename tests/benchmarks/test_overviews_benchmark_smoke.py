"""The overviews benchmark runs end to end on small sizes (real subprocesses, a real
latency-injecting server)."""

from __future__ import annotations

import re

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_overviews_benchmark_quick():
    stdout = run_script(
        "benchmarks/overviews.py", "--quick", "--build", "--latency", "0.005", timeout=600
    )
    tiles = re.findall(r"^\| (\d) \| (\d+) \| on the tile grid \| (\d+) \|", stdout, re.M)
    assert [(level, factor) for level, factor, _ in tiles] == [
        ("0", "1"), ("1", "2"), ("2", "4"), ("3", "8"),
    ]  # fmt: skip
    assert all(int(trips) <= 2 for _, _, trips in tiles)
    assert "levels 1-3 add" in stdout and "sum of 4**-k: 0.3281" in stdout
    for method in ("hurray", "zarr per level"):
        assert f"| {method} |" in stdout
