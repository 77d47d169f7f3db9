"""Writing into an existing file: to_hurray's modes, append_dim and region, with
to_zarr's meaning and errors, checked before any byte is written."""

from __future__ import annotations

import hashlib

import dask
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from dask.delayed import Delayed

import xarray_hurray as xh
from xarray_hurray.container import verify_file

CHUNKS = {"v": {"chunks": (4, 4, 4), "chunk_axes": ["y", "x"]}, "mean": {"chunks": (4,)}}


def days(start: int, count: int, seed: int = 0) -> xr.Dataset:
    """Days ``start`` to ``start + count`` of a (time, y, x) dataset whose values are
    fixed per day, so that pieces of it concatenate to the whole."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((start + count, 6, 8))[start:]
    return xr.Dataset(
        {
            "v": (("time", "y", "x"), values.astype("float32"), {"units": "K"}),
            "mean": (("time",), values.mean(axis=(1, 2))),
            "mask": (("y", "x"), np.arange(48).reshape(6, 8) % 3 == 0),
        },
        coords={
            "time": pd.date_range("2021-01-01", periods=start + count)[start:],
            "y": np.arange(6.0),
            "x": np.arange(8.0),
        },
        attrs={"title": "days"},
    )


def read(path) -> xr.Dataset:
    with xr.open_dataset(path, engine="hurray") as ds:
        return ds.load()


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def year(tmp_path):
    path = tmp_path / "year.hurray"
    xh.to_hurray(days(0, 10), path, encoding=CHUNKS)
    return path


@pytest.mark.parametrize("split", [[10, 3], [10, 1, 1, 1], [10, 2, 7], [10, 6]])
@pytest.mark.parametrize("chunked", [False, True])
def test_appends_read_as_the_whole(year, split, chunked):
    start = split[0]
    for count in split[1:]:
        piece = days(start, count)
        if chunked:
            # the first dask chunk completes the partly filled stored chunk
            first = min(count, 4 - start % 4)
            piece = piece.chunk({"time": (first, count - first) if count > first else (count,)})
        xh.to_hurray(piece, year, append_dim="time")
        start += count
    whole = days(0, start)
    xr.testing.assert_identical(read(year), whole)
    assert verify_file(year) == []


def test_append_keeps_the_file_settings_and_encoding(year):
    xh.to_hurray(days(10, 3), year, append_dim="time", codecs="lz4")  # ignored: kept
    with xr.open_dataset(year, engine="hurray") as ds:
        assert ds["v"].encoding["chunks"] == (4, 4, 4)
        assert ds["v"].encoding["codecs"][0]["id"] == "zstd"
        assert ds["v"].encoding["chunk_axes"] == ("y", "x")
        assert ds["time"].encoding["units"].startswith("days since 2021-01-01")


def test_mode_a_overwrites_and_adds_variables(year):
    new = days(0, 10)
    with xr.set_options(keep_attrs=True):  # the default changed across xarray releases
        new["v"] = new["v"] * 2
        new["w"] = new["v"] + 1
    xh.to_hurray(new[["v", "w"]], year, mode="a")
    expected = days(0, 10)
    expected["v"] = new["v"]
    expected["w"] = new["w"]
    out = read(year)
    xr.testing.assert_identical(out, expected)


@pytest.mark.parametrize("append_dim", [None, "time"])
def test_a_scalar_variable_is_overwritten(tmp_path, append_dim):
    path = tmp_path / "scalar.hurray"
    xh.to_hurray(days(0, 4).assign(level=850.0), path, encoding=CHUNKS)
    later = days(4, 2) if append_dim else days(0, 4)
    xh.to_hurray(later.assign(level=500.0), path, mode="a", append_dim=append_dim)
    expected = days(0, 6 if append_dim else 4).assign(level=500.0)
    xr.testing.assert_identical(read(path), expected)


def test_mode_a_minus_leaves_variables_without_the_append_dim(year):
    piece = days(10, 2)
    piece["mask"] = ~piece["mask"]  # "a" would overwrite it; "a-" keeps the file's
    xh.to_hurray(piece, year, mode="a-", append_dim="time")
    xr.testing.assert_identical(read(year), days(0, 12))
    xh.to_hurray(days(12, 1).assign(mask=~days(0, 1)["mask"]), year, append_dim="time")
    assert (read(year)["mask"] == ~days(0, 1)["mask"]).all()


def test_mode_a_creates_a_missing_file(tmp_path):
    path = tmp_path / "new.hurray"
    xh.to_hurray(days(0, 3), path, mode="a")
    xr.testing.assert_identical(read(path), days(0, 3))


def test_mode_w_minus_creates_but_never_replaces(tmp_path, year):
    with pytest.raises(FileExistsError, match="mode='w-'"):
        xh.to_hurray(days(0, 1), year, mode="w-")
    path = tmp_path / "fresh.hurray"
    xh.to_hurray(days(0, 1), path, mode="w-")
    xr.testing.assert_identical(read(path), days(0, 1))


def test_region_writes_slices_and_auto(year):
    expected = days(0, 10)
    expected["v"][4:8] = -1.0
    xh.to_hurray(
        expected.isel(time=slice(4, 8)).drop_vars(["x", "y", "mask"]),
        year,
        region={"time": slice(4, 8)},
    )
    xr.testing.assert_identical(read(year), expected)
    expected["v"][8:, :4] = 7.0
    expected["mean"][8:] = 3.0
    piece = expected.isel(time=slice(8, None), y=slice(0, 4)).drop_vars("mask")
    xh.to_hurray(piece, year, region="auto")
    xr.testing.assert_identical(read(year), expected)
    assert verify_file(year) == []


@pytest.mark.parametrize("mode", ["w", "w-", "a", "a-", "r+"])
def test_compute_false_writes_nothing_until_computed(tmp_path, year, mode):
    target = year if mode in ("a", "a-", "r+") else tmp_path / "later.hurray"
    before = digest(year)
    kwargs = {
        "a": {"append_dim": "time"},
        "a-": {"append_dim": "time"},
        "r+": {"region": {"time": slice(0, 4)}},
    }.get(mode, {})
    ds = days(10, 3) if "append_dim" in kwargs else days(0, 10)
    if mode == "r+":
        ds = ds.isel(time=slice(0, 4)).drop_vars(["x", "y", "mask"]) * 1
        ds["v"].attrs = {"units": "K"}
    pending = xh.to_hurray(ds.chunk(), target, mode=mode, compute=False, **kwargs)
    assert isinstance(pending, Delayed)
    assert digest(year) == before
    assert mode in ("a", "a-", "r+") or not target.exists()
    dask.compute(pending)
    expected = days(0, 13) if "append_dim" in kwargs else days(0, 10)
    xr.testing.assert_identical(read(target), expected)


ERRORS = [
    ({"mode": "x"}, ValueError, "supported options for mode"),
    ({"mode": "w", "append_dim": "time"}, ValueError, "cannot set append_dim"),
    ({"mode": "w-", "region": {"time": slice(0, 4)}}, ValueError, "cannot set region"),
    ({"append_dim": "depth"}, ValueError, "does not match any existing dataset dimensions"),
    ({"mode": "r+", "extra": "w"}, ValueError, "non-pre-existing variables"),
    ({"mode": "a", "sizes": {"y": slice(0, 5)}}, ValueError, "Unable to update size"),
    ({"mode": "a", "rename": {"y": "lat"}}, ValueError, "different dimension names"),
    ({"mode": "a", "astype": "str"}, ValueError, "Mismatched dtypes"),
    ({"mode": "a", "astype": "timedelta64[s]"}, ValueError, "Mismatched dtypes"),
    ({"mode": "a", "encoding": {"v": {"chunks": (1, 6, 8)}}}, ValueError, "already exists"),
    # two dask chunks, two tasks, in the stored chunk of days 0-3 (to_zarr's safe_chunks)
    ({"region": {"time": slice(2, 6)}, "chunk": (1, 3)}, ValueError, "do not line up"),
    ({"region": {"time": slice(0, 4, 2)}}, ValueError, "step on all slices"),
    ({"region": {"depth": slice(0, 4)}}, ValueError, "not in Dataset dimensions"),
    # past the end of the file's 10 days, or before its start
    ({"region": {"time": slice(10, 14)}}, ValueError, r"'time': slice\(10, 14, None\) is out of"),
    ({"region": {"time": slice(8, 12)}}, ValueError, "out of bounds of the dimension's length 10"),
    ({"region": {"time": slice(-14, -10)}}, ValueError, "out of bounds"),
    ({"region": {"time": "auto"}, "shift": 20}, KeyError, "were found"),
    ({"region": "auto", "reverse": True}, ValueError, "non-contiguous"),
    ({"region": {"time": slice(0, 4)}, "keep_mask": True}, ValueError, "drop_vars"),
    ({"append_dim": "time", "drop": "mean"}, ValueError, "not in the dataset"),
    ({"append_dim": "time", "chunk": (1, 2)}, ValueError, "do not line up"),
]


@pytest.mark.parametrize(("case", "error", "match"), ERRORS)
def test_wrong_use_is_refused_before_any_byte_is_written(year, case, error, match):
    case = dict(case)
    region = case.get("region")
    ds = days(10, 3) if "append_dim" in case else days(0, 10)
    if region is not None:
        ds = ds.isel(time=slice(0, 4)).drop_vars(["x", "y"])
        if not case.pop("keep_mask", False):
            ds = ds.drop_vars("mask")
    if "shift" in case:
        ds = ds.assign_coords(time=ds.time + pd.Timedelta(days=case.pop("shift")))
    if case.pop("reverse", False):
        ds = days(0, 10).isel(time=[3, 2, 1, 0]).drop_vars("mask")
    if "extra" in case:
        ds = ds.assign({case.pop("extra"): ds["v"] + 1})
    if "sizes" in case:
        ds = ds.isel(case.pop("sizes"))
    if "rename" in case:
        ds = ds.rename(case.pop("rename"))
    if "astype" in case:
        ds = ds.assign(v=ds["v"].astype(case.pop("astype")))
    if "drop" in case:
        ds = ds.drop_vars(case.pop("drop"))
    if "chunk" in case:
        ds = ds.chunk({"time": case.pop("chunk")})
    before = digest(year)
    with pytest.raises(error, match=match):
        xh.to_hurray(ds, year, **case)
    with pytest.raises(error, match=match):
        xh.to_hurray(ds, year, compute=False, **case)
    assert digest(year) == before
    assert sorted(p.name for p in year.parent.iterdir()) == [year.name]


def test_r_plus_needs_a_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        xh.to_hurray(days(0, 1), tmp_path / "none.hurray", mode="r+")
    assert not any(tmp_path.iterdir())


def test_accessor_takes_the_modes(year):
    days(10, 2).hurray.to_hurray(year, append_dim="time")
    xr.testing.assert_identical(read(year), days(0, 12))
