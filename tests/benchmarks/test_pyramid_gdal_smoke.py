"""The pyramid-against-GDAL benchmark runs end to end on small sizes (real
subprocesses, a real latency-injecting server; the GDAL rows where rasterio is
installed)."""

from __future__ import annotations

import re

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_pyramid_gdal_benchmark_quick():
    stdout = run_script(
        "benchmarks/pyramid_gdal.py", "--quick", "--build", "--tiles", "--latency", "0.005",
        timeout=600,
    )  # fmt: skip
    built = re.findall(r"^\| (\d) \| hurray \| [\d.]+ / [\d.]+ \| (\d+) \| (\d+) \|", stdout, re.M)
    assert [levels for levels, _, _ in built] == ["2", "4", "6"]
    assert all(int(peak) >= int(held) for _, held, peak in built)
    for row in ("numpy", "reader", "xarray"):
        assert re.search(rf"^\| {row} \| [\d.]+ \| [\d.]+ \|", stdout, re.M)
    assert re.search(r"^\| xarray, level\(\) \| [\d.]+ \| [\d.]+ \|", stdout, re.M)
