"""The benchmark of opens and tiles through xarray runs end to end (a real subprocess)."""

from __future__ import annotations

import pytest
from scripts import run_script, table_rows

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_xarray_round_trips_quick():
    stdout = run_script(
        "benchmarks/xarray_round_trips.py", "--quick", "--latency", "0.02", "--groups", "4",
        timeout=240,
    )  # fmt: skip
    rows = {step: cells for step, *cells in table_rows(stdout)}
    assert len(rows) == 4 + 6 + 1  # the opens, a tile per level, the pan
    # Hurray's open through xarray: one request, one wave
    assert rows["open (time, y, x)"][:2] == ["1", "1"]
    assert rows["open_datatree pyramid (6 levels)"][:2] == ["1", "1"]
    for level in range(6):
        assert rows[f"fresh open + tile, level {level}"][1] == "2"
    assert "load average" in stdout
