"""The JavaScript tiles benchmark runs end to end on small sizes (Node.js, a real
latency-injecting server, GDAL for the COG) and meets its targets there: open plus a
tile in 2 requests at every level, and fewer requests than both peers for the pan."""

from __future__ import annotations

import re

import pytest
from scripts import run_js_benchmark

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_js_tiles_benchmark_quick() -> None:
    stdout = run_js_benchmark("benchmarks/js_tiles.py", "--quick", "--latency", "0.01")
    rows = re.findall(
        r"^(\w+) +(open \+ tile, level \d|pan of 16 tiles).* (\d+) +(\d+)$", stdout, re.M
    )
    steps = {(reader, step): (int(requests), int(waves)) for reader, step, requests, waves in rows}
    opens = [
        value for (reader, step), value in steps.items() if reader == "hurray" and "open" in step
    ]
    assert len(opens) == 3 and all(value == (2, 2) for value in opens)
    pans = {
        reader: steps[(reader, "pan of 16 tiles")][0] for reader in ("hurray", "zarrita", "geotiff")
    }
    assert pans["hurray"] < min(pans["zarrita"], pans["geotiff"])
