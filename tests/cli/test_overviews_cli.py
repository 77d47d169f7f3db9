"""``hurray convert --overviews N`` builds the levels; ``hurray info`` lists them."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.cli import main


def test_convert_builds_the_levels_and_info_lists_them(tmp_path, capsys):
    values = np.random.default_rng(0).random((40, 24)).astype(np.float32)
    ds = xr.Dataset(
        {"v": (("y", "x"), values)}, coords={"y": np.arange(40.0), "x": np.arange(24.0)}
    )
    ds.to_zarr(tmp_path / "in.zarr", zarr_format=3, consolidated=False)
    out = tmp_path / "out.hurray"
    argv = ["convert", str(tmp_path / "in.zarr"), str(out), "--overviews", "2"]
    assert main([*argv, "--chunks", "y=8,x=8"]) == 0
    with xr.open_datatree(out, engine="hurray") as tree:
        expected = xh.multiscale(ds, [2, 4])
        for name in ("0", "1", "2"):
            np.testing.assert_array_equal(tree[name]["v"].values, expected[name]["v"].values)
    capsys.readouterr()
    assert main(["info", "--json", str(out)]) == 0
    levels = json.loads(capsys.readouterr().out)["levels"]
    assert [(lv["group"], lv["factor"], lv["sizes"]) for lv in levels] == [
        ("/0", 1, {"y": 40, "x": 24}),
        ("/1", 2, {"y": 20, "x": 12}),
        ("/2", 4, {"y": 10, "x": 6}),
    ]
    assert levels[0]["stored_bytes"] > levels[1]["stored_bytes"] > levels[2]["stored_bytes"] > 0
    assert main(["info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "overview levels (multiscales)" in text and "/2     x4     (y=10, x=6)" in text


def test_info_of_a_file_without_levels_lists_none(tmp_path, capsys):
    xh.to_hurray(xr.Dataset({"v": ("x", np.arange(4))}), tmp_path / "f.hurray")
    assert main(["info", "--json", str(tmp_path / "f.hurray")]) == 0
    assert json.loads(capsys.readouterr().out)["levels"] == []


def test_convert_writes_the_levels_to_zarr_as_to_zarr_does(tmp_path):
    import zarr

    values = np.random.default_rng(1).random((40, 24)).astype(np.float32)
    ds = xr.Dataset(
        {"v": (("y", "x"), values)}, coords={"y": np.arange(40.0), "x": np.arange(24.0)}
    )
    xh.to_hurray(ds, tmp_path / "in.hurray")
    out = tmp_path / "out.zarr"
    argv = ["convert", str(tmp_path / "in.hurray"), str(out), "--overviews", "2"]
    assert main([*argv, "--chunks", "y=8,x=8"]) == 0
    expected = xh.multiscale(ds, [2, 4])
    root = zarr.open_group(out, mode="r")
    assert root.attrs["multiscales"] == expected.attrs["multiscales"]
    assert root.attrs["hurray_overviews"] == expected.attrs["hurray_overviews"]
    with xr.open_datatree(out, engine="zarr") as tree:
        assert list(tree.children) == ["0", "1", "2"]
        # the planned chunks, cut to each level (the third is 10 x 6)
        for name, chunks in (("0", (8, 8)), ("1", (8, 8)), ("2", (8, 6))):
            np.testing.assert_array_equal(tree[name]["v"].values, expected[name]["v"].values)
            assert tree[name]["v"].encoding["chunks"] == chunks


def test_overviews_are_refused_for_netcdf_output(tmp_path, capsys):
    xh.to_hurray(xr.Dataset({"v": ("x", np.arange(4))}), tmp_path / "f.hurray")
    argv = ["convert", str(tmp_path / "f.hurray"), str(tmp_path / "o.nc"), "--overviews", "1"]
    assert main(argv) == 2
    assert "Hurray and Zarr output only" in capsys.readouterr().err
