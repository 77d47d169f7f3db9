"""The benchmark of map tiles runs end to end (real subprocesses, the latency server)."""

from __future__ import annotations

import pytest
from scripts import run_script

pytest.importorskip("titiler.xarray")
pytest.importorskip("isochron")  # rio-tiler's zarr extra

# a run of a benchmark script: slow
pytestmark = pytest.mark.slow


def test_map_tiles_quick():
    stdout = run_script("benchmarks/map_tiles.py", "--quick", "--latency", "0.02", timeout=300)
    rows = {}
    for line in stdout.splitlines():
        if line.startswith("| z"):
            tile, reader, *cells = (c.strip() for c in line.strip("| ").split(" | "))
            rows[tile.split()[0], reader] = [float(c) for c in cells]
    assert len(rows) == 3 * 3
    for tile in ("z1", "z3"):
        plain = rows[tile, "titiler.xarray, engine='hurray'"]
        aware = rows[tile, "level-aware HurrayReader"]
        assert aware[0] < plain[0] and aware[1] < plain[1]  # requests, bytes
    # the file kept open: the same z0 tile again costs its chunks alone
    assert rows["z0", "level-aware HurrayReader"][3] < rows["z0", "level-aware HurrayReader"][0]
    assert "load average" in stdout
