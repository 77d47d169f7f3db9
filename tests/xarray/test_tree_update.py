"""Writing a DataTree into an existing file: to_hurray(tree, mode="a" | "a-" | "r+"),
with append_dim and region per group, committed as one new version."""

from __future__ import annotations

import hashlib
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import verify_file

ENCODING = {
    "/": {"land": {"chunks": (4, 4)}},
    "/ocean": {"sst": {"chunks": (2, 4, 4), "chunk_axes": ["y", "x"]}},
    "/ocean/daily": {"salt": {"chunks": (2, 4)}},
}


def sst(start: int, count: int) -> np.ndarray:
    """Days ``start`` to ``start + count`` of a (time, y, x) field fixed per day."""
    rng = np.random.default_rng(1)
    return rng.standard_normal((start + count, 8, 12))[start:].astype("f4")


def salt(start: int, count: int) -> np.ndarray:
    return np.arange(start * 8, (start + count) * 8, dtype="f8").reshape(count, 8) / 7


def times(start: int, count: int) -> pd.DatetimeIndex:
    return pd.date_range("2022-03-01", periods=start + count)[start:]


def tree(start: int = 0, count: int = 6) -> xr.DataTree:
    """A root with a static variable and the (y, x) coordinates the groups inherit,
    a group of daily fields with its own time coordinate, a group below it, and a
    group of static attributes only."""
    root = xr.Dataset(
        {"land": (("y", "x"), np.arange(96).reshape(8, 12) % 5 == 0)},
        coords={"y": np.arange(8.0), "x": np.arange(12.0) * 0.5},
        attrs={"title": "tree"},
    )
    ocean = xr.Dataset(
        {"sst": (("time", "y", "x"), sst(start, count), {"units": "K"})},
        coords={"time": times(start, count)},
        attrs={"source": "model"},
    )
    daily = xr.Dataset({"salt": (("time", "y"), salt(start, count))})
    return xr.DataTree.from_dict(
        {"/": root, "/ocean": ocean, "/ocean/daily": daily, "/meta": xr.Dataset(attrs={"v": 1})}
    )


def read(path) -> xr.DataTree:
    with xr.open_datatree(path, engine="hurray") as back:
        return back.load()


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def generation(path) -> int:
    return xh.open_reader(path).header.generation


@pytest.fixture
def path(tmp_path):
    out = tmp_path / "tree.hurray"
    xh.to_hurray(tree(), out, encoding=ENCODING)
    return out


def test_mode_a_adds_groups_and_variables_in_one_commit(path):
    before = generation(path)
    rng = np.random.default_rng(2)
    wind = rng.standard_normal((6, 8, 12))
    added = xr.DataTree.from_dict(
        {
            "/ocean": xr.Dataset({"wind": (("time", "y", "x"), wind)}),
            "/ice/north": xr.Dataset({"extent": ("season", [3.5, 4.0])}, attrs={"a": "b"}),
        }
    )
    xh.to_hurray(added, path, mode="a", encoding={"/ocean": {"wind": {"chunks": (3, 4, 4)}}})
    expected = tree()
    expected["ocean/wind"] = xr.Variable(("time", "y", "x"), wind)
    expected.attrs, expected["ocean"].attrs = {}, {}  # as to_zarr: the nodes' attrs
    expected["ice"] = xr.DataTree()
    expected["ice/north"] = added["ice/north"]
    back = read(path)
    xr.testing.assert_identical(back, expected)
    assert generation(path) == before + 1  # the whole tree is one version
    assert verify_file(path) == []
    assert xh.open_reader(path).variable("ocean/wind").chunks == (3, 4, 4)


def test_the_accessor_writes_into_a_file(path):
    changed = xr.DataTree.from_dict({"/ocean/daily": tree()["ocean/daily"].to_dataset() * 2})
    changed.hurray.to_hurray(path, mode="a")
    expected = tree()
    expected["ocean/daily/salt"] = expected["ocean/daily/salt"] * 2
    # the nodes from_dict made for the path have no attributes: as to_zarr, mode "a"
    # gives every group written the attributes of its node
    expected.attrs, expected["ocean"].attrs = {}, {}
    xr.testing.assert_identical(read(path), expected)


