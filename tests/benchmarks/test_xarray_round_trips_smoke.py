"""The benchmark of opens and tiles through xarray runs end to end (a real subprocess)."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_xarray_round_trips_quick():
    stdout = run_script(
        "benchmarks/xarray_round_trips.py", "--quick", "--latency", "0.02", "--groups", "4",
        timeout=240,
    )  # fmt: skip
    rows = {
        line.split(" | ")[0].strip("| "): line.strip("| ").split(" | ")[1:]
        for line in stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| step")
    }
    assert len(rows) == 4 + 6 + 1  # the opens, a tile per level, the pan
    # Hurray's open through xarray: one request, one wave
    assert rows["open (time, y, x)"][:2] == ["1", "1"]
    assert rows["open_datatree pyramid (6 levels)"][:2] == ["1", "1"]
    for level in range(6):
        assert rows[f"fresh open + tile, level {level}"][1] == "2"
    assert "load average" in stdout
