"""``read_async`` is ``read`` awaited: the same selections give the same values with the
same requests, from a local file, a real HTTP server and S3 (moto's server), on a pan
too (its readahead), and a file changed under the reader is told the same way."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scripts import ROOT

import xarray_hurray as xh
from xarray_hurray.container import ContainerReader
from xarray_hurray.io import FsspecSource, HttpSource, LocalFileSource, MergePolicy
from xarray_hurray.io.costs import PLAIN_HTTP
from xarray_hurray.testing import CountingSource

sys.path.insert(0, str(ROOT / "benchmarks"))
from latency_server import LatencyServer

SIDE, CHUNK = 256, 32


@pytest.fixture(scope="module")
def ds() -> xr.Dataset:
    rng = np.random.default_rng(5)
    field = rng.standard_normal((SIDE, SIDE)).astype("f4")
    sparse = np.full((SIDE, SIDE), np.nan, dtype="f4")
    sparse[40:90, 100:230] = field[40:90, 100:230]  # most chunks left out: missing
    return xr.Dataset(
        {"v": (("y", "x"), field), "m": (("y", "x"), sparse)},
        coords={"y": np.arange(SIDE) * 2.0, "x": np.arange(SIDE) * 0.5},
    )


@pytest.fixture(scope="module")
def path(ds, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("parity") / "f.hurray"
    chunks = {"chunks": (CHUNK, CHUNK)}
    xh.to_hurray(ds, path, encoding={"v": chunks, "m": chunks}, chunk_order="hilbert")
    return path


# each a read of its own path: a whole chunk, boxes, strides and arrays, missing
# chunks, and the coordinates held once read whole
READS: list[tuple[str, tuple[object, ...] | None]] = [
    ("v", (slice(32, 64), slice(64, 96))),
    ("v", (slice(37, 141), slice(90, 200))),
    ("v", (slice(5, 250, 7), np.array([3, 200, 17, 17]))),
    ("v", (17, slice(None))),
    ("m", None),
    ("m", (slice(0, 32), slice(0, 32))),
    ("m", (slice(30, 100), slice(90, 240, 3))),
    ("y", (np.array([5, 1]),)),
    ("x", None),
    ("x", (slice(10, 20),)),
    ("v", None),
]


def _expected(ds: xr.Dataset, name: str, key: tuple[object, ...] | None) -> np.ndarray:
    values = ds[name].values
    if key is None:
        return values
    index = tuple(
        k if isinstance(k, int) else np.arange(n)[k] for k, n in zip(key, values.shape, strict=True)
    )
    arrays = [np.atleast_1d(k) for k in index]
    picked = values[np.ix_(*arrays)]
    return picked.reshape(
        [len(a) for a, k in zip(arrays, index, strict=True) if not isinstance(k, int)]
    )


def _both(
    make: Callable[[], ContainerReader],
) -> Iterator[tuple[str, list[np.ndarray], CountingSource]]:
    """The reads of :data:`READS` through ``read`` and through ``read_async`` (awaited one
    after another, as a client does), each by a reader of its own: the values and the
    source that counted the requests."""
    blocking = make()
    yield "read", [blocking.read(name, key) for name, key in READS], blocking.source

    awaited = make()

    async def reads() -> list[np.ndarray]:
        return [await awaited.read_async(name, key) for name, key in READS]

    yield "read_async", asyncio.run(reads()), awaited.source


def _assert_parity(ds: xr.Dataset, make: Callable[[], ContainerReader]) -> None:
    found = {}
    for how, values, source in _both(make):
        for (name, key), got in zip(READS, values, strict=True):
            np.testing.assert_array_equal(got, _expected(ds, name, key), err_msg=f"{how} {name}")
        found[how] = (sorted(source.requests), len(source.batches))
    assert found["read"] == found["read_async"]


def test_local_reads_and_awaited_reads_are_the_same(ds, path):
    _assert_parity(ds, lambda: ContainerReader(CountingSource(LocalFileSource(path))))


def test_http_reads_and_awaited_reads_are_the_same(ds, path):
    with LatencyServer(path.parent, latency=0.01) as server:
        url = server.url(path.name)
        _assert_parity(ds, lambda: ContainerReader(CountingSource(HttpSource(url))))


def test_s3_reads_and_awaited_reads_are_the_same(ds, path, s3):
    url = f"s3://{s3.bucket}/f.hurray"
    FsspecSource(url, s3.storage_options).upload(path)
    _assert_parity(
        ds, lambda: ContainerReader(CountingSource(FsspecSource(url, s3.storage_options)))
    )


@pytest.mark.parametrize("whole", [False, True], ids=["two chunks a tile", "one whole chunk"])
def test_an_awaited_pan_reads_ahead_as_a_blocking_one(ds, path, whole):
    y0 = 3 * CHUNK if whole else 3 * CHUNK + CHUNK // 2
    keys = [(slice(y0, y0 + CHUNK), slice(k * CHUNK, (k + 1) * CHUNK)) for k in range(8)]
    found = {}
    with LatencyServer(path.parent, latency=0.01) as server:
        url = server.url(path.name)
        for policy in [PLAIN_HTTP.merge_policy(), MergePolicy()]:
            blocking = ContainerReader(CountingSource(HttpSource(url)), policy)
            tiles = [blocking.read("v", key) for key in keys]
            awaited = ContainerReader(CountingSource(HttpSource(url)), policy)

            async def pan(reader: ContainerReader = awaited) -> list[np.ndarray]:
                return [await reader.read_async("v", key) for key in keys]

            for tile, again, key in zip(tiles, asyncio.run(pan()), keys, strict=True):
                np.testing.assert_array_equal(tile, ds["v"].values[key])
                np.testing.assert_array_equal(again, tile)
            for how, reader in [("read", blocking), ("read_async", awaited)]:
                source = reader.source
                found[how, policy.in_flight] = (source.requests, source.batches)
    ahead, plain = PLAIN_HTTP.merge_policy().in_flight, None
    assert found["read", ahead] == found["read_async", ahead]
    assert found["read", plain] == found["read_async", plain]
    # after the open: a wave per tile without a cost model, the first two and the rest
    # of the pan ahead of the second with one
    assert len(found["read", plain][1]) == 1 + len(keys)
    assert len(found["read", ahead][1]) <= 3


@pytest.mark.parametrize("how", ["read", "read_async"])
def test_a_file_rewritten_in_place_is_told_by_both(ds, path, tmp_path, how):
    copy = tmp_path / "f.hurray"
    copy.write_bytes(path.read_bytes())
    reader = xh.open_reader(copy)
    other = tmp_path / "other.hurray"
    shifted = ds.assign(v=ds["v"] + 1)
    xh.to_hurray(shifted, other, encoding={"v": {"chunks": (CHUNK, CHUNK)}})
    with open(copy, "r+b") as file:  # the same inode, other bytes: another generation
        file.write(other.read_bytes())
        file.truncate()
    os.utime(copy)
    key = (slice(40, 100), slice(0, 70))
    with pytest.raises(xh.HurrayChangedError, match="header"):
        if how == "read":
            reader.read("v", key)
        else:
            asyncio.run(reader.read_async("v", key))
