"""The defaults of a pyramid as a new user meets them: the spatial dimensions only,
tiles of 256 x 256, no level past the one that fits in a tile, level 0 from a plain
``open_dataset``, and the same pyramid written to Zarr."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from test_overviews import brute_pyramid

import xarray_hurray as xh
from xarray_hurray.errors import HurrayValueError


def _cube(dims: tuple[str, ...], coords: dict, shape: tuple[int, ...]) -> xr.Dataset:
    values = np.random.default_rng(0).random(shape).astype(np.float32)
    return xr.Dataset({"v": (dims, values)}, coords=coords)


DAYS = pd.date_range("2020-01-01", periods=3)


@pytest.mark.parametrize(
    ("dims", "coords", "shape", "expected"),
    [
        # times: a time coordinate, not the chunk curve's axes, decides
        (("time", "y", "x"), {"time": DAYS}, (3, 40, 30), ("y", "x")),
        (("time", "lat", "lon"), {"time": [1, 2, 3]}, (3, 40, 30), ("lat", "lon")),
        # CF marks of horizontal coordinates, wherever the dimensions are
        (
            ("lon", "lat", "time"),
            {
                "lon": ("lon", np.arange(40.0), {"units": "degrees_east"}),
                "lat": ("lat", np.arange(30.0), {"units": "degree_N"}),
                "time": DAYS,
            },
            (40, 30, 3),
            ("lon", "lat"),
        ),
        (
            ("band", "row", "col"),
            {
                "row": ("row", np.arange(40.0), {"axis": "Y"}),
                "col": ("col", np.arange(30.0), {"standard_name": "projection_x_coordinate"}),
            },
            (3, 40, 30),
            ("row", "col"),
        ),
        # else the last two, never a vertical one
        (
            ("y", "x", "level"),
            {"level": ("level", [1000.0, 850.0, 500.0], {"units": "hPa"})},
            (40, 30, 3),
            ("y", "x"),
        ),
        (
            ("time", "depth", "y", "x"),
            {"depth": ("depth", [0.0, 5.0], {"positive": "down"}), "time": DAYS},
            (3, 2, 40, 30),
            ("y", "x"),
        ),
    ],
)
def test_the_default_dims_are_the_spatial_ones(tmp_path, dims, coords, shape, expected):
    ds = _cube(dims, coords, shape)
    path = tmp_path / "p.hurray"
    xh.to_hurray(ds, path, overviews=[2, 4])
    with xr.open_datatree(path, engine="hurray") as tree:
        assert json.loads(tree.attrs["hurray_overviews"])["dims"] == list(expected)
        for number, factor in ((1, 2), (2, 4)):
            sizes = dict(tree[str(number)].sizes)
            for dim, n in zip(dims, shape, strict=True):
                assert sizes[dim] == (-(-n // factor) if dim in expected else n)
        # each time step, band or level coarsened on its own: the brute force of each
        axes = [dims.index(d) for d in expected]
        others = [k for k in range(len(dims)) if k not in axes]
        values = np.moveaxis(ds["v"].values, others, range(len(others)))
        got = np.moveaxis(tree["1"]["v"].values, others, range(len(others)))
        for index in np.ndindex(*values.shape[: len(others)]):
            (level,) = brute_pyramid(values[index], [0, 1], [2], "mean")
            np.testing.assert_allclose(got[index], level, rtol=1e-6)


def test_time_is_coarsened_when_asked():
    ds = _cube(("time", "y", "x"), {"time": pd.date_range("2020", periods=4)}, (4, 8, 8))
    tree = xh.multiscale(ds, 1, dims=["time", "y", "x"])
    assert dict(tree["1"].sizes) == {"time": 2, "y": 4, "x": 4}


def test_a_dataset_of_time_alone_names_the_argument_to_coarsen_it():
    days = pd.date_range("2020", periods=8)
    ds = xr.Dataset({"v": ("time", np.arange(8.0))}, coords={"time": days})
    with pytest.raises(HurrayValueError, match="overview_dims"):
        xh.multiscale(ds, 1)


def test_open_dataset_of_a_pyramid_gives_level_0(tmp_path):
    ds = _cube(("y", "x"), {"y": np.arange(40.0), "x": np.arange(30.0)}, (40, 30))
    path = tmp_path / "map.hurray"
    xh.to_hurray(ds, path, overviews=1)
    with xr.open_dataset(path, engine="hurray") as opened:
        xr.testing.assert_identical(opened["v"].load(), ds["v"])
        assert opened.attrs["overview_level"] == 0
    with xr.open_dataset(path, engine="hurray", group="/") as root:
        assert not root.data_vars and "multiscales" in root.attrs


def test_a_field_gets_levels_down_to_one_tile_and_no_more(tmp_path):
    ds = _cube(("y", "x"), {}, (1000, 1201))
    with pytest.raises(HurrayValueError, match="ask for at most 3") as refused:
        xh.to_hurray(ds, tmp_path / "p.hurray", overviews=20)
    assert "level 3 (factor 8)" in str(refused.value)  # 125 x 151 cells, in one tile
    assert not (tmp_path / "p.hurray").exists()
    xh.to_hurray(ds, tmp_path / "p.hurray", overviews=3)
    with xr.open_datatree(tmp_path / "p.hurray", engine="hurray") as tree:
        assert [tree[str(k)]["v"].encoding["chunks"] for k in range(4)] == [
            (256, 256),  # map tiles at every level, cut to the coarsest
            (256, 256),
            (250, 256),
            (125, 151),
        ]
        assert dict(tree["3"].sizes) == {"y": 125, "x": 151}


def test_chunks_of_ones_own_are_kept(tmp_path):
    ds = _cube(("time", "y", "x"), {"time": DAYS}, (3, 600, 500))
    path = tmp_path / "p.hurray"
    xh.to_hurray(ds, path, overviews=1, encoding={"v": {"chunks": (1, 128, 128)}})
    with xr.open_datatree(path, engine="hurray") as tree:
        assert tree["0"]["v"].encoding["chunks"] == (1, 128, 128)
        assert tree["1"]["v"].encoding["chunks"] == (1, 128, 128)
    tiled = xh.multiscale(ds, 1)
    assert tiled["0"]["v"].encoding["chunks"] == (1, 256, 256)  # one time step a tile
    assert "chunks" not in ds["v"].encoding  # the caller's dataset left as it was


@pytest.mark.parametrize("chunks", [None, {"time": 1, "y": 100, "x": 100}])
def test_to_zarr_writes_the_pyramid_to_hurray_writes(tmp_path, chunks):
    import zarr

    ds = _cube(("time", "y", "x"), {"time": DAYS, "y": np.arange(600.0)}, (3, 600, 500))
    ds = ds.chunk(chunks) if chunks else ds
    xh.to_zarr(ds, tmp_path / "p.zarr", overviews=2)
    xh.to_hurray(ds, tmp_path / "p.hurray", overviews=2)
    root = zarr.open_group(tmp_path / "p.zarr", mode="r")
    with (
        xr.open_datatree(tmp_path / "p.zarr", engine="zarr") as from_zarr,
        xr.open_datatree(tmp_path / "p.hurray", engine="hurray") as from_hurray,
    ):
        assert root.attrs["multiscales"] == json.loads(from_hurray.attrs["multiscales"])
        assert root.attrs["hurray_overviews"] == from_hurray.attrs["hurray_overviews"]
        assert list(from_zarr.children) == ["0", "1", "2"]
        for name in ("0", "1", "2"):
            xr.testing.assert_identical(
                from_zarr[name].to_dataset().load(), from_hurray[name].to_dataset().load()
            )
            assert root[f"{name}/v"].chunks == from_hurray[name]["v"].encoding["chunks"]


@pytest.mark.parametrize(
    "kwargs", [{"mode": "a"}, {"append_dim": "time"}, {"group": "g"}, {"overviews": 30}]
)
def test_to_zarr_refuses_what_a_new_pyramid_cannot_be(tmp_path, kwargs):
    ds = _cube(("time", "y", "x"), {"time": DAYS}, (3, 40, 30))
    with pytest.raises(HurrayValueError):
        xh.to_zarr(ds, tmp_path / "p.zarr", **{"overviews": 1, **kwargs})
    assert not (tmp_path / "p.zarr").exists()
