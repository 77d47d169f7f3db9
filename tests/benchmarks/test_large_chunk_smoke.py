"""The large-chunk benchmark runs end to end in its quick mode."""

from __future__ import annotations

import pytest
from scripts import run_script, table_rows

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_quick_run_prints_the_writes_and_reads_of_every_file() -> None:
    stdout = run_script("benchmarks/large_chunk.py", "--quick")
    rows = table_rows(stdout)
    steps = [(row[0], row[1].split(",")[0]) for row in rows]
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
        # a read of a few elements can take under a millisecond on a fast machine
        assert float(row[2]) >= 0 and float(row[5]) >= 0
