"""to_hurray(group=...): a Dataset, DataArray or DataTree written as one group of a
file, with to_zarr(group=...)'s meaning of every mode, each write into an existing file
one commit that leaves the other groups reading as they did."""

from __future__ import annotations

import hashlib
import multiprocessing
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import verify_file
from xarray_hurray.errors import HurrayValueError


def field(start: int = 0, count: int = 4, name: str = "sst") -> xr.Dataset:
    """Days ``start`` to ``start + count`` of a (time, y, x) field fixed per day."""
    rng = np.random.default_rng(7)
    values = rng.standard_normal((start + count, 6, 8)).astype("f4")[start:]
    return xr.Dataset(
        {name: (("time", "y", "x"), values, {"units": "K"})},
        coords={"time": pd.date_range("2024-01-01", periods=start + count)[start:]},
        attrs={"source": name},
    )


ROOT = xr.Dataset(
    {"land": (("y", "x"), np.arange(48).reshape(6, 8) % 3 == 0)},
    coords={"y": np.arange(6.0), "x": np.arange(8.0) / 2},
    attrs={"title": "root"},
)
STATIC = xr.Dataset({"depth": ("k", np.linspace(0, 50, 5))}, attrs={"kind": "static"})

ENCODING = {"sst": {"chunks": (1, 3, 4)}}

# Sequences of writes, each (dataset, to_hurray / to_zarr arguments), run through both
# writers: the file must read as the Zarr store does after every step.
SEQUENCES = {
    "add groups then replace one": [
        (ROOT, {"mode": "w"}),
        (field(), {"mode": "a", "group": "ocean/surface", "encoding": ENCODING}),
        (STATIC, {"mode": "a", "group": "meta"}),
        (STATIC, {"mode": "a", "group": "ocean/surface/deep"}),
        (field(name="ice"), {"mode": "w", "group": "ocean"}),  # drops ocean/surface
    ],
    "a new file holding a group": [
        (field(), {"mode": "w", "group": "/a/b/", "encoding": ENCODING}),
        (STATIC, {"mode": "w-", "group": "c"}),
        (STATIC.rename(depth="height"), {"mode": "a", "group": "a/b"}),
    ],
    "append and region into a group": [
        (ROOT, {"mode": "w"}),
        (field(0, 4), {"mode": "a", "group": "daily", "encoding": ENCODING}),
        (field(4, 3), {"mode": "a", "group": "daily", "append_dim": "time"}),
        (field(2, 2) * 10, {"region": {"time": slice(2, 4)}, "group": "daily"}),
        (field(5, 1) - 1, {"region": "auto", "group": "daily", "mode": "r+"}),
    ],
    "overwrite variables of a group": [
        (ROOT, {"mode": "w"}),
        (field(), {"mode": "a", "group": "g", "encoding": ENCODING}),
        (field() * 2, {"mode": "a", "group": "g"}),
        (field(name="extra"), {"mode": "a-", "group": "g"}),
        (field() + 1, {"mode": "r+", "group": "g"}),
    ],
}


def read(path, engine: str) -> xr.DataTree:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's on consolidated metadata
        with xr.open_datatree(path, engine=engine) as tree:
            return tree.load()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def generation(path: Path) -> int:
    return xh.open_reader(path).header.generation


