"""The many-groups benchmark runs end to end on a small tree."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_a_small_tree_prints_a_row_per_file() -> None:
    out = run_script("benchmarks/many_groups.py", "--counts", 20, "--steps", "verify_file")
    assert "| file | size | verify_file |" in out
    rows = [line for line in out.splitlines() if line.startswith("| 20 ")]
    assert [r.split("|")[1].strip() for r in rows] == [
        "20 empty groups",
        "20 groups of one variable",
    ]
    assert all("s CPU" in r for r in rows)
