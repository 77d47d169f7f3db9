"""xarray_hurray.to_zarr: Hilbert-placed shards of hurray chunks, read by plain zarr."""

from __future__ import annotations

import warnings

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr
from skilling_reference import coords_to_hilbert
from zarr_pipelines import PIPELINES, pipeline

import xarray_hurray as xh
from xarray_hurray.xarray.zarr_write import largest_divisor_at_most, shard_and_chunk_shapes

SMALL = {"chunk_bytes": 4 * 16 * 16, "shard_bytes": 4 * 64 * 64}
"""float32 inner chunks of 16 x 16 in shards of 4 x 4 of them."""

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
AUTO = {"layout": "auto", "endian": "little"}


def dataset(values, **coords) -> xr.Dataset:
    ny, nx = values.shape[-2:]
    return xr.Dataset(
        {"v": (("y", "x"), values), "label": ("x", np.array([f"x{i}" for i in range(nx)]))},
        coords={"y": np.arange(ny), "x": np.arange(nx), **coords},
    )


def codecs(store, name: str) -> list[dict]:
    return zarr.open_array(store, path=name, mode="r").metadata.to_dict()["codecs"]


@pytest.mark.parametrize(
    ("shape", "itemsize", "given", "expected"),
    [
        # 1 MiB float32 inner chunks (512 x 512) in 64 MiB shards (8 x 8 of them).
        ((8192, 8192), 4, {}, ((4096, 4096), (512, 512))),
        # The whole array fits one shard: the shard is the chunk grid.
        ((1000, 700), 4, {}, ((1024, 1024), (512, 512))),
        # Axes grow in turn; an axis of length 10 is held by one chunk (so a 16-long
        # side is cut to 10: the chunk holds less than the target).
        ((10, 4096, 4096), 8, {}, ((10, 1024, 512), (10, 128, 64))),
        # Given shards (dask chunks): inner sides are the largest divisors of the
        # shard sides no longer than the byte target asks for.
        ((3000, 3000), 4, {"shards": (1000, 600)}, ((1000, 600), (500, 300))),
        ((3000, 3000), 4, {"shards": (1000, 600), "chunks": (100, 100)}, ((1000, 600), (100, 100))),
        # Given chunks: shards are made of them.
        ((8192, 8192), 4, {"chunks": (256, 256)}, ((4096, 4096), (256, 256))),
    ],
)
def test_shard_and_chunk_rule(shape, itemsize, given, expected) -> None:
    assert shard_and_chunk_shapes(shape, itemsize, **given) == expected


def test_largest_divisor_at_most() -> None:
    for n in range(1, 60):
        for limit in range(1, 70):
            brute = max(d for d in range(1, n + 1) if n % d == 0 and d <= max(limit, 1))
            assert largest_divisor_at_most(n, limit) == brute


@pytest.mark.parametrize(
    ("given", "inner"),
    [
        # the defaults: only standard codecs, a compressed chunk being decoded whole
        ({}, [BYTES, {"name": "zstd", "configuration": {"level": 0, "checksum": False}}]),
        ({"layout": "row-major"}, [BYTES, "zstd"]),
        # another element layout, asked for, takes the hurray serializer
        ({"layout": "morton"}, ["hurray", "zstd"]),
        # uncompressed chunks are read in part: a curve inside them is the default
        ({"compressors": None}, [{"name": "hurray", "configuration": AUTO}]),
    ],
)
def test_hilbert_shards_read_by_plain_zarr_and_xarray(given, inner) -> None:
    values = np.random.default_rng(0).random((100, 70)).astype("float32")
    ds = dataset(values)
    store = zarr.storage.MemoryStore()
    xh.to_zarr(ds, store, consolidated=False, **SMALL, **given)
    sharding = codecs(store, "v")
    assert [c["name"] for c in sharding] == ["sharding_indexed"]
    config = sharding[0]["configuration"]
    assert list(config["chunk_shape"]) == [16, 16]
    # each expected codec is a name, or the whole metadata where it says more
    assert len(config["codecs"]) == len(inner)
    for found, expected in zip(config["codecs"], inner, strict=True):
        assert found == expected if isinstance(expected, dict) else found["name"] == expected
    assert [c["name"] for c in config["index_codecs"]] == ["bytes", "crc32c"]
    assert zarr.open_array(store, path="v").shards == (64, 64)
    # 1-D coordinates and strings keep zarr's defaults.
    assert codecs(store, "x")[0]["name"] == "bytes"
    assert all(c["name"] != "sharding_indexed" for c in codecs(store, "label"))
    # Plain zarr (its own ShardingCodec) and xarray read the values back.
    plain = zarr.open_array(store, path="v", mode="r")
    assert type(plain.metadata.codecs[0]) is zarr.codecs.ShardingCodec
    np.testing.assert_array_equal(plain[...], values)
    back = xr.open_zarr(store, consolidated=False)
    xr.testing.assert_identical(back.load(), ds)
    np.testing.assert_array_equal(back.v[7:93, 3:61].values, values[7:93, 3:61])


