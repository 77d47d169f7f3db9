"""The bulk throughput benchmark runs end to end on a small field (subprocesses)."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow

SYSTEMS = ("hurray", "zarr unsharded", "zarr sharded", "h5netcdf")


def rows(stdout: str, first: str) -> list[list[str]]:
    """The cells of the Markdown rows whose first cell is ``first``."""
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in stdout.splitlines()
        if line.startswith(f"| {first} |")
    ]


def test_quick_run_measures_every_system_the_limit_the_cluster_and_http() -> None:
    stdout = run_script("benchmarks/throughput.py", "--quick", "--cases", "64,512", timeout=600)
    for chunks in ("64x64", "512x512"):
        table = rows(stdout, chunks)
        # a row per system, then Hurray's row against the limit and the peers
        assert [row[1] for row in table[:4]] == list(SYSTEMS)
        assert len(table) == 5
        assert all(float(row[6]) > 0 for row in table[:4])  # the cold read, MiB/s
        limit = table[4]
        assert float(limit[1]) > 0 and float(limit[2]) > 0  # decompress, compress MiB/s
        ratios = limit[3:11] + limit[12:13] + limit[14:15] + limit[16:17] + limit[18:20]
        ratios += limit[21:]
        assert len(ratios) == 15 and all(cell.endswith("x") for cell in ratios)
        # placed, written, durable, disk: MiB/s
        assert all(float(limit[k]) > 0 for k in (11, 13, 15, 20))
        assert all(float(rate) > 0 for rate in limit[17].split(" / "))  # the dask floor
    cluster, remote = stdout.split("over a LocalCluster")[1].split("over HTTP")
    # a chunks={} read of one stored chunk (the whole field): one task, one request
    for system in SYSTEMS[:3]:
        assert rows(cluster, system)[0][1:3] == ["1", "1"]
        assert float(rows(remote, system)[0][1]) > 0


def test_read_io_measures_every_way_warm_and_cold() -> None:
    stdout = run_script(
        "benchmarks/read_io.py", "--side", "512", "--chunk", "128", "--repeats", "1", timeout=300
    )
    ways = ("pread", "buffer", "mmap", "willneed")
    table = [row for way in ways for row in rows(stdout, way)]
    assert [row[0] for row in table] == list(ways)
    for row in table:
        assert float(row[1]) > 0 and float(row[3]) > 0  # warm and cold MiB/s
        assert row[2].endswith("x") and row[4].endswith("x")
    assert table[0][2] == table[0][4] == "1.00x"  # pread is the reference


def test_task_cost_measures_the_task_the_reader_and_the_bare_work() -> None:
    stdout = run_script(
        "benchmarks/task_cost.py", "--side", "512", "--chunk", "128", "--repeats", "1", timeout=300
    )
    assert "(16 tasks)" in stdout
    table = {row[0]: row[1:] for name in ("task", "reader", "bare") for row in rows(stdout, name)}
    assert list(table) == ["task", "reader", "bare"]
    assert all(float(cells[0]) > 0 for cells in table.values())
    assert table["bare"][1] == "0.0"
