"""The benchmark of large numpy attributes runs end to end on small ones."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_a_row_per_attribute_place_and_size() -> None:
    out = run_script("benchmarks/typed_attrs.py", "--sizes", 1000, 2000, "--repeats", 1)
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ")][1:]
    assert [(r[0].strip(), r[1].strip(), r[2].strip()) for r in rows] == [
        (kind, where, size)
        for kind in ("float64", "float64 of integers", "int32")
        for where in ("root", "variable")
        for size in ("1,000", "2,000")
    ]
    assert all(r[6].strip().endswith("x") for r in rows)
