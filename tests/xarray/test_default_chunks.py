"""The chunks a write chooses when none are given: map tiles one step deep for a
variable with two spatial dimensions, so that a map of one step, a tile of it and the
series at one pixel each take a round of requests (docs/choosing-a-layout.md,
"Default chunks"); chunks given are kept exactly."""

from __future__ import annotations

import math
import sys
import time

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr
from scripts import ROOT

import xarray_hurray as xh
from xarray_hurray.container import open_reader
from xarray_hurray.container.select import OuterSelection
from xarray_hurray.xarray.encoding import (
    MIN_TILE_CHUNK_BYTES,
    TILE,
    auto_chunks,
    default_chunks,
    tile_side,
)

sys.path.insert(0, str(ROOT / "benchmarks"))
from latency_server import LatencyServer
from round_trips import waves


@pytest.mark.parametrize(
    ("shape", "itemsize", "axes", "chunks"),
    [
        # the cube of the issue: 48 x 64 x 64 before, a map of one step read it whole
        ((48, 2048, 2048), 4, (1, 2), (1, 256, 256)),
        ((48, 4, 2048, 2048), 4, (2, 3), (1, 1, 256, 256)),
        ((8760, 721, 1440), 4, (1, 2), (1, 256, 256)),
        ((2048, 2048, 48), 8, (0, 1), (256, 256, 1)),  # spatial first, steps last
        ((3000, 3000), 1, (0, 1), (256, 256)),  # every type of up to 16 bytes: 256
        ((3000, 3000), 16, (0, 1), (256, 256)),
        ((3000, 3000), 32, (0, 1), (128, 128)),  # 256 x 256 would pass 1 MiB
        ((4, 256, 256), 4, (1, 2), (4, 256, 256)),  # fits 1 MiB: one chunk, as before
        ((10_000, 20, 20), 4, (1, 2), (32, 20, 20)),  # a small map: steps up to 64 KiB
        ((10_000, 600), 4, (0,), auto_chunks((10_000, 600), 4)),  # one spatial axis
        ((10_000, 600), 4, (), auto_chunks((10_000, 600), 4)),
    ],
)
def test_default_chunks(shape, itemsize, axes, chunks):
    assert default_chunks(shape, itemsize, axes) == chunks


def test_the_tile_shrinks_only_for_a_small_chunk_bytes():
    for itemsize in (1, 2, 4, 8, 16):
        assert tile_side(itemsize) == TILE
    # the largest power-of-two square within chunk_bytes, by brute force
    for target in (4, 100, 1024, 5000, 2**18 - 1):
        expected = max(s for s in (2**k for k in range(9)) if s * s * 4 <= target or s == 1)
        assert tile_side(4, target) == expected
    # a map tile one step deep never passes chunk_bytes; deeper only below 64 KiB
    for target in (2**12, 2**16, 2**20):
        chunks = default_chunks((500, 3000, 3000), 4, (1, 2), target)
        assert math.prod(chunks) * 4 <= max(target, MIN_TILE_CHUNK_BYTES)


def _cube(steps: int, side: int, **coords) -> xr.Dataset:
    values = np.random.default_rng(0).standard_normal((steps, side, side)).astype("f4")
    return xr.Dataset({"v": (("time", "y", "x"), values)}, coords=coords)


def test_a_cube_written_with_no_encoding_takes_tiles_one_step_deep(tmp_path):
    ds = _cube(5, 600, time=pd.date_range("2020-01-01", periods=5))
    xh.to_hurray(ds, tmp_path / "c.hurray")
    var = open_reader(tmp_path / "c.hurray").variable("v")
    assert var.chunks == (1, 256, 256)
    assert var.chunk_axes == (1, 2)  # the curve over y and x, the steps outermost
    back = xr.open_dataset(tmp_path / "c.hurray", engine="hurray")
    xr.testing.assert_identical(back.load(), ds)


