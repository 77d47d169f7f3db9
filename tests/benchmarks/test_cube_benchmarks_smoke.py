"""The benchmarks of issue 45 run end to end on small sizes (real subprocesses, a real
latency-injecting server, GDAL for the COG) and meet their targets there: the reads of
the default-written cube in their waves, pans in fewer requests than GDAL's along a
column, an open with dask of this engine."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def _rows(stdout: str) -> list[list[str]]:
    """The cells of each row of the Markdown tables in ``stdout``."""
    return [
        [cell.strip() for cell in line.strip("| ").split(" | ")]
        for line in stdout.splitlines()
        if line.startswith("| ") and not line.startswith("|---")
    ]


def test_cube_reads_quick() -> None:
    stdout = run_script("benchmarks/cube_reads.py", "--quick", timeout=900)
    rows = {(row[0], row[1]): row[2:] for row in _rows(stdout)}
    # the default: a fresh open and a map step, a tile or a pixel drill in 2 waves
    for pattern in ("map step", "tile", "pixel drill"):
        assert rows[pattern, "hurray default"][0] == "2", rows[pattern, "hurray default"]
    # a map step reads its own bytes
    assert float(rows["map step", "hurray default"][4]) <= 1.25
    assert "decode-and-place floor" in stdout and "load average" in stdout


def test_pans_quick() -> None:
    pytest.importorskip("rasterio")  # the bench extra
    stdout = run_script("benchmarks/pans.py", "--quick", timeout=900)
    rows = {(row[0], row[1].split()[0], row[3]): row[4:] for row in _rows(stdout)[1:]}
    # along a column, where GDAL's tiles are not back to back: fewer requests at level 0
    hurray = int(rows["column", "0", "hurray reader"][1])
    assert hurray < int(rows["column", "0", "GDAL"][1])
    assert int(rows["row", "0", "hurray reader"][2]) <= 3  # waves of the pan


def test_open_with_dask_quick() -> None:
    stdout = run_script("benchmarks/open_with_dask.py", "--quick", timeout=600)
    engines = [row[0] for row in _rows(stdout)[1:]]
    assert engines == ["hurray", "hurray, engine class", "zarr"] * 2
