"""The region-read benchmark runs end to end on a small array (a real subprocess)."""

from __future__ import annotations

import json

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_region_reads_benchmark_quick(tmp_path):
    saved, image, other = tmp_path / "rows.json", tmp_path / "plot.png", tmp_path / "other.json"
    # rows of another zarr version, as a run on another Python would save them
    row = {"shape": "2x2", "boxes": 1, "requests": 4, "bytes_read": 40, "bytes_needed": 40}
    other.write_text(json.dumps([{"layout": "zarr 9.9 sharded", "seconds": 0.1, **row}]))
    stdout = run_script(
        "benchmarks/region_reads.py", "--quick", "--latency", "0.001", "--json", saved,
        "--include", other, "--plot", image, "--gap", "4096", timeout=120,
    )  # fmt: skip
    assert "| 2x2 | hurray hilbert |" in stdout
    assert "| 2x2 | zarr 9.9 sharded | 4.0 |" in stdout
    layouts = {r["layout"] for r in json.loads(saved.read_text())}
    assert {"hurray hilbert", "hurray morton", "hurray row-major"} <= layouts
    assert sum(name.endswith("unsharded") for name in layouts) == 1
    ours = {name for name in layouts if name.startswith("zarr ") and "9.9" not in name}
    for name in ("sharded", "sharded hilbert", "to_zarr/v", "sharded hilbert, gap 4 kB"):
        assert sum(layout.endswith(f" {name}") for layout in ours) == 1, name
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_async_load_benchmark_quick():
    stdout = run_script(
        "benchmarks/async_load.py", "--quick", "--variables", "3", "--latency", "0.01",
        "--repeats", "1", timeout=120,
    )  # fmt: skip
    assert "| every variable whole |" in stdout
    assert "| a region of every variable |" in stdout
