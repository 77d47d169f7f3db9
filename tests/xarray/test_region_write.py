"""Region writes into part of stored chunks: the chunks a region touches are read,
changed and rewritten in the update's one commit, for numpy- and dask-backed data;
only dask chunks that would share a stored chunk are refused (to_zarr's safe_chunks),
and safe_chunks=False regroups them instead.  Checked against numpy: the whole array
after the write is the old one with the region replaced."""

from __future__ import annotations

import hashlib
import itertools
import threading

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xarray_hurray as xh
from xarray_hurray.container import verify_file


def read(path, name: str = "v") -> np.ndarray:
    with xr.open_dataset(path, engine="hurray") as ds:
        return ds[name].values


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_issue_example(tmp_path):
    path = tmp_path / "g.hurray"
    ds = xr.Dataset(
        {"v": (("time", "x"), np.zeros((3, 4), "f4")), "s": ("time", np.arange(3))},
        coords={"time": pd.date_range("2024", periods=3)},
    )
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (1, 4)}})
    generation = xh.open_reader(path).header.generation
    change = (ds.isel(time=slice(1, 2)) + 7).assign_coords(time=ds.time[1:2])
    xh.to_hurray(change, path, region={"time": slice(1, 2)})
    expected = ds.copy(deep=True)
    expected["v"][1] = 7
    expected["s"][1] = 8
    with xr.open_dataset(path, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), expected)
    assert xh.open_reader(path).header.generation == generation + 1  # one commit
    assert verify_file(path) == []