@pytest.mark.parametrize("mode", ["a", "a-"])
def test_append_dim_extends_the_groups_that_have_it(path, mode):
    # the root has no time: its variable is overwritten ("a") or left alone ("a-")
    land = ~tree()["land"]
    later = tree(6, 5)
    later["land"] = land
    xh.to_hurray(later, path, mode=mode, append_dim="time")
    expected = tree(0, 11)
    if mode == "a":
        expected["land"] = land
    xr.testing.assert_identical(read(path), expected)
    assert verify_file(path) == []


def test_append_dim_through_dask_and_a_subset_of_groups(path):
    later = xr.DataTree.from_dict(
        {
            "/ocean": xr.Dataset(
                {"sst": (("time", "y", "x"), da.from_array(sst(6, 4), chunks=(2, 8, 12)))},
                coords={"time": times(6, 4)},
            ),
            "/ocean/daily": xr.Dataset({"salt": (("time", "y"), salt(6, 4))}),
        }
    )
    xh.to_hurray(later, path, mode="a", append_dim="time")
    back = read(path)
    expected = tree(0, 10)
    expected.attrs, expected["ocean"].attrs = {}, {}
    xr.testing.assert_identical(back, expected)


def test_region_auto_uses_inherited_coordinates(path):
    # y is the root's coordinate, time the group's: both place the region
    part = tree().isel(y=slice(4, 8), time=slice(2, 4))
    part = xr.DataTree.from_dict(
        {
            "/": part.to_dataset().drop_vars("land"),
            "/ocean": part["ocean"].to_dataset(inherit=False) + 100,
            "/ocean/daily": part["ocean/daily"].to_dataset(inherit=False) - 100,
        }
    )
    xh.to_hurray(part, path, mode="r+", region="auto")
    expected = tree()
    values = sst(0, 6)
    values[2:4, 4:8] += 100
    expected["ocean/sst"].values[...] = values
    salts = salt(0, 6)
    salts[2:4, 4:8] -= 100
    expected["ocean/daily/salt"].values[...] = salts
    back = read(path)
    np.testing.assert_array_equal(back["ocean/sst"].values, values)
    np.testing.assert_array_equal(back["ocean/daily/salt"].values, salts)
    xr.testing.assert_identical(back, expected)


def test_region_slices_apply_to_the_dimensions_each_group_has(path):
    part = xr.DataTree.from_dict(
        {
            "/ocean": xr.Dataset({"sst": (("time", "y", "x"), np.zeros((2, 8, 12), "f4"))}),
            "/ocean/daily": xr.Dataset({"salt": (("time", "y"), np.ones((2, 8)))}),
        }
    )
    xh.to_hurray(part, path, region={"time": slice(4, 6), "x": slice(0, 12)})
    values, salts = sst(0, 6), salt(0, 6)
    values[4:6], salts[4:6] = 0, 1
    back = read(path)
    np.testing.assert_array_equal(back["ocean/sst"].values, values)
    np.testing.assert_array_equal(back["ocean/daily/salt"].values, salts)


def _new_group_in_r_plus() -> dict:
    return {"tree": {"/other": xr.Dataset({"q": ("k", [1.0])})}, "mode": "r+"}


ERRORS = [
    (_new_group_in_r_plus(), ValueError, "'/other' is not in the file"),
    (
        {"tree": {"/other": xr.Dataset({"q": ("k", [1.0])})}, "region": {"k": slice(0, 1)}},
        ValueError,
        "is not in the file",
    ),
    (
        {"tree": {"/meta": xr.Dataset({"t": ("time", [1.0])})}, "append_dim": "time"},
        ValueError,
        "group '/meta': append_dim='time' is a dimension of the tree's node",
    ),
    (
        {
            "tree": {"/ocean/daily": xr.Dataset({"salt": (("time", "y"), salt(0, 2))})},
            "region": {"time": slice(0, 2), "tme": slice(0, 2)},
        },
        ValueError,
        r"region dimensions \['tme'\] are dimensions of no group",
    ),
    (
        {
            "tree": {
                "/": xr.Dataset({"land": (("y", "x"), np.ones((8, 12), bool))}),
                "/ocean/daily": xr.Dataset({"salt": (("time", "y"), salt(0, 2))}),
            },
            "region": {"time": slice(0, 2)},
        },
        ValueError,
        "none of the region's dimensions",
    ),
    (
        {
            "tree": {
                # two dask chunks along y in one stored chunk of 4 (to_zarr's safe_chunks)
                "/ocean": xr.Dataset(
                    {"sst": (("time", "y", "x"), da.zeros((2, 3, 12), chunks=(2, (1, 2), 12)))}
                ),
                "/ocean/daily": xr.Dataset({"salt": (("time", "y"), np.zeros((2, 3)))}),
            },
            "region": {"time": slice(0, 2), "y": slice(0, 3)},
        },
        ValueError,
        "group '/ocean': variable 'sst': dask chunks",
    ),
    (
        {"tree": {"/ocean/daily": xr.Dataset({"salt": (("time", "y"), np.ones((6, 8), "U2"))})}},
        ValueError,
        "group '/ocean/daily': Mismatched dtypes",
    ),
    (
        {"tree": {"/ocean": xr.Dataset({"daily": ("k", [1.0])})}},
        ValueError,
        "names must be unique",
    ),
    (
        {"tree": {"/ocean": xr.Dataset({"new": ("k", [1.0])})}, "encoding": {"/nope": {}}},
        ValueError,
        "encoding given for groups",
    ),
    (
        {
            "tree": {"/ocean/daily": xr.Dataset({"salt": (("time", "y"), salt(0, 6))})},
            "encoding": {"/ocean/daily": {"salt": {"chunks": (1, 8)}}},
        },
        ValueError,
        "group '/ocean/daily': variable 'salt' already exists, but encoding was provided",
    ),
]


