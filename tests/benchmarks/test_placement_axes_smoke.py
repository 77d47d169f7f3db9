"""The placement benchmark runs end to end on a few ranks, both readers agreeing."""

from __future__ import annotations

import shutil

import pytest
from scripts import run_script, table_rows

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js"),
]


def test_a_run_prints_both_readers_placing_the_same_chunk_at_the_same_place() -> None:
    stdout = run_script("benchmarks/placement_axes.py", "--ranks", "4", "6")
    rows = table_rows(stdout)
    assert [(row[0], row[1]) for row in rows] == [
        (rank, curve) for rank in ("4", "6") for curve in ("hilbert", "morton")
    ]
    for row in rows:
        assert "JavaScript" not in row[2] and float(row[3]) >= 0 and float(row[4]) >= 0
