"""The benchmark of checksums bound to their place runs end to end on a small field."""

from __future__ import annotations

import pytest
from scripts import run_script, table_rows

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_a_quick_run_prints_each_path_and_the_share_of_its_places() -> None:
    out = run_script("benchmarks/bound_checksums.py", "--quick", "--repeats", "1")
    rows = table_rows(out)
    assert [row[0].split(" (")[0] for row in rows] == [
        "read whole",
        "read one whole chunk at a time",
        "write",
    ]
    for row in rows:
        path, places = float(row[1]), float(row[2])
        assert 0 < places < path
