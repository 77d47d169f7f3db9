"""Every example runs (a smoke test, so none rots) and prints what it promises."""

import pytest
from scripts import run_script

# the example scripts, each a run of its own: slow
pytestmark = pytest.mark.slow


def run_example(name: str, *args: str) -> str:
    return run_script(f"examples/{name}", *args)


def test_plot_chunk_orders(tmp_path):
    pytest.importorskip("matplotlib")
    output = tmp_path / "orders.png"
    stdout = run_example("plot_chunk_orders.py", "--output", str(output), "--grid", "8", "12")
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    counts = {
        line.split(":")[0].strip(): int(line.split(":")[1].split()[0])
        for line in stdout.splitlines()
        if "byte ranges" in line
    }
    assert set(counts) == {"hilbert", "morton", "row-major"}
    assert counts["hilbert"] <= counts["row-major"]


def test_out_of_core_dask(tmp_path):
    out = tmp_path / "field.hurray"
    args = ("--steps", "2", "--side", "512", "--chunk", "128", "--out", str(out))
    stdout = run_example("out_of_core_dask.py", *args)
    assert "region and mean match the source" in stdout
    assert out.read_bytes()[:8] == b"\x89HURRAY\n"


def test_s3_region_read():
    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    stdout = run_example("s3_region_read.py")
    assert "read a 256 x 256 region through xarray" in stdout
    assert "the region (16 chunks) took" in stdout


def test_zarr_codec():
    stdout = run_example("zarr_codec.py")
    requests = {
        line.split()[0]: line.split()[-2] for line in stdout.splitlines() if "request(s)" in line
    }
    assert requests == {"bytes": "256", "hurray": "4"}
    assert "identical" in stdout
