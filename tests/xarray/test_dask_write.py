"""Dask-backed writes: one task per dask chunk, placement order, a bounded window,
compute=False, progress, misaligned chunks and failing tasks."""

from __future__ import annotations

import io
import os
import threading
import time
import tracemalloc

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from dask.delayed import Delayed
from hurray_datasets import numeric
from hypothesis import given, settings
from hypothesis import strategies as st

import xarray_hurray as xh
from xarray_hurray.write.encode import BlockMap
from xarray_hurray.write.progress import BAR_WIDTH, REFRESH_SECONDS, ProgressBar


def smooth(shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    """A compressible field with some noise."""
    grids = np.meshgrid(*(np.linspace(0, 3, n) for n in shape), indexing="ij")
    noise = np.random.default_rng(1).standard_normal(shape) * 0.01
    return (np.sin(sum(grids)) + noise).astype(dtype)


def write_both(tmp_path, ds_numpy: xr.Dataset, ds_dask: xr.Dataset, **kwargs):
    """Write the numpy-backed and the dask-backed dataset; return both files' bytes."""
    xh.to_hurray(ds_numpy, tmp_path / "numpy.hurray", **kwargs)
    xh.to_hurray(ds_dask, tmp_path / "dask.hurray", **kwargs)
    return (tmp_path / "numpy.hurray").read_bytes(), (tmp_path / "dask.hurray").read_bytes()


@pytest.mark.parametrize("scheduler", ["threads", "sync"])
@pytest.mark.parametrize("order", ["hilbert", "morton", "row-major"])
@pytest.mark.parametrize("window", [1, 3])
def test_dask_write_is_the_numpy_write_byte_for_byte(tmp_path, scheduler, order, window):
    values = smooth((70, 48, 5))
    chunks = (16, 16, 5)
    ds = xr.Dataset(
        {"v": (("y", "x", "t"), values), "t": ("t", np.arange(5))},
        attrs={"title": "smooth"},
    )
    lazy = ds.copy()
    lazy["v"] = lazy["v"].chunk(dict(zip(("y", "x", "t"), chunks, strict=True)))
    kwargs = {"encoding": {"v": {"chunks": chunks}}, "chunk_order": order, "window": window}
    with dask.config.set(scheduler=scheduler, num_workers=2):
        numpy_bytes, dask_bytes = write_both(tmp_path, ds, lazy, **kwargs)
    assert dask_bytes == numpy_bytes
    out = xr.open_dataset(tmp_path / "dask.hurray", engine="hurray")
    xr.testing.assert_identical(out, ds)


@settings(max_examples=25)
@given(
    data=st.data(),
    rank=st.integers(0, 3),
    layout=st.sampled_from(["auto", "morton", "row-major"]),
)
def test_dask_chunks_made_of_whole_stored_chunks_write_the_same_file(
    tmp_path_factory, data, rank, layout
):
    shape = tuple(data.draw(st.integers(1, 24)) for _ in range(rank))
    stored = tuple(data.draw(st.integers(1, 8)) for _ in range(rank))
    multiples = tuple(data.draw(st.integers(1, 3)) for _ in range(rank))
    values = numeric("int16", shape, seed=rank)
    dims = ("a", "b", "c")[:rank]
    ds = xr.Dataset({"v": (dims, values)})
    dask_chunks = tuple(s * m for s, m in zip(stored, multiples, strict=True))
    lazy = xr.Dataset({"v": (dims, da.from_array(values, chunks=dask_chunks))})
    tmp_path = tmp_path_factory.mktemp("multiples")
    kwargs = {"encoding": {"v": {"chunks": stored}}, "layout": layout}
    with dask.config.set(scheduler="threads", num_workers=2):
        numpy_bytes, dask_bytes = write_both(tmp_path, ds, lazy, **kwargs)
    assert dask_bytes == numpy_bytes


def test_mixed_dask_numpy_and_lazy_file_variables_round_trip(tmp_path):
    base = xr.Dataset(
        {
            "temp": (("y", "x"), smooth((40, 30))),
            "mask": (("y", "x"), numeric("bool", (40, 30))),
            "when": ("y", np.datetime64("2001-01-01") + np.arange(40) * np.timedelta64(6, "h")),
            "scalar": ((), np.float64(2.5)),
        },
        coords={"x": np.arange(30) * 0.5},
    )
    xh.to_hurray(base, tmp_path / "source.hurray", encoding={"mask": {"chunks": (8, 8)}})
    from_file = xr.open_dataset(tmp_path / "source.hurray", engine="hurray")
    mixed = xr.Dataset(
        {
            "temp": base["temp"].chunk({"y": 16, "x": 10}),
            "mask": from_file["mask"],  # lazy backend array, no dask
            "when": base["when"].chunk({"y": 8}),  # CF-encoded lazily by xarray
            "scalar": base["scalar"].chunk(),
        },
        coords={"x": base["x"]},
    )
    xh.to_hurray(mixed, tmp_path / "mixed.hurray")
    out = xr.open_dataset(tmp_path / "mixed.hurray", engine="hurray")
    xr.testing.assert_identical(out, base)
    assert out["temp"].encoding["chunks"] == (16, 10)


def test_chunks_are_computed_a_window_at_a_time_in_placement_order(tmp_path):
    computed: list[tuple[int, ...]] = []
    lock = threading.Lock()

    def record(block, block_info=None):
        with lock:
            computed.append(tuple(block_info[0]["chunk-location"]))
        return block

    values = smooth((64, 64))
    source = da.from_array(values, chunks=8).map_blocks(record, dtype=values.dtype)
    window, workers = 2, 2
    with dask.config.set(scheduler="threads", num_workers=workers):
        xh.to_hurray(xr.Dataset({"v": (("y", "x"), source)}), tmp_path / "w.hurray", window=window)
    var = xh.open_reader(tmp_path / "w.hurray").variable("v")
    expected = [np.unravel_index(i, var.grid_shape) for i in var.placement.tolist()]
    batch = window * workers
    assert len(computed) == len(expected) == 64
    for start in range(0, 64, batch):
        got = set(computed[start : start + batch])
        assert got == {tuple(int(i) for i in e) for e in expected[start : start + batch]}


def counted_source(shape, chunks):
    """A dask array whose blocks count how often each is computed."""
    calls: dict[tuple[int, ...], int] = {}
    lock = threading.Lock()
    values = smooth(shape)

    def record(block, block_info=None):
        with lock:
            where = tuple(block_info[0]["chunk-location"])
            calls[where] = calls.get(where, 0) + 1
        return block

    return (
        values,
        calls,
        da.from_array(values, chunks=chunks).map_blocks(record, dtype=values.dtype),
    )


def test_a_reduction_every_chunk_uses_is_computed_once_not_once_per_batch(tmp_path):
    values, calls, source = counted_source((32, 64), (1, 32))
    data = xr.DataArray(source, dims=("time", "x"))
    anomaly = xr.Dataset({"a": data - data.mean("time")})
    with dask.config.set(scheduler="threads", num_workers=2):
        xh.to_hurray(anomaly, tmp_path / "a.hurray", window=1)  # 32 batches of 2 chunks
    # once for the mean, once more (at most) for the chunk's own anomaly
    assert max(calls.values()) <= 2 and len(calls) == 64
    back = xr.open_dataset(tmp_path / "a.hurray", engine="hurray")["a"].values
    np.testing.assert_allclose(back, values - values.mean(axis=0), atol=1e-6)
    np.testing.assert_array_equal(back, anomaly["a"].values)  # dask's own computation


def test_a_dask_chunk_split_across_batches_is_computed_once(tmp_path):
    values, calls, source = counted_source((256, 256), (128, 128))
    ds = xr.Dataset({"v": (("y", "x"), source)})
    with dask.config.set(scheduler="threads", num_workers=2):
        xh.to_hurray(ds, tmp_path / "s.hurray", encoding={"v": {"chunks": (16, 16)}}, window=1)
    assert calls == {(0, 0): 1, (0, 1): 1, (1, 0): 1, (1, 1): 1}
    back = xr.open_dataset(tmp_path / "s.hurray", engine="hurray")["v"].values
    np.testing.assert_array_equal(back, values)


def test_a_dask_chunk_of_many_stored_chunks_is_computed_once_in_one_batch(tmp_path):
    values, calls, source = counted_source((128, 96), (128, 96))
    ds = xr.Dataset({"v": (("y", "x"), source)})
    with dask.config.set(scheduler="threads", num_workers=2):
        xh.to_hurray(ds, tmp_path / "one.hurray", encoding={"v": {"chunks": (4, 4)}}, window=1)
    assert calls == {(0, 0): 1}
    back = xr.open_dataset(tmp_path / "one.hurray", engine="hurray")["v"].values
    np.testing.assert_array_equal(back, values)


def test_a_pending_write_of_ten_million_stored_chunks_stays_small(tmp_path):
    ds = xr.Dataset({"v": (("y", "x"), da.zeros((10_000, 1_000), chunks=(2_500, 1_000)))})
    tracemalloc.start()
    start = time.perf_counter()
    pending = xh.to_hurray(
        ds, tmp_path / "big.hurray", encoding={"v": {"chunks": (1, 1)}}, compute=False
    )
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert isinstance(pending, Delayed)
    # one encode task per dask chunk: nothing grows with the 10**7 stored chunks
    assert elapsed < 5 and peak < 2**24


@settings(max_examples=40)
@given(data=st.data(), rank=st.integers(0, 3))
def test_block_map_locates_every_stored_chunk_in_its_dask_chunk(data, rank):
    shape = tuple(data.draw(st.integers(1, 30)) for _ in range(rank))
    stored = tuple(data.draw(st.integers(1, 6)) for _ in range(rank))
    dask_chunks = []
    for n, c in zip(shape, stored, strict=True):
        sizes, left = [], n
        while left > 0:  # whole stored chunks, the last one cut by the array's end
            size = min(c * data.draw(st.integers(1, 3)), left)
            sizes.append(size)
            left -= size
        dask_chunks.append(tuple(sizes))
    blocks = BlockMap(dask_chunks, stored)
    grid = tuple(-(-n // c) for n, c in zip(shape, stored, strict=True))
    assert blocks.grid_shape == grid
    # brute force: the dask chunk holding each stored chunk's first element, and the
    # stored chunk's rank among those starting in that dask chunk (row-major)
    starts = [np.cumsum((0, *sizes)) for sizes in dask_chunks]
    members: dict[int, list[int]] = {}
    expected_block = []
    for chunk_id, corner in enumerate(np.ndindex(*grid)):
        at = [
            np.searchsorted(s, i * c, side="right") - 1
            for s, i, c in zip(starts, corner, stored, strict=True)
        ]
        b = int(np.ravel_multi_index(at, [len(s) - 1 for s in starts])) if rank else 0
        members.setdefault(b, []).append(chunk_id)
        expected_block.append(b)
    ids = np.arange(len(expected_block))
    block, local = blocks.locate(ids)
    assert block.tolist() == expected_block
    assert [
        members[b].index(i) for i, b in zip(ids.tolist(), expected_block, strict=True)
    ] == local.tolist()


def test_compute_false_returns_a_delayed_that_writes_the_file(tmp_path):
    values = smooth((50, 40))
    ds = xr.Dataset({"v": (("y", "x"), da.from_array(values, chunks=(16, 16)))})
    pending = xh.to_hurray(ds, tmp_path / "later.hurray", compute=False)
    assert isinstance(pending, Delayed)
    assert list(tmp_path.iterdir()) == []
    accessor_pending = ds.hurray.to_hurray(tmp_path / "accessor.hurray", compute=False)
    with dask.config.set(scheduler="threads", num_workers=2):
        dask.compute(pending, accessor_pending)
    xh.to_hurray(ds, tmp_path / "now.hurray")
    now = (tmp_path / "now.hurray").read_bytes()
    assert (tmp_path / "later.hurray").read_bytes() == now
    assert (tmp_path / "accessor.hurray").read_bytes() == now


def test_progress_bar_on_request_and_silent_when_stderr_is_not_a_terminal(tmp_path, capsys):
    ds = xr.Dataset({"v": (("y", "x"), da.zeros((40, 40), chunks=10, dtype="f4"))})
    xh.to_hurray(ds, tmp_path / "quiet.hurray")
    assert capsys.readouterr().err == ""
    xh.to_hurray(ds, tmp_path / "loud.hurray", progress=True)
    err = capsys.readouterr().err
    # not a terminal: one summary line, no carriage returns for a log file
    assert err.startswith("writing loud.hurray |") and "\r" not in err
    assert "100% 16/16 chunks" in err and err.count("\n") == 1 and err.endswith("\n")
    xh.to_hurray(ds, tmp_path / "off.hurray", progress=False)
    assert capsys.readouterr().err == ""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_redraws_in_place_on_a_terminal():
    stream = Terminal()
    bar = ProgressBar("writing f", total=4, stream=stream)
    for _ in range(4):
        bar.update(1, 10)
        bar._drawn = -REFRESH_SECONDS  # let every update draw
    bar.close()
    lines = stream.getvalue().split("\r")[1:]
    assert len(lines) == 5 and lines[-1].startswith("writing f |" + "#" * BAR_WIDTH + "| 100% 4/4")
    assert stream.getvalue().endswith("\n")


@pytest.mark.parametrize(
    ("dask_chunks", "encoding", "match"),
    [
        ((10, 16), {"chunks": (16, 16)}, r"dask chunks \(10, 10, 10, 10, 8\) along 'y'"),
        ((32, 24), {"chunks": (16, 16)}, r"dask chunks \(24, 24\) along 'x'.*ends at 24"),
        ((16, 16), {"chunks": (32, 16)}, r"along 'y'.*stored chunks of 32"),
    ],
)
def test_dask_chunks_ending_inside_a_stored_chunk_are_refused(
    tmp_path, dask_chunks, encoding, match
):
    ds = xr.Dataset({"v": (("y", "x"), da.zeros((48, 48), chunks=dask_chunks))})
    ds["v"] = ds["v"].chunk(dict(zip(("y", "x"), dask_chunks, strict=True)))
    with pytest.raises(ValueError, match=match) as raised:
        xh.to_hurray(ds, tmp_path / "bad.hurray", encoding={"v": encoding})
    assert "variable 'v'" in str(raised.value) and "ds.chunk(" in str(raised.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("compute", [True, False])
def test_a_failing_task_aborts_the_write_and_keeps_the_old_file(tmp_path, compute):
    path = tmp_path / "keep.hurray"
    xh.to_hurray(xr.Dataset({"v": (("x",), np.arange(6))}), path)
    before = path.read_bytes()

    def explode(block, block_info=None):
        if block_info[0]["chunk-location"] == (7,):
            raise RuntimeError("disk on fire")
        return block

    failing = da.arange(100, chunks=10).map_blocks(explode, dtype=np.int64)
    ds = xr.Dataset({"v": (("x",), failing)})
    with pytest.raises(RuntimeError, match="disk on fire"):
        with dask.config.set(scheduler="threads", num_workers=2):
            pending = xh.to_hurray(ds, path, compute=compute, window=1)
            if not compute:
                pending.compute()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.hurray"]
    assert path.read_bytes() == before


def test_window_must_be_a_positive_integer(tmp_path):
    ds = xr.Dataset({"v": (("x",), da.zeros(4, chunks=2))})
    for window in (0, 1.5, True):
        with pytest.raises(ValueError, match="window must be an integer >= 1"):
            xh.to_hurray(ds, tmp_path / "w.hurray", window=window)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("compute", [True, False])
def test_a_target_that_cannot_be_written_is_refused_before_any_work(tmp_path, compute):
    computed = []

    def record(block):
        computed.append(block.shape)
        return block

    ds = xr.Dataset({"v": (("x",), da.zeros(8, chunks=4).map_blocks(record, meta=np.array(())))})
    (tmp_path / "a_directory").mkdir()
    (tmp_path / "a_file").write_bytes(b"")
    cases = [
        ("a_directory", IsADirectoryError, "over a directory", "a_directory"),
        ("missing/v.hurray", FileNotFoundError, "no directory", "missing"),
        ("a_file/v.hurray", FileNotFoundError, "no directory", "a_file"),
    ]
    for target, error, match, named in cases:
        with pytest.raises(error, match=match) as raised:
            xh.to_hurray(ds, tmp_path / target, compute=compute)
        assert raised.value.filename == str(tmp_path / named)
    assert computed == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_directory", "a_file"]


def test_no_progress_is_drawn_when_the_file_cannot_be_created(tmp_path, capsys, monkeypatch):
    real_open = os.open

    def refuse_temporary_files(path, *args, **kwargs):
        if str(path).endswith(".tmp"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_temporary_files)
    ds = xr.Dataset({"v": (("x",), da.zeros(8, chunks=4))})
    with pytest.raises(PermissionError):
        xh.to_hurray(ds, tmp_path / "v.hurray", progress=True)
    assert capsys.readouterr().err == ""
