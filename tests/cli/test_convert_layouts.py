"""``hurray convert``'s default element layout: row-major wherever a chunk is decoded
whole, ``auto`` for uncompressed Zarr chunks, which the ``hurray`` codec reads in part."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

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
