"""Chunks of the fill value alone are left out, and read back as the fill value."""

from __future__ import annotations

import json

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.cli import main
from xarray_hurray.container import verify_file


def _sizes(path, name: str = "v") -> np.ndarray:
    return xh.open_reader(path).index(name)["size"]


@pytest.mark.parametrize("lazy", [False, True])
def test_fill_chunks_are_left_out_unless_asked(tmp_path, lazy):
    values = np.full((32, 32), np.nan, dtype="f4")
    values[3, 5] = 1.0  # chunk 0
    values[20:, 20:] = 2.0  # chunk 3
    data = da.from_array(values, chunks=16) if lazy else values
    ds = xr.Dataset({"v": (("y", "x"), data)})
    encoding = {"v": {"chunks": (16, 16)}}
    xh.to_hurray(ds, tmp_path / "sparse.hurray", encoding=encoding)
    assert (_sizes(tmp_path / "sparse.hurray") == 0).tolist() == [False, True, True, False]
    xh.to_hurray(ds, tmp_path / "full.hurray", encoding=encoding, write_empty_chunks=True)
    assert (_sizes(tmp_path / "full.hurray") != 0).all()
    for name in ("sparse.hurray", "full.hurray"):
        assert verify_file(tmp_path / name) == []
        with xr.open_dataset(tmp_path / name, engine="hurray") as back:
            xr.testing.assert_identical(back.load(), xr.Dataset({"v": (("y", "x"), values)}))
            region = back["v"][10:20, 12:30].values
        np.testing.assert_array_equal(region, values[10:20, 12:30])


@pytest.mark.parametrize(
    ("fill", "stored"),
    [
        (np.float64(-0.0), np.float64(0.0)),  # equal as numbers, not as bytes
        (np.float64(np.nan), np.frombuffer(bytes.fromhex("0100000000f8ff7f"), "<f8")[0]),
        (np.int16(-7), np.int16(7)),
    ],
)
def test_only_chunks_equal_to_the_fill_byte_for_byte_are_left_out(tmp_path, fill, stored):
    values = np.full(8, fill)
    values[4:] = stored
    ds = xr.Dataset({"v": (("x",), values)})
    ds["v"].encoding["_FillValue"] = fill
    path = tmp_path / "f.hurray"
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (4,), "_FillValue": fill}})
    assert (_sizes(path) == 0).tolist() == [True, False]
    back = xh.open_reader(path).read("v")
    assert back.tobytes() == values.tobytes()  # every bit, NaN payloads and signs too


def test_strings_and_ints_without_a_fill_value_leave_out_zero_and_empty_chunks(tmp_path):
    ds = xr.Dataset(
        {
            "s": (("k",), np.array(["", "", "a", ""], dtype=object)),
            "i": (("k",), np.array([0, 0, 0, 5], dtype="i4")),
        }
    )
    path = tmp_path / "z.hurray"
    xh.to_hurray(ds, path, encoding={"s": {"chunks": (2,)}, "i": {"chunks": (2,)}})
    assert (_sizes(path, "s") == 0).tolist() == [True, False]
    assert (_sizes(path, "i") == 0).tolist() == [True, False]
    with xr.open_dataset(path, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), ds)


def test_info_and_verify_count_the_stored_chunks(tmp_path, capsys):
    values = np.full((64, 64), np.nan, dtype="f4")
    values[:8, :8] = 1
    path = tmp_path / "i.hurray"
    xh.to_hurray(xr.Dataset({"v": (("y", "x"), values)}), path, encoding={"v": {"chunks": (8, 8)}})
    assert main(["info", "--json", str(path)]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert (facts["variables"][0]["chunk_count"], facts["variables"][0]["stored_chunks"]) == (64, 1)
    assert main(["verify", str(path)]) == 0
    assert "64 chunks, 1 stored" in capsys.readouterr().out


def test_an_all_fill_variable_of_many_chunks_takes_no_chunk_bytes(tmp_path):
    ds = xr.Dataset({"v": (("y", "x"), np.full((2048, 2048), np.nan, dtype="f4"))})
    path = tmp_path / "empty.hurray"
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (8, 8)}})  # 65,536 chunks
    # header, metadata, root, a page table of absent pages and the room the first
    # 64 KiB keep for pages: no chunk and no page
    assert path.stat().st_size == 65536
    assert not xh.open_reader(path).page_table("v")["offset"].any()
    assert np.isnan(xh.open_reader(path).read("v", (slice(100, 300), slice(0, 5)))).all()
