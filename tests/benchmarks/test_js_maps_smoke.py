"""The JavaScript maps benchmark runs end to end on one view (Chromium with WebGL, a
real latency-injecting server, GDAL for the COG, the to_zarr pyramid for OpenLayers'
GeoZarr source) and meets its request target there: each of this package's adapters
draws the view in fewer requests than both peers."""

from __future__ import annotations

import re

import pytest
from scripts import run_js_benchmark

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_js_maps_benchmark_quick() -> None:
    stdout = run_js_benchmark("benchmarks/js_maps.py", "--quick", "--latency", "0.01")
    rows = re.findall(r"^(.{30}) (zoom [^|]*?) +(\d+) +[\d.]+ +(\d+) +(\d+)$", stdout, re.M)
    requests = {page.strip(): int(count) for page, _, _, count, _ in rows}
    assert len(requests) == 5, stdout
    peers = min(requests["COG, OpenLayers GeoTIFF"], requests["to_zarr, OpenLayers GeoZarr"])
    ours = [value for page, value in requests.items() if page.startswith("this package")]
    assert len(ours) == 3 and max(ours) < peers, stdout
