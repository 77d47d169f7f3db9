"""Reading ahead on a pan (``container/readahead.py``): the boxes predicted against
brute force, and a pan over a real HTTP server in fewer round trips, values equal
to numpy's."""

from __future__ import annotations

import pickle
import sys
import time

import dask
import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st
from scripts import ROOT

import xarray_hurray as xh
from xarray_hurray.container import open_reader
from xarray_hurray.container.readahead import Pans, ahead_bytes, box_of, next_boxes
from xarray_hurray.io import MergePolicy
from xarray_hurray.io.costs import PLAIN_HTTP

sys.path.insert(0, str(ROOT / "benchmarks"))
from latency_server import LatencyServer

LATENCY = 0.05


def test_a_box_is_unit_step_slices_of_positive_length_only():
    assert box_of((slice(2, 5), slice(None)), (10, 4)) == ((2, 5), (0, 4))
    assert box_of((slice(-3, None), slice(0, 4)), (10, 4)) == ((7, 10), (0, 4))
    for key in [(slice(0, 4, 2), slice(None)), (3, slice(None)), (slice(5, 5), slice(None))]:
        assert box_of(key, (10, 4)) is None
    assert box_of(None, (10, 4)) is None
    assert box_of((np.array([1, 2]), slice(None)), (10, 4)) is None


@given(
    shape=st.tuples(st.integers(1, 40), st.integers(1, 40)),
    start=st.tuples(st.integers(0, 39), st.integers(0, 39)),
    size=st.tuples(st.integers(1, 12), st.integers(1, 12)),
    axis=st.integers(0, 1),
    sign=st.sampled_from([1, -1]),
    count=st.integers(1, 6),
)
def test_next_boxes_continue_a_step_up_to_the_edge(shape, start, size, axis, sign, count):
    last = tuple((s, s + n) for s, n in zip(start, size, strict=True))
    box = list(last)
    shift = sign * size[axis]
    box[axis] = (last[axis][0] + shift, last[axis][1] + shift)
    found = next_boxes(last, tuple(box), shape, count)
    # brute force: each step moved once more, clipped, until nothing is left
    expected = []
    for step in range(2, count + 2):
        lo = max(last[axis][0] + step * shift, 0)
        hi = min(last[axis][1] + step * shift, shape[axis])
        if hi <= lo:
            break
        moved = list(last)
        moved[axis] = (lo, hi)
        expected.append(tuple(moved))
    assert found == expected


def test_reads_that_are_no_step_of_a_pan_predict_nothing():
    box = ((0, 4), (4, 8))
    assert next_boxes(None, box, (16, 16), 3) == []
    assert next_boxes(((0, 4), (0, 4)), ((4, 8), (4, 8)), (16, 16), 3) == []  # diagonal
    assert next_boxes(((0, 4), (1, 5)), box, (16, 16), 3) == []  # overlapping
    assert next_boxes(((0, 4), (0, 3)), box, (16, 16), 3) == []  # another size
    assert next_boxes(box, box, (16, 16), 3) == []  # the same box


def test_the_budget_is_what_the_link_moves_in_one_latency():
    assert ahead_bytes(PLAIN_HTTP.merge_policy()) == int(PLAIN_HTTP.latency * PLAIN_HTTP.bandwidth)
    assert ahead_bytes(MergePolicy()) == 0  # no cost model stated: no readahead


@pytest.fixture
def field(tmp_path):
    side, tile = 1024, 64
    rng = np.random.default_rng(3)
    values = rng.standard_normal((side, side)).astype("f4")
    xh.to_hurray(
        xr.Dataset({"v": (("y", "x"), values)}),
        tmp_path / "f.hurray",
        encoding={"v": {"chunks": (tile, tile)}},
    )
    return tmp_path, values, tile


def _pan(reader, tile, y0, steps, backwards=False):
    order = range(steps - 1, -1, -1) if backwards else range(steps)
    return [
        (k, reader.read("v", (slice(y0, y0 + tile), slice(k * tile, (k + 1) * tile))))
        for k in order
    ]


