"""The out-of-core benchmark runs end to end in its quick mode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "out_of_core.py"


def test_quick_run_prints_the_table_for_both_writers_and_thread_counts() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| 1 |")]
    rows += [line for line in result.stdout.splitlines() if line.startswith("| 2 |")]
    assert [row.split("|")[2].strip() for row in rows] == ["hurray", "zarr"] * 2
    assert "dataset / cap = 4" in result.stdout