def zarr_write(ds: xr.Dataset, store: Path, kwargs: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(store, zarr_format=3, consolidated=True, **kwargs)


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_each_write_gives_what_to_zarr_gives(tmp_path, name):
    path, store = tmp_path / "f.hurray", tmp_path / "f.zarr"
    for step, (ds, kwargs) in enumerate(SEQUENCES[name]):
        xh.to_hurray(ds, path, **kwargs)
        zarr_write(ds, store, kwargs)
        xr.testing.assert_identical(read(path, "hurray"), read(store, "zarr"))
        assert verify_file(path) == [], step


def test_adding_a_group_is_one_commit_leaving_the_others_identical(tmp_path):
    path = tmp_path / "f.hurray"
    xh.to_hurray(xr.DataTree.from_dict({"/": ROOT, "/meta": STATIC}), path)
    before, first = read(path, "hurray"), generation(path)
    field().hurray.to_hurray(path, mode="a", group="ocean/surface", encoding=ENCODING)
    assert generation(path) == first + 1
    after = read(path, "hurray")
    for kept in ("/", "/meta"):
        xr.testing.assert_identical(
            after[kept].to_dataset(inherit=False), before[kept].to_dataset(inherit=False)
        )
    assert sorted(after.groups) == ["/", "/meta", "/ocean", "/ocean/surface"]
    with xr.open_dataset(path, engine="hurray", group="ocean/surface") as back:
        xr.testing.assert_identical(back.load(), field())
        assert back["sst"].encoding["chunks"] == (1, 3, 4)
    # the group sees the root's coordinates as a node of the tree
    xr.testing.assert_identical(after["ocean/surface"]["sst"].coords["y"], ROOT["y"])


def test_a_tree_written_as_a_group(tmp_path):
    path = tmp_path / "f.hurray"
    xh.to_hurray(ROOT, path)
    tree = xr.DataTree.from_dict({"/": STATIC, "/daily": field()})
    xh.to_hurray(tree, path, mode="a", group="run1", encoding={"/daily": ENCODING})
    xh.to_hurray(tree, path, mode="a", group="run2")
    back = read(path, "hurray")
    for run in ("run1", "run2"):
        xr.testing.assert_identical(back[run].to_dataset(inherit=False), STATIC)
        xr.testing.assert_identical(back[f"{run}/daily"].to_dataset(inherit=False), field())
    assert back["run1/daily"]["sst"].encoding["chunks"] == (1, 3, 4)


def test_a_dask_backed_group_written_later(tmp_path):
    path = tmp_path / "f.hurray"
    xh.to_hurray(ROOT, path)
    lazy = field().chunk({"time": 1})
    pending = xh.to_hurray(lazy, path, group="g", mode="a", compute=False, encoding=ENCODING)
    assert sorted(read(path, "hurray").groups) == ["/"]
    pending.compute()
    with xr.open_dataset(path, engine="hurray", group="g") as back:
        xr.testing.assert_identical(back.load(), field())


class Boom(Exception):
    pass


def _boom(block: np.ndarray) -> np.ndarray:
    raise Boom("failed while computing")


def test_a_group_write_failing_halfway_leaves_the_file_byte_identical(tmp_path):
    path = tmp_path / "f.hurray"
    xh.to_hurray(xr.DataTree.from_dict({"/": ROOT, "/g": field()}), path)
    before = digest(path)
    big = np.random.default_rng(3).standard_normal((8, 80000))  # 5 MiB: reaches the file
    failing = da.zeros((8, 6), chunks=(2, 6)).map_blocks(_boom, dtype="f8")
    bad = xr.Dataset({"big": (("k", "w"), big), "late": (("k", "y"), failing)})
    for mode in ("a", "w"):
        with pytest.raises(Boom):
            xh.to_hurray(bad, path, mode=mode, group="g", encoding={"big": {"codecs": None}})
        assert digest(path) == before


ERRORS = [
    ({"mode": "w-", "group": "g"}, FileExistsError, "holds the group '/g'"),
    ({"mode": "r+", "group": "nope"}, HurrayValueError, "'/nope' is not in the file"),
    ({"mode": "a", "group": "new", "append_dim": "time"}, HurrayValueError, "not in the file"),
    ({"group": "a//b"}, HurrayValueError, "part of the group path 'a//b' must not be empty"),
    # names a path reads as the group itself or its parent, refused as Zarr refuses them
    ({"group": "."}, HurrayValueError, "group path '.' is '.', periods alone"),
    ({"group": ".."}, HurrayValueError, "periods alone"),
    ({"group": "a/../b"}, HurrayValueError, "group path 'a/../b' is '..', periods alone"),
    ({"group": "g/...", "mode": "a"}, HurrayValueError, "periods alone"),
    ({"group": 3}, TypeError, "group must be a string"),
    ({"mode": "a", "group": "land"}, HurrayValueError, "unique"),  # a variable's name
    ({"mode": "w", "group": "land/x"}, HurrayValueError, "unique"),
    ({"mode": "w", "group": "g", "overviews": 1}, HurrayValueError, "not take group="),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), ERRORS)
def test_wrong_use_leaves_the_file_byte_identical(tmp_path, kwargs, error, match):
    path = tmp_path / "f.hurray"
    xh.to_hurray(xr.DataTree.from_dict({"/": ROOT, "/g": field()}), path)
    before = digest(path)
    with pytest.raises(error, match=match):
        xh.to_hurray(STATIC, path, **kwargs)
    assert digest(path) == before


def test_r_plus_into_a_missing_file_finds_no_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        xh.to_hurray(STATIC, tmp_path / "none.hurray", mode="r+", group="g")
    assert not (tmp_path / "none.hurray").exists()


