"""The out-of-core benchmark runs end to end in its quick mode."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_quick_run_prints_the_table_for_both_writers_and_thread_counts() -> None:
    stdout = run_script("benchmarks/out_of_core.py", "--quick")
    rows = [line for line in stdout.splitlines() if line.startswith("| 1 |")]
    rows += [line for line in stdout.splitlines() if line.startswith("| 2 |")]
    assert [row.split("|")[2].strip() for row in rows] == ["hurray", "zarr"] * 2
    assert "dataset / cap = 4" in stdout