def test_the_spatial_dimensions_are_found_as_pyramids_find_them(tmp_path):
    # CF coordinates name the spatial dimensions, whatever their place
    lat = xr.Variable("lat", np.linspace(-60, 60, 400), {"standard_name": "latitude"})
    lon = xr.Variable("lon", np.linspace(0, 359, 300), {"units": "degrees_east"})
    values = np.zeros((400, 3, 300), dtype="f4")
    ds = xr.Dataset({"v": (("lat", "band", "lon"), values)}, coords={"lat": lat, "lon": lon})
    xh.to_hurray(ds, tmp_path / "l.hurray")
    var = open_reader(tmp_path / "l.hurray").variable("v")
    assert (var.chunks, var.chunk_axes) == ((256, 1, 256), (0, 2))


def test_chunks_given_are_kept_exactly(tmp_path):
    ds = _cube(5, 600)
    xh.to_hurray(ds, tmp_path / "e.hurray", encoding={"v": {"chunks": (5, 100, 60)}})
    assert open_reader(tmp_path / "e.hurray").variable("v").chunks == (5, 100, 60)
    xh.to_hurray(ds.chunk({"time": 5, "y": 300, "x": 200}), tmp_path / "d.hurray")
    assert open_reader(tmp_path / "d.hurray").variable("v").chunks == (5, 300, 200)


def test_a_variable_added_to_a_file_takes_the_same_defaults(tmp_path):
    xh.to_hurray(_cube(2, 16), tmp_path / "a.hurray")
    more = _cube(5, 600).rename(v="w", time="t", y="yy", x="xx")
    xh.to_hurray(more, tmp_path / "a.hurray", mode="a")
    assert open_reader(tmp_path / "a.hurray").variable("w").chunks == (1, 256, 256)


def test_to_zarr_stores_one_step_per_shard():
    ds = _cube(5, 600)
    store = zarr.storage.MemoryStore()
    xh.to_zarr(ds, store, consolidated=False)
    array = zarr.open_array(store, path="v", mode="r")
    assert (array.shards, array.chunks) == ((1, 768, 768), (1, 256, 256))
    np.testing.assert_array_equal(array[...], ds.v.values)


def test_dask_shards_keep_their_chunks_and_take_tiles_inside():
    ds = _cube(4, 512).chunk({"time": 2, "y": 512, "x": 512})
    store = zarr.storage.MemoryStore()
    xh.to_zarr(ds, store, consolidated=False)
    array = zarr.open_array(store, path="v", mode="r")
    assert (array.shards, array.chunks) == ((2, 512, 512), (1, 256, 256))
    assert isinstance(ds.v.data, da.Array)


LATENCY = 0.2
"""Seconds before each answer: waves 100 ms apart are told apart on a loaded machine."""


@pytest.mark.slow
def test_a_map_a_tile_and_a_pixel_drill_each_take_a_round_of_requests(tmp_path):
    steps, side = 8, 1024
    ds = _cube(steps, side, time=pd.date_range("2020-01-01", periods=steps))
    xh.to_hurray(ds, tmp_path / "c.hurray")
    reader = open_reader(tmp_path / "c.hurray")
    var = reader.variable("v")

    def own_bytes(key: tuple) -> int:
        ids = OuterSelection.build(key, var.shape, var.chunks).chunk_ids()
        return int(reader.entries("v", ids)["size"].sum())

    reads = {
        "map step": ({"time": 3}, (3, slice(None), slice(None))),
        "tile": ({"time": 3, "y": slice(512, 768), "x": slice(256, 512)}, None),
        "pixel drill": ({"y": 600, "x": 333}, (slice(None), 600, 333)),
    }
    with LatencyServer(tmp_path, latency=LATENCY) as server:
        for name, (isel, key) in reads.items():
            server.reset()
            start = time.perf_counter()
            opened = xr.open_dataset(server.url("c.hurray"), engine="hurray")
            after_open = time.perf_counter()
            got = opened.v.isel(isel).values
            time.sleep(LATENCY)
            log = server.log
            np.testing.assert_array_equal(got, ds.v.isel(isel).values)
            read = [entry for entry in log if entry[0] >= after_open]
            every = [entry for entry in log if entry[0] >= start]
            arrivals = [entry[0] for entry in read]
            if name == "tile":
                # from a fresh open: the open's request, then the tile's chunk
                assert waves([entry[0] for entry in every], LATENCY) <= 2, (name, every)
            else:
                assert waves(arrivals, LATENCY) <= 2, (name, read)
            if key is not None and name == "map step":
                assert sum(entry[2] for entry in read) <= 1.25 * own_bytes(key)
