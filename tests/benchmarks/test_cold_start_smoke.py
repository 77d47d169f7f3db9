"""The cold-start benchmark runs end to end (real subprocesses, a real HTTP server)."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_cold_start_benchmark_quick():
    stdout = run_script(
        "benchmarks/cold_start.py", "--quick", "--rounds", "1", "--latency", "0.001", timeout=180
    )
    assert "1 rounds, 1 ms per request" in stdout
    # every reading child checked its tile against the values written (a wrong one
    # fails the script) and said when its main code ended
    for row in (
        "numpy",
        "reader",
        "xarray, engine hurray",
        "xarray, engine class",
        "xarray, zarr consolidated",
    ):
        line = next(line for line in stdout.splitlines() if line.startswith(f"| {row} |"))
        assert float(line.split("|")[-2]) >= 0, line
    for row in ("hurray --help", "hurray info FILE"):
        assert f"| {row} | " in stdout
    assert stdout.count("| yes") + stdout.count("| no") == 4  # the four targets