def test_a_group_in_an_s3_object(s3):
    url = f"s3://{s3.bucket}/groups.hurray"
    so = s3.storage_options
    xh.to_hurray(ROOT, url, storage_options=so)
    xh.to_hurray(field(), url, storage_options=so, mode="a", group="ocean")
    xh.to_hurray(field(4, 2), url, storage_options=so, append_dim="time", group="ocean")
    with xr.open_datatree(url, engine="hurray", storage_options=so) as back:
        xr.testing.assert_identical(back["/"].to_dataset(inherit=False), ROOT)
        xr.testing.assert_identical(back["ocean"].to_dataset(inherit=False), field(0, 6))


@pytest.mark.parametrize("mode", [None, "w", "w-", "a"])
def test_a_group_whose_file_another_writer_creates_meanwhile_goes_into_it(tmp_path, mode):
    """The file is missing when the write is planned and made by another writer before
    it commits: the group goes into that file, whose groups stay as they are."""
    path = tmp_path / "f.hurray"
    lazy = field().chunk({"time": 1})
    options = {} if mode is None else {"mode": mode}
    pending = xh.to_hurray(lazy, path, group="a", compute=False, encoding=ENCODING, **options)
    xh.to_hurray(STATIC, path, group="b", **options)  # the other writer, first to commit
    pending.compute()
    back = read(path, "hurray")
    assert sorted(back.groups) == ["/", "/a", "/b"]
    xr.testing.assert_identical(back["a"].to_dataset(), field())
    xr.testing.assert_identical(back["b"].to_dataset(), STATIC)
    assert verify_file(path) == []


def test_the_same_group_created_meanwhile_is_refused_by_w_minus(tmp_path):
    path = tmp_path / "f.hurray"
    pending = xh.to_hurray(field().chunk({"time": 1}), path, group="a", mode="w-", compute=False)
    xh.to_hurray(STATIC, path, group="a", mode="w-")
    with pytest.raises(FileExistsError, match="holds the group '/a'"):
        pending.compute()
    xr.testing.assert_identical(read(path, "hurray")["a"].to_dataset(), STATIC)


def test_a_file_created_meanwhile_is_named_by_its_path_not_the_temporary_one(tmp_path):
    path = tmp_path / "f.hurray"
    pending = xh.to_hurray(field().chunk({"time": 1}), path, mode="w-", compute=False)
    xh.to_hurray(STATIC, path)
    with pytest.raises(FileExistsError, match="another writer created a file there") as caught:
        pending.compute()
    assert ".tmp" not in str(caught.value) and str(path) in str(caught.value)
    assert list(tmp_path.iterdir()) == [path]  # the temporary file is gone
    with xr.open_dataset(path, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), STATIC)


def _write_group_at(path: str, group: str, start: float) -> None:
    """Write a group of its own to ``path`` at the instant ``start`` (a process's job)."""
    ds = field(name=group)
    time.sleep(max(start - time.time(), 0))
    xh.to_hurray(ds, path, group=group)


@pytest.mark.slow
def test_two_processes_creating_one_file_each_with_its_own_group_keep_both(tmp_path):
    """The race as it happens: two processes, default mode, the file missing for both."""
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_write_group_at, [str(tmp_path / "warm.hurray")] * 2, "xy", [0, 0]))
        for trial in range(8):
            path = str(tmp_path / f"race{trial}.hurray")
            start = time.time() + 0.3
            list(pool.map(_write_group_at, [path] * 2, ["a", "b"], [start] * 2))
            back = read(path, "hurray")
            assert sorted(back.groups) == ["/", "/a", "/b"], trial
            for group in "ab":
                xr.testing.assert_identical(back[group].to_dataset(), field(name=group))


def test_names_of_periods_alone_are_refused_for_the_groups_of_a_tree(tmp_path):
    data = xr.DataTree.from_dict({"/": ROOT, "/ok": STATIC, "/ok/..": STATIC})
    with pytest.raises(HurrayValueError, match=r"a group name is '\.\.', periods alone"):
        xh.to_hurray(data, tmp_path / "f.hurray")
    assert not any(tmp_path.iterdir())


def test_a_variable_may_have_a_name_of_periods_alone(tmp_path):
    """It names no group: written and read back (the references leave it out)."""
    ds = xr.Dataset({"..": ("k", np.arange(3.0))})
    xh.to_hurray(ds, tmp_path / "f.hurray")
    with xr.open_dataset(tmp_path / "f.hurray", engine="hurray") as back:
        xr.testing.assert_identical(back.load(), ds)