@pytest.mark.parametrize("name", PIPELINES)
def test_inner_chunks_lie_along_the_hilbert_curve(name) -> None:
    ds = dataset(np.arange(64 * 64, dtype="float32").reshape(64, 64))
    store = zarr.storage.MemoryStore()
    with pipeline(name):
        ds.hurray.to_zarr(store, compressors=None, consolidated=False, **SMALL)
    shard = store._store_dict["v/c/0/0"].to_bytes()
    # The index (16 bytes per inner chunk, then a CRC32C) ends the shard.
    offsets = np.frombuffer(shard[-(16 * 16 + 4) : -4], dtype="<u8").reshape(4, 4, 2)[..., 0]
    keys = np.array([[coords_to_hilbert([i, j], 2, 2) for j in range(4)] for i in range(4)])
    assert np.array_equal(np.argsort(offsets, axis=None), np.argsort(keys, axis=None))


def test_cf_encoding_is_kept_and_caller_storage_is_respected() -> None:
    values = np.linspace(0, 10, 32 * 32).reshape(32, 32)
    ds = dataset(values)
    ds.v.encoding = {"dtype": "int16", "scale_factor": 0.01, "_FillValue": -1}
    ds["w"] = ds.v.copy()
    ds.w.encoding = {}
    store = zarr.storage.MemoryStore()
    mine = {"w": {"compressors": [zarr.codecs.GzipCodec()], "chunks": (8, 8)}}
    xh.to_zarr(ds, store, encoding=mine, consolidated=False, **SMALL)
    assert zarr.open_array(store, path="v").dtype == np.int16
    assert codecs(store, "v")[0]["name"] == "sharding_indexed"
    assert [c["name"] for c in codecs(store, "w")] == ["bytes", "gzip"]
    back = xr.open_zarr(store, consolidated=False)
    np.testing.assert_allclose(back.v.values, values, atol=0.005)
    np.testing.assert_array_equal(back.w.values, values)


def test_dask_backed_shards_are_the_dask_chunks() -> None:
    values = da.random.default_rng(2).random((96, 80), chunks=(48, 40)).astype("float32")
    ds = dataset(values)
    store = zarr.storage.MemoryStore()
    delayed = xh.to_zarr(ds, store, compute=False, consolidated=False, **SMALL)
    with dask.config.set(scheduler="threads", num_workers=2):
        delayed.compute()
    array = zarr.open_array(store, path="v", mode="r")
    assert (array.shards, array.chunks) == ((48, 40), (16, 10))
    np.testing.assert_array_equal(array[...], values.compute())


def test_dask_chunks_must_be_uniform() -> None:
    values = da.zeros((30, 30), chunks=((10, 20), (30,)), dtype="float32")
    with pytest.raises(ValueError, match=r"'v'.*not uniform.*'shards'"):
        xh.to_zarr(dataset(values), zarr.storage.MemoryStore())


def test_append_and_region_writes_pass_through(tmp_path) -> None:
    rng = np.random.default_rng(3)
    first = rng.random((4, 32, 32)).astype("float32")
    second = rng.random((3, 32, 32)).astype("float32")

    def cube(values, t0):
        return xr.Dataset(
            {"v": (("t", "y", "x"), values)}, coords={"t": np.arange(t0, t0 + len(values))}
        )

    path = str(tmp_path / "cube.zarr")
    xh.to_zarr(cube(first, 0), path, **SMALL)
    xh.to_zarr(cube(second, 4), path, append_dim="t", **SMALL)
    # A new variable added to the existing store gets Hurray shards too.
    both = np.concatenate([first, second])
    xh.to_zarr(cube(both, 0).rename(v="u"), path, mode="a", **SMALL)
    assert codecs(path, "u")[0]["name"] == "sharding_indexed"
    patch = np.full((2, 32, 32), -1, dtype="float32")
    xh.to_zarr(cube(patch, 1).drop_vars("t"), path, region={"t": slice(1, 3)}, mode="r+")
    expected = both.copy()
    expected[1:3] = -1
    back = xr.open_zarr(path)
    np.testing.assert_array_equal(back.v.values, expected)
    np.testing.assert_array_equal(back.u.values, both)
    np.testing.assert_array_equal(back.t.values, np.arange(7))