@pytest.mark.parametrize(("case", "error", "match"), ERRORS)
def test_wrong_use_leaves_the_file_byte_identical(path, case, error, match):
    case = dict(case)
    tree_ = xr.DataTree.from_dict(case.pop("tree"))
    mode = case.pop("mode", "a")
    before = digest(path)
    for compute in (True, False):
        with pytest.raises(error, match=match):
            xh.to_hurray(tree_, path, mode=mode, compute=compute, **case)
    assert digest(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


class Boom(Exception):
    pass


def _boom(block: np.ndarray) -> np.ndarray:
    raise Boom("failed while computing")


def test_a_write_failing_halfway_leaves_the_file_byte_identical(path):
    # the first group's chunks (megabytes, so they reach the file) are written before
    # the second group's computation fails: the commit never happens
    big = np.random.default_rng(3).standard_normal((6, 8, 12 * 1500))
    failing = da.zeros((6, 8), chunks=(2, 8)).map_blocks(_boom, dtype="f8")
    bad = xr.DataTree.from_dict(
        {
            "/": xr.Dataset({"big": (("time", "y", "wide"), big)}),
            "/ocean/daily": xr.Dataset({"extra": (("time", "y"), failing)}),
        }
    )
    before = digest(path)
    with pytest.raises(Boom):
        xh.to_hurray(bad, path, mode="a", encoding={"/": {"big": {"codecs": None}}})
    assert digest(path) == before
    xr.testing.assert_identical(read(path), tree())


def test_a_group_added_to_a_file_of_one_dataset_commits_in_place(tmp_path):
    path = tmp_path / "flat.hurray"
    path.write_bytes(
        (Path(__file__).parents[1] / "data" / "hurray_1_3_layouts.hurray").read_bytes()
    )
    with xr.open_dataset(path, engine="hurray") as ds:
        original = ds.load()
    extra = xr.Dataset({"q": ("k", np.arange(5.0))}, attrs={"kind": "extra"})
    xh.to_hurray(
        xr.DataTree.from_dict({"/": xr.Dataset(attrs=original.attrs), "/extra": extra}),
        path,
        mode="a",
    )
    assert xh.open_reader(path).header.generation == 2
    back = read(path)
    xr.testing.assert_identical(back.to_dataset(), original)
    xr.testing.assert_identical(back["extra"].to_dataset(inherit=False), extra)
    assert verify_file(path) == []


def test_a_tree_written_into_an_s3_object(s3):
    url = f"s3://{s3.bucket}/tree.hurray"
    so = s3.storage_options
    xh.to_hurray(tree(), url, storage_options=so, encoding=ENCODING)
    later = tree(6, 2)
    later["ice"] = xr.DataTree(xr.Dataset({"extent": ("season", [1.0, 2.0])}))
    xh.to_hurray(later, url, storage_options=so, mode="a", append_dim="time")
    expected = tree(0, 8)
    expected["ice"] = later["ice"]
    with xr.open_datatree(url, engine="hurray", storage_options=so) as back:
        xr.testing.assert_identical(back.load(), expected)
