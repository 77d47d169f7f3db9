"""Opens through xarray in one round trip: index coordinates and small variables placed
right after the head (``container/front.py``), read with the open's first request
and held once read, counted on a real HTTP server."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scripts import ROOT

import xarray_hurray as xh
from xarray_hurray.container import open_reader, verify_file
from xarray_hurray.container.format import HEAD_SIZE
from xarray_hurray.container.front import placement_order
from xarray_hurray.container.model import first_read_bytes
from xarray_hurray.io import open_source
from xarray_hurray.io.costs import PLAIN_HTTP
from xarray_hurray.testing import CountingSource

sys.path.insert(0, str(ROOT / "benchmarks"))
from latency_server import LatencyServer

sys.path.insert(0, str(Path(__file__).parents[1] / "container"))
from test_hurray_golden import GOLDEN, golden_tree

LATENCY = 0.05
GOLDEN_FRONT = Path(__file__).parents[1] / "data" / "hurray_1_3_front.hurray"


def cube(steps: int = 6, side: int = 64) -> xr.Dataset:
    """A (time, y, x) field whose data variable comes before its coordinates, with a
    bounds variable and a small variable."""
    values = np.arange(steps * side * side, dtype="f4").reshape(steps, side, side) % 251
    ds = xr.Dataset(
        {"v": (("time", "y", "x"), values)},
        coords={
            "time": pd.date_range("2001-01-01", periods=steps, freq="D"),
            "y": np.linspace(50.0, 40.0, side),
            "x": np.linspace(-5.0, 5.0, side),
        },
    )
    ds["x_bnds"] = ("x", "nv"), np.stack([ds.x.values - 0.1, ds.x.values + 0.1], axis=1)
    ds.x.attrs["bounds"] = "x_bnds"
    ds["crs"] = (), np.int32(0), {"grid_mapping_name": "latitude_longitude"}
    return ds


def write_golden_front(path: Path) -> None:
    """The golden file of the front placement: :func:`cube` in 32 x 32 chunks."""
    xh.to_hurray(cube(), path, codecs=None, encoding={"v": {"chunks": (1, 32, 32)}})


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LatencyServer]:
    with LatencyServer(tmp_path, latency=LATENCY) as served:
        yield served


def rounds(server: LatencyServer, step: Callable[[], Any]) -> tuple[int, int, Any]:
    """Requests and waves of requests (round trips) the server saw during ``step``."""
    server.reset()
    out = step()
    time.sleep(LATENCY)  # a late request would still be counted
    return server.requests, server.round_trips, out


def test_a_new_file_places_coordinates_bounds_and_small_variables_first(tmp_path):
    path = tmp_path / "c.hurray"
    write_golden_front(path)
    reader = open_reader(path)
    order = [p for p, _ in placement_order(reader.metadata)]
    assert reader.metadata.all_variables()[0][0] == "v"
    assert order == ["time", "y", "x", "x_bnds", "crs", "v"]  # crs: small, after them
    ends = {p: int((reader.index(p)["offset"] + reader.index(p)["size"]).max()) for p in order}
    first_v = int(reader.index("v")["offset"].min())
    assert max(ends[p] for p in order[:-1]) <= min(first_v, HEAD_SIZE)


def test_the_front_golden_file_is_what_the_writer_writes_and_reads_exactly(tmp_path):
    write_golden_front(tmp_path / "new.hurray")
    assert (tmp_path / "new.hurray").read_bytes() == GOLDEN_FRONT.read_bytes()
    with xr.open_dataset(GOLDEN_FRONT, engine="hurray") as ds:
        xr.testing.assert_identical(ds.load(), cube())


def test_the_golden_file_reads_exactly_over_http(tmp_path, server):
    (tmp_path / GOLDEN.name).write_bytes(GOLDEN.read_bytes())
    with xr.open_datatree(server.url(GOLDEN.name), engine="hurray") as tree:
        xr.testing.assert_identical(tree.load(), golden_tree())


OPENS: dict[str, Callable[[Any], Any]] = {
    "open_dataset": lambda target: xr.open_dataset(target, engine="hurray"),
    "open_datatree": lambda target: xr.open_datatree(target, engine="hurray"),
    "open_groups": lambda target: xr.open_groups(target, engine="hurray"),
}


def tree() -> xr.DataTree:
    """Three groups, each a :func:`cube` of its own, on dimensions of its own."""
    a = cube(3, 32).rename(time="ta", y="ya", x="xa")
    b = cube(2, 16).rename(time="tb", y="yb", x="xb", nv="nb")
    return xr.DataTree.from_dict({"/": cube(), "/a": a, "/a/b": b})


@pytest.mark.parametrize("how", list(OPENS))
def test_an_open_through_xarray_is_one_request_over_http(tmp_path, server, how):
    xh.to_hurray(tree(), tmp_path / "t.hurray")
    requests, trips, _ = rounds(server, lambda: OPENS[how](server.url("t.hurray")))
    assert (requests, trips) == (1, 1)


@pytest.mark.parametrize("how", list(OPENS))
def test_an_open_through_xarray_is_one_read_of_a_local_file(tmp_path, how):
    xh.to_hurray(tree(), tmp_path / "t.hurray")
    source = CountingSource(open_source(tmp_path / "t.hurray"))
    opened = OPENS[how](source)
    assert source.requests == [(0, HEAD_SIZE)]
    # and the coordinates xarray holds are the file's
    first = opened["/"] if isinstance(opened, dict) else opened
    np.testing.assert_array_equal(first["x"].values, cube().x.values)


def test_coordinates_read_again_make_no_request(tmp_path, server):
    xh.to_hurray(cube(), tmp_path / "c.hurray")
    ds = xr.open_dataset(server.url("c.hurray"), engine="hurray")
    requests, _, values = rounds(
        server, lambda: [ds.x.values, ds.time.values, ds.y.values, ds.x_bnds.values]
    )
    assert requests == 0
    np.testing.assert_array_equal(values[3], cube().x_bnds.values)
    reader = open_reader(server.url("c.hurray"))
    server.reset()
    for _ in range(3):
        np.testing.assert_array_equal(reader.read("x"), cube().x.values)
        np.testing.assert_array_equal(reader.read("x", (slice(3, 9),)), cube().x.values[3:9])
    assert server.requests == 0


def test_the_pages_of_coordinates_go_in_the_head_when_not_all_pages_fit(tmp_path, server):
    # 24,576 chunks: 480 kB of pages, past the head; the coordinates' go in it
    ds = cube(24, 256)
    xh.to_hurray(ds, tmp_path / "c.hurray", encoding={"v": {"chunks": (1, 8, 8)}})
    reader = open_reader(tmp_path / "c.hurray")
    for path in ("time", "y", "x", "x_bnds"):  # crs, all fill, stores no chunk
        offset = int(reader.page_table(path)["offset"][0])
        assert 0 < offset < HEAD_SIZE, path
    assert int(reader.page_table("v")["offset"].min()) > int(reader.index("v")["offset"].max())
    assert verify_file(tmp_path / "c.hurray") == []
    requests, trips, opened = rounds(
        server, lambda: xr.open_dataset(server.url("c.hurray"), engine="hurray")
    )
    assert (requests, trips) == (1, 1)
    xr.testing.assert_identical(opened.load(), ds)


def test_coordinates_too_large_for_the_first_read_come_in_one_wave(tmp_path, server):
    # two coordinates of 800 kB that do not compress: past the first read
    rng = np.random.default_rng(1)
    side = 100_000
    ds = xr.Dataset(
        {"v": (("y", "x"), np.zeros((4, side), "f4")), "w": (("z", "x"), np.ones((2, side)))},
        coords={"x": rng.random(side), "y": rng.random(4), "z": rng.random(2)},
    )
    ds = ds.assign_coords(x2=("x", rng.random(side))).swap_dims(x="x2").rename(x="xx")
    ds = ds.assign_coords(t=("t", rng.random(side)))
    xh.to_hurray(ds, tmp_path / "big.hurray")
    assert 8 * side > first_read_bytes(PLAIN_HTTP.merge_policy())
    requests, trips, opened = rounds(
        server, lambda: xr.open_dataset(server.url("big.hurray"), engine="hurray")
    )
    assert (requests, trips) == (2, 2)  # the first read, then every coordinate at once
    xr.testing.assert_identical(opened.load(), ds)


def pyramid(side: int = 2048) -> xr.Dataset:
    y, x = np.mgrid[0:side, 0:side]
    values = ((y * 7 + x * 3) % 1000).astype("f4")
    return xr.Dataset(
        {"v": (("y", "x"), values)},
        coords={"y": np.arange(side) + 0.5, "x": np.arange(side) + 0.5},
    )


def test_a_tile_of_every_level_from_a_fresh_open_takes_two_round_trips(tmp_path, server):
    xh.to_hurray(
        pyramid(),
        tmp_path / "p.hurray",
        overviews=[2, 4, 8, 16, 32],
        encoding={"v": {"chunks": (256, 256)}},
    )
    with xr.open_datatree(tmp_path / "p.hurray", engine="hurray") as local:
        levels = list(local.children)
        truth = {level: local[level].ds.v.values for level in levels}
    assert len(levels) == 6
    for level in levels:

        def tile(level: str = level) -> np.ndarray:
            opened = xr.open_datatree(server.url("p.hurray"), engine="hurray")
            v = opened[level].ds.v
            y0, x0 = v.shape[0] // 2 - 128 if v.shape[0] > 256 else 0, 0
            return v.isel(y=slice(y0, y0 + 256), x=slice(x0, x0 + 256)).values, y0

        requests, trips, (values, y0) = rounds(server, tile)
        assert trips == 2 and requests <= 3, (level, requests, trips)
        np.testing.assert_array_equal(values, truth[level][y0 : y0 + 256, :256])


if __name__ == "__main__":  # written once, by the format 1.3 writer
    write_golden_front(GOLDEN_FRONT)
