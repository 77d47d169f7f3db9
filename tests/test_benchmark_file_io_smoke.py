"""The Hurray-vs-Zarr file benchmark runs end to end in its quick mode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "file_io.py"


def test_quick_run_prints_both_tables() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "| operation | hurray MB/s | zarr MB/s | hurray / zarr |" in result.stdout
    assert "| box side | reader | requests / read | MB / read |" in result.stdout