@st.composite
def region_cases(draw: st.DrawFn) -> dict:
    """A stored array (shape, chunks), a region of it that may start and end inside
    chunks, and dask chunks of the region that give each stored chunk it touches
    from one dask chunk (boundaries on the grid), or None for numpy data."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 13)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    region, dask_chunks = [], []
    for n, c in zip(shape, chunks, strict=True):
        start = draw(st.integers(0, n - 1))
        stop = draw(st.integers(start + 1, n))
        region.append(slice(start, stop))
        # dask boundaries: a subset of the grid lines strictly inside the region
        inner = [g for g in range(c * (start // c + 1), stop, c)]
        cuts = sorted(draw(st.sets(st.sampled_from(inner))) if inner else [])
        bounds = [start, *cuts, stop]
        dask_chunks.append(tuple(b - a for a, b in itertools.pairwise(bounds)))
    backed = draw(st.sampled_from(["numpy", "dask"]))
    return {
        "shape": shape,
        "chunks": chunks,
        "region": tuple(region),
        "dask_chunks": tuple(dask_chunks) if backed == "dask" else None,
        "dtype": draw(st.sampled_from(["f4", "i2", "f8"])),
    }


DIMS = ("t", "y", "x")


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=region_cases())
def test_a_region_anywhere_replaces_just_itself(tmp_path_factory, case):
    path = tmp_path_factory.mktemp("region") / "r.hurray"
    shape, dims = case["shape"], DIMS[-len(case["shape"]) :]
    rng = np.random.default_rng(len(shape))
    old = (rng.standard_normal(shape) * 100).astype(case["dtype"])
    xh.to_hurray(xr.Dataset({"v": (dims, old)}), path, encoding={"v": {"chunks": case["chunks"]}})
    region = case["region"]
    new = (rng.standard_normal(old[region].shape) * 100 + 1000).astype(case["dtype"])
    data = new if case["dask_chunks"] is None else da.from_array(new, chunks=case["dask_chunks"])
    xh.to_hurray(xr.Dataset({"v": (dims, data)}), path, region=dict(zip(dims, region, strict=True)))
    expected = old.copy()
    expected[region] = new
    np.testing.assert_array_equal(read(path), expected)
    assert verify_file(path) == []


def days(start: int, count: int) -> xr.Dataset:
    """Days ``start`` to ``start + count`` of a (time, y, x) field fixed per day."""
    values = np.random.default_rng(4).standard_normal((start + count, 6, 10))[start:]
    return xr.Dataset(
        {"v": (("time", "y", "x"), values.astype("f4"))},
        coords={"time": pd.date_range("2020-01-01", periods=start + count)[start:]},
    )


CHUNKS = {"v": {"chunks": (4, 4, 4)}}


@pytest.fixture
def path(tmp_path):
    out = tmp_path / "days.hurray"
    xh.to_hurray(days(0, 10), out, encoding=CHUNKS)
    return out


@pytest.mark.parametrize("mode", ["r+", "a"])
def test_region_auto_off_the_grid_through_dask(path, mode):
    # days 3-8 and y 1-4: stored chunks of days 0-3, 4-7 and 8-9 are each partly new;
    # the dask chunks end on day 7, on the grid, so each stored chunk has one task
    change = days(3, 6).isel(y=slice(1, 5)) * 0 + 5
    change = change.chunk({"time": (5, 1), "y": 4, "x": 10})
    xh.to_hurray(
        change.drop_vars("time"), path, region={"time": slice(3, 9), "y": slice(1, 5)}, mode=mode
    )
    expected = days(0, 10)["v"].values
    expected[3:9, 1:5] = 5
    np.testing.assert_array_equal(read(path), expected)


def test_each_dask_chunk_is_computed_once(path):
    calls = []
    lock = threading.Lock()

    def block(x: np.ndarray) -> np.ndarray:
        if x.size:  # not dask's own trial on an empty array
            with lock:
                calls.append(x.shape)
        return x + 1

    source = da.zeros((6, 6, 10), chunks=((1, 4, 1), 6, 10), dtype="f4").map_blocks(
        block, dtype="f4"
    )
    change = xr.Dataset({"v": (("time", "y", "x"), source)})
    xh.to_hurray(change, path, region={"time": slice(3, 9)})
    assert sorted(calls) == sorted([(1, 6, 10), (4, 6, 10), (1, 6, 10)])
    expected = days(0, 10)["v"].values
    expected[3:9] = 1
    np.testing.assert_array_equal(read(path), expected)


@pytest.mark.parametrize("dask_chunks", [(1, 5), (1, 1, 1, 1, 1, 1), (3, 3)])
def test_dask_chunks_sharing_a_stored_chunk_are_refused_unless_safe_chunks_false(path, dask_chunks):
    change = days(2, 6) * 0 - 1
    change = change.drop_vars("time").chunk({"time": dask_chunks})
    before = digest(path)
    with pytest.raises(ValueError, match="do not line up with the stored chunks"):
        xh.to_hurray(change, path, region={"time": slice(2, 8)})
    assert digest(path) == before
    xh.to_hurray(change, path, region={"time": slice(2, 8)}, safe_chunks=False)
    expected = days(0, 10)["v"].values
    expected[2:8] = -1
    np.testing.assert_array_equal(read(path), expected)


def test_safe_chunks_false_regroups_a_new_file_and_an_append(tmp_path):
    path = tmp_path / "n.hurray"
    first = days(0, 7).chunk({"time": 3})  # ends inside the stored chunks of 4
    with pytest.raises(ValueError, match="do not line up"):
        xh.to_hurray(first, path, encoding=CHUNKS)
    xh.to_hurray(first, path, encoding=CHUNKS, safe_chunks=False)
    later = days(7, 5).chunk({"time": 2})
    xh.to_hurray(later, path, append_dim="time", safe_chunks=False)
    with xr.open_dataset(path, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), days(0, 12))


def test_a_region_beside_an_append_fills_the_rest_of_the_new_rows(tmp_path):
    # days 10-11 appended into y 2-3 only: the new rows' other cells are the fill
    # (no time coordinate, which a region along y could not extend)
    path = tmp_path / "days.hurray"
    xh.to_hurray(days(0, 10).drop_vars("time"), path, encoding=CHUNKS)
    change = days(10, 2).isel(y=slice(2, 4)).drop_vars("time")
    xh.to_hurray(change, path, append_dim="time", region={"y": slice(2, 4)})
    out = read(path)
    np.testing.assert_array_equal(out[:10], days(0, 10)["v"].values)
    np.testing.assert_array_equal(out[10:, 2:4], change["v"].values)
    assert np.isnan(out[10:, :2]).all() and np.isnan(out[10:, 4:]).all()


class Boom(Exception):
    pass


def _boom(block: np.ndarray) -> np.ndarray:
    raise Boom("failed while computing")


def test_a_region_write_failing_halfway_leaves_the_file_byte_identical(path):
    failing = da.zeros((6, 6, 10), chunks=((1, 4, 1), 6, 10), dtype="f4").map_blocks(
        _boom, dtype="f4"
    )
    before = digest(path)
    with pytest.raises(Boom):
        xh.to_hurray(
            xr.Dataset({"v": (("time", "y", "x"), failing)}), path, region={"time": slice(3, 9)}
        )
    assert digest(path) == before


def test_text_and_integers_in_part_of_their_chunks(tmp_path):
    path = tmp_path / "t.hurray"
    names = np.array(["a", "bb", "ccc", "d", "e", "f"], dtype=object)
    ds = xr.Dataset({"name": ("k", names), "i": ("k", np.arange(6))})
    xh.to_hurray(ds, path, encoding={"name": {"chunks": (4,)}, "i": {"chunks": (4,)}})
    change = xr.Dataset({"name": ("k", np.array(["X", ""], dtype=object)), "i": ("k", [10, 11])})
    xh.to_hurray(change, path, region={"k": slice(3, 5)})
    expected = ds.copy(deep=True)
    expected["name"][3:5] = ["X", ""]
    expected["i"][3:5] = [10, 11]
    with xr.open_dataset(path, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), expected)


def test_safe_chunks_false_regroups_a_pyramid_write(tmp_path):
    path = tmp_path / "o.hurray"
    values = np.random.default_rng(0).standard_normal((64, 64)).astype("f4")
    ds = xr.Dataset({"v": (("y", "x"), values)}).chunk({"y": 24, "x": 24})
    encoding = {"v": {"chunks": (16, 16)}}
    with pytest.raises(ValueError, match="do not line up"):
        xh.to_hurray(ds, path, overviews=1, encoding=encoding)
    xh.to_hurray(ds, path, overviews=1, encoding=encoding, safe_chunks=False)
    with xr.open_datatree(path, engine="hurray") as tree:
        np.testing.assert_array_equal(tree["0"]["v"].values, values)
        coarse = values.reshape(32, 2, 32, 2).mean(axis=(1, 3))  # in float32: rounding
        np.testing.assert_allclose(tree["1"]["v"].values, coarse, rtol=1e-5, atol=1e-6)