@pytest.mark.parametrize("backwards", [False, True])
@pytest.mark.parametrize("whole", [False, True], ids=["two chunks a tile", "one whole chunk"])
def test_a_pan_over_http_reads_ahead_in_fewer_round_trips(field, backwards, whole):
    root, values, tile = field
    # a tile over two chunks, or exactly one (the reads of a map client on its tiles)
    y0 = 5 * tile if whole else 5 * tile + tile // 2
    found = {}
    with LatencyServer(root, latency=LATENCY) as server:
        for name, policy in [("ahead", PLAIN_HTTP.merge_policy()), ("plain", MergePolicy())]:
            reader = open_reader(server.url("f.hurray"), merge_policy=policy)
            server.reset()
            tiles = _pan(reader, tile, y0, 16, backwards)
            time.sleep(LATENCY)
            found[name] = (server.requests, server.round_trips)
            for k, got in tiles:
                np.testing.assert_array_equal(
                    got, values[y0 : y0 + tile, k * tile : (k + 1) * tile]
                )
    assert found["plain"][1] == 16  # a round trip per tile
    # the first tile, the second with the rest of the pan ahead of it
    assert found["ahead"][1] <= 3, found
    # the chunks ahead merged with the read's own where the policy merges them
    assert found["ahead"][0] <= found["plain"][0] / 2, found


def test_overlapping_reads_are_no_pan():
    pans = Pans()
    with pans.reading() as alone:
        assert alone
        assert pans.step("v", ((0, 4),)) is None
        with pans.reading() as second:  # a read beside it (another dask task)
            assert not second
    with pans.reading() as alone:
        # the spell of overlapping reads is over: what came before it is forgotten
        assert alone
        assert pans.step("v", ((4, 8),)) is None
    with pans.reading() as alone:
        assert pans.step("v", ((8, 12),)) == ((4, 8),)
    assert pickle.loads(pickle.dumps(pans)).step("v", ((0, 4),)) is None


def test_dask_tasks_of_whole_chunks_read_nothing_twice(field):
    # chunks={} reads one whole chunk per task, side by side along rows: steps of a pan
    # to the readahead were the tasks not overlapping, fetching what the next tasks fetch
    root, values, _ = field
    with LatencyServer(root, latency=0.01) as server:
        ds = xr.open_dataset(server.url("f.hurray"), engine="hurray", chunks={})
        server.reset()
        with dask.config.set(scheduler="threads", num_workers=4):
            got = ds.v.values
        read = sum(entry[2] for entry in server.log)
    np.testing.assert_array_equal(got, values)
    # on a loaded machine a few tasks can run alone, one after another, and look like
    # the steps of a pan: at most a few chunks ahead are then read, never a second copy
    stored = int(open_reader(root / "f.hurray").index("v")["size"].sum())
    assert stored <= read <= stored * 1.1


def test_reads_that_are_no_pan_read_nothing_ahead(field):
    root, values, tile = field
    with LatencyServer(root, latency=LATENCY) as server:
        reader = open_reader(server.url("f.hurray"), merge_policy=PLAIN_HTTP.merge_policy())
        server.reset()
        for y, x in [(0, 0), (3, 7), (9, 2), (1, 12)]:
            got = reader.read(
                "v", (slice(y * tile, (y + 1) * tile + 5), slice(x * tile, (x + 1) * tile + 5))
            )
            np.testing.assert_array_equal(
                got, values[y * tile : (y + 1) * tile + 5, x * tile : (x + 1) * tile + 5]
            )
        read = sum(entry[2] for entry in server.log)
    # the four boxes' chunks only: 4 chunks each
    index = reader.index("v")
    grid = values.shape[1] // tile
    ids = [
        a * grid + b
        for y, x in [(0, 0), (3, 7), (9, 2), (1, 12)]
        for a in (y, y + 1)
        for b in (x, x + 1)
    ]
    assert read <= int(index["size"][ids].sum()) + 4 * PLAIN_HTTP.merge_policy().max_gap
