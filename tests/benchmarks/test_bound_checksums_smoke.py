"""The benchmark of checksums bound to their place runs end to end on a small field."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_a_quick_run_prints_each_path_and_the_share_of_its_places() -> None:
    out = run_script("benchmarks/bound_checksums.py", "--quick", "--repeats", "1")
    rows = [
        line.split("|")
        for line in out.splitlines()
        if line.startswith("| read") or line.startswith("| write")
    ]
    assert [row[1].split(" (")[0].strip() for row in rows] == [
        "read whole",
        "read one whole chunk at a time",
        "write",
    ]
    for row in rows:
        path, places = float(row[2]), float(row[3])
        assert 0 < places < path
