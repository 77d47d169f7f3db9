"""The large-chunk benchmark runs end to end in its quick mode."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_quick_run_prints_the_writes_and_reads_of_every_file() -> None:
    stdout = run_script("benchmarks/large_chunk.py", "--quick")
    rows = [
        line.split("|")
        for line in stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| file |")
    ]
    steps = [(row[1].strip(), row[2].strip().split(",")[0]) for row in rows]
    assert steps == [
        ("random", "write"),
        ("smooth", "write"),
        *[(name, row) for name in ("random", "smooth") for row in ("read row 0", "read row 2047")],
        *[
            (name, row)
            for name in ("bomb, single-segment", "bomb, 2 MiB window")
            for row in ("read row 0", "read row 4095")
        ],
    ]
    for row in rows:
        assert float(row[3]) >= 0 and float(row[6]) > 0
