"""The index-scale benchmark runs end to end on its smallest file."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_smallest_file_prints_a_row_per_case() -> None:
    out = run_script("benchmarks/index_scale.py", "--max-chunks", "1100", "--show-requests")
    assert "| chunks | stored | file KiB |" in out
    rows = [line for line in out.splitlines() if line.startswith("| 1,024")]
    assert len(rows) == 2 and "(all fill)" in rows[1]
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert int(cells[4]) <= 3  # open plus the region read
        assert float(cells[5]) < 256  # KiB
    # the byte ranges of each file: the first is the head
    assert out.count("- 1,024 chunks: [0, ") == 1
    assert out.count("- 1,024 (all fill) chunks: [0, ") == 1