def test_storage_options_reach_an_s3_store(s3) -> None:
    values = np.random.default_rng(4).random((40, 40)).astype("float32")
    url = f"s3://{s3.bucket}/data.zarr"
    xh.to_zarr(dataset(values), url, storage_options=s3.storage_options, **SMALL)
    back = xr.open_zarr(url, storage_options=s3.storage_options)
    np.testing.assert_array_equal(back.v.values, values)
    # 3 x 3 inner chunks of 16 x 16 make the one shard.
    assert back.v.encoding["shards"] == (48, 48)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"zarr_format": 2}, "zarr_format=3"),
        ({"encoding": {"v": {"shards": (20, 20), "chunks": (16, 16)}}}, "multiple"),
    ],
)
def test_refusals(kwargs, message) -> None:
    ds = dataset(np.zeros((40, 40), dtype="float32"))
    with pytest.raises(ValueError, match=message):
        xh.to_zarr(ds, zarr.storage.MemoryStore(), **kwargs)


def test_times_with_a_time_zone_are_refused_saying_what_to_do() -> None:
    ds = xr.Dataset(coords={"t": pd.date_range("2024-01-01", periods=3, tz="UTC")})
    with pytest.raises(TypeError, match=r"time zone .*tz_convert"):
        xh.to_zarr(ds, zarr.storage.MemoryStore())


def ordinary_tree() -> xr.DataTree:
    """A tree that is no pyramid: variables at the root, a group, a group below it."""
    rng = np.random.default_rng(6)
    return xr.DataTree.from_dict(
        {
            "/": xr.Dataset(
                {"top": (("y", "x"), rng.random((40, 40)).astype("float32"))},
                coords={"y": np.arange(40), "x": np.arange(40)},
                attrs={"title": "tree"},
            ),
            "/a": xr.Dataset({"v": (("y", "x"), rng.random((40, 40)).astype("float32"))}),
            "/a/b": xr.Dataset(
                {"w": (("t", "y", "x"), rng.random((2, 40, 40))), "n": ("t", [3, 4])}
            ),
        }
    )


@pytest.mark.parametrize("how", ["function", "accessor"])
def test_a_tree_is_written_whole(tmp_path, how) -> None:
    tree, store = ordinary_tree(), tmp_path / "tree.zarr"
    if how == "function":
        xh.to_zarr(tree, store, **SMALL)
    else:
        tree.hurray.to_zarr(store, **SMALL)
    with xr.open_datatree(store, engine="zarr") as back:
        xr.testing.assert_identical(back.load(), tree)
    for name in ("top", "a/v", "a/b/w"):
        assert codecs(store, name)[0]["name"] == "sharding_indexed"


def test_a_tree_gets_new_variables_in_its_groups(tmp_path) -> None:
    tree, store = ordinary_tree(), tmp_path / "tree.zarr"
    xh.to_zarr(tree, store, **SMALL)
    more = tree.copy()
    more["a"]["u"] = -more["a"]["v"]
    xh.to_zarr(more, store, mode="a", **SMALL)
    assert codecs(store, "a/u")[0]["name"] == "sharding_indexed"
    with xr.open_datatree(store, engine="zarr") as back:
        xr.testing.assert_identical(back.load(), more)


@pytest.mark.parametrize("what", ["dataset", "tree"])
def test_the_defaults_consolidate_without_a_warning(tmp_path, what) -> None:
    """What ``to_zarr`` users expect: consolidated metadata, which ``open_zarr`` finds
    without warning that it found none, and no warning on writing it."""
    # (no text: zarr warns that Zarr v3 has no specification of its data type yet)
    plain = dataset(np.zeros((40, 40), dtype="float32")).drop_vars("label")
    data = plain if what == "dataset" else ordinary_tree()
    store = tmp_path / "s.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xh.to_zarr(data, store, **SMALL)
        opened = (
            xr.open_zarr(store) if what == "dataset" else xr.open_datatree(store, engine="zarr")
        )
        with opened:
            xr.testing.assert_identical(opened.load(), data)
    assert "consolidated_metadata" in zarr.open_group(store, mode="r").metadata.to_dict()
