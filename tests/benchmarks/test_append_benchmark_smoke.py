"""The append benchmark runs end to end in its quick mode."""

from __future__ import annotations

import sys

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts bytes in /proc")
def test_quick_run_prints_the_table() -> None:
    out = run_script("benchmarks/append.py", "--quick", "--repeats", "1")
    assert "| Write | How | Time | Bytes written | vs Hurray |" in out
    rows = [
        line
        for line in out.splitlines()
        if line.startswith("| append") or line.startswith("| overwrite")
    ]
    assert len(rows) == 5
