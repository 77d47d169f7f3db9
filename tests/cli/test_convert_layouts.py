"""``hurray convert``'s default element layout: row-major wherever a chunk is decoded
whole, ``auto`` for uncompressed Zarr chunks, which the ``hurray`` codec reads in part."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
import xarray as xr
import zarr

import xarray_hurray as xh
from xarray_hurray.cli.main import main
from xarray_hurray.container import ContainerReader
from xarray_hurray.io import LocalFileSource


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    ds = xr.Dataset(
        {
            "v": (("y", "x"), np.arange(64 * 48, dtype="f4").reshape(64, 48)),
            "t": ("y", np.arange(64.0)),
        }
    )
    path = tmp_path_factory.mktemp("convert") / "in.hurray"
    xh.to_hurray(ds, path, layout="auto")  # the old default: curves, read back alike
    return path, ds


def inner_codecs(store, name: str) -> list[str]:
    return [c["name"] for c in json.loads((store / name / "zarr.json").read_text())["codecs"]]


def test_a_hurray_file_is_converted_to_row_major_chunks(source, tmp_path, capsys) -> None:
    path, ds = source
    out = tmp_path / "out.hurray"
    assert main(["convert", str(path), str(out), "--chunks", "y=16,x=16"]) == 0
    reader = ContainerReader(LocalFileSource(out))
    assert {v.name: v.layout.name for v in reader.metadata.variables} == {
        "v": "row-major",
        "t": "row-major",
    }
    xr.testing.assert_identical(xr.open_dataset(out, engine="hurray"), ds)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {"v": ["bytes", "zstd"], "t": ["bytes", "zstd"]}),
        (["--codecs", "none"], {"v": ["hurray"], "t": ["hurray"]}),
        (["--layout", "morton"], {"v": ["hurray", "zstd"], "t": ["hurray", "zstd"]}),
    ],
)
def test_zarr_output_is_standard_unless_chunks_are_read_in_part(
    source, tmp_path, capsys, args, expected
) -> None:
    path, ds = source
    store = tmp_path / "out.zarr"
    assert main(["convert", str(path), str(store), "--chunks", "y=16,x=16", *args]) == 0
    assert {name: inner_codecs(store, name) for name in ("v", "t")} == expected
    xr.testing.assert_identical(xr.open_dataset(store, engine="zarr"), ds)


def stored_chunks(path) -> tuple[int, ...]:
    """The chunks of variable ``v`` as the output's own format stores them."""
    name = str(path)
    if name.endswith(".hurray"):
        return xh.open_reader(path).variable("v").chunks
    if name.endswith(".zarr"):
        return tuple(zarr.open_array(path / "v", mode="r").chunks)
    with xr.open_dataset(path) as ds:
        return tuple(ds["v"].encoding["chunksizes"])


@pytest.mark.parametrize("suffix", [".hurray", ".zarr", ".nc"])
@pytest.mark.parametrize(
    ("argv", "expected"), [([], (1, 64, 64)), (["--chunks", "time=4"], (4, 64, 64))]
)
def test_convert_keeps_the_inputs_chunks(tmp_path, suffix, argv, expected) -> None:
    """Without --chunks for them, the dimensions keep the chunk sides the input has."""
    if suffix == ".nc" and importlib.util.find_spec("h5netcdf") is None:
        pytest.skip("reads netCDF-4 with h5netcdf")
    ds = xr.Dataset({"v": (("time", "y", "x"), np.arange(8 * 180 * 128.0).reshape(8, 180, 128))})
    source, out = tmp_path / "in.hurray", tmp_path / f"out{suffix}"
    xh.to_hurray(ds, source, encoding={"v": {"chunks": (1, 64, 64)}})
    assert main(["convert", str(source), str(out), *argv]) == 0
    assert stored_chunks(out) == expected
    with xr.open_dataset(out, engine="hurray" if suffix == ".hurray" else None) as back:
        xr.testing.assert_identical(back, ds)


def test_input_chunks_a_layout_cannot_hold_give_way_to_chunks_it_can(tmp_path) -> None:
    ds = xr.Dataset({"v": (("y", "x"), np.arange(256 * 256, dtype="f4").reshape(256, 256))})
    source, out = tmp_path / "in.hurray", tmp_path / "out.hurray"
    xh.to_hurray(ds, source, encoding={"v": {"chunks": (12, 10)}})
    assert main(["convert", str(source), str(out), "--layout", "hilbert"]) == 0
    var = xh.open_reader(out).variable("v")
    # the whole variable is less than 1 MiB: one chunk, which a Hilbert curve fills
    assert var.chunks == (256, 256) and var.layout.name == "hilbert"
    with xr.open_dataset(out, engine="hurray") as back:
        xr.testing.assert_identical(back, ds)
