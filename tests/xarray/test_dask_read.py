"""Dask reads: a dask chunk spanning several stored chunks is one merged request and
its stored chunks decode in parallel."""

from __future__ import annotations

import threading

import dask
import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container.threads import ordered_map, pool_threads, run_as_produced
from xarray_hurray.io import LocalFileSource, MergePolicy
from xarray_hurray.testing import CountingSource


@pytest.mark.parametrize(("dask_side", "stored_per_dask"), [(32, 4), (64, 16)])
def test_a_dask_chunk_over_many_stored_chunks_is_one_request(tmp_path, dask_side, stored_per_dask):
    values = np.random.default_rng(3).standard_normal((128, 128)).astype("f4")
    path = tmp_path / "r.hurray"
    encoding = {"v": {"chunks": (16, 16)}}
    xh.to_hurray(xr.Dataset({"v": (("y", "x"), values)}), path, encoding=encoding)
    source = CountingSource(LocalFileSource(path))
    chunks = {"y": dask_side, "x": dask_side}
    # no gaps read through: only byte-adjacent chunks share a request
    policy = MergePolicy(max_gap=0)
    ds = xr.open_dataset(source, engine="hurray", chunks=chunks, merge_policy=policy)
    opening = len(source.requests)
    with dask.config.set(scheduler="threads", num_workers=2):
        got = ds["v"].values
    np.testing.assert_array_equal(got, values)
    dask_chunks = (128 // dask_side) ** 2
    # aligned power-of-two blocks of chunks are contiguous along the Hilbert curve
    assert len(source.requests) - opening == dask_chunks
    assert sum(b - a for a, b in source.requests[opening:]) == sum(
        xh.open_reader(path).index("v")["size"]
    )
    assert (dask_side // 16) ** 2 == stored_per_dask


def test_ordered_map_keeps_order_and_runs_in_parallel():
    if pool_threads() < 2:
        pytest.skip("one CPU: the decode pool has one thread")
    meet = threading.Barrier(2, timeout=10)

    def work(i: int) -> int:
        if i < 2:
            meet.wait()  # only passes when the first two items run at the same time
        return i * i

    assert list(ordered_map(work, list(range(50)))) == [i * i for i in range(50)]


def test_ordered_map_raises_the_first_failure_in_item_order():
    def work(i: int) -> int:
        if i in (5, 9):
            raise ValueError(f"bad item {i}")
        return i

    results = ordered_map(work, list(range(20)))
    assert [next(results) for _ in range(5)] == list(range(5))
    with pytest.raises(ValueError, match="bad item 5"):
        next(results)


@pytest.mark.parametrize("items", [[], [7]])
def test_ordered_map_of_zero_or_one_item_runs_in_the_caller(items):
    callers = []
    result = list(ordered_map(lambda i: callers.append(threading.get_ident()) or i, items))
    assert result == items
    assert callers == [threading.get_ident()] * len(items)


def test_run_as_produced_runs_tasks_while_the_producer_waits():
    if pool_threads() < 2:
        pytest.skip("one CPU: the tasks run in the caller")
    started = threading.Event()

    def tasks():
        yield lambda: started.set() or "first"
        # the producer waits (as for the next answer of a read) until the first task ran
        assert started.wait(timeout=10)
        yield lambda: "second"

    assert run_as_produced(tasks()) == ["first", "second"]


def test_run_as_produced_raises_a_failure_of_the_producer_or_a_task():
    def failing_producer():
        yield lambda: 1
        raise OSError("no answer")

    with pytest.raises(OSError, match="no answer"):
        run_as_produced(failing_producer())
    with pytest.raises(ZeroDivisionError):
        run_as_produced([lambda: 1, lambda: 1 // 0, lambda: 2])
