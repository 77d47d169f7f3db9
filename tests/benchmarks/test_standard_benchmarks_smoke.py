"""The benchmarks of the standard defaults run end to end in their quick modes."""

from __future__ import annotations

import re

import pytest
from scripts import run_script

pytestmark = pytest.mark.slow


def test_layout_sizes_quick() -> None:
    out = run_script("benchmarks/layout_sizes.py", "--quick")
    rows = [line for line in out.splitlines() if line.startswith("| ") and "KiB" not in line]
    assert len(rows) == 4
    for row in rows:
        # the ratios to row-major of curves behind zstd stay near 1
        ratios = [float(cell) for cell in row.strip("| ").split(" | ")[-2:]]
        assert all(0.9 < r < 1.1 for r in ratios), row


def test_fresh_process_one_small_round() -> None:
    out = run_script("benchmarks/fresh_process.py", "--sizes", "1", "--rounds", "1")
    rows = {line.split(" | ")[1]: line for line in out.splitlines() if line.startswith("| 1 MiB")}
    assert len(rows) == 4
    # numba is loaded by the old default (a curve) alone
    assert [name for name, row in rows.items() if row.endswith("| yes |")] == [
        "to_hurray, layout='auto' (the old default)"
    ]
    assert re.search(r"load average before: \d", out) and re.search(r"load average after", out)
