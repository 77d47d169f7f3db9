"""Writes into an existing file commit at one instant: a process killed at any point
leaves the previous version, readers see one whole version, writers serialize.

Writers run in children of a fork server that imported this module once, so each
killed write costs milliseconds, not an interpreter start."""

from __future__ import annotations

import os
import pickle
import random
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from forking import ForkServer, kill_at_write

import xarray_hurray as xh
from xarray_hurray.container import open_reader, update, verify_file
from xarray_hurray.io import SourceChangedError

HERE = Path(__file__).resolve().parent


def steps(first: int, count: int) -> xr.Dataset:
    """Time steps ``first`` to ``first + count``; every value of step t is t."""
    t = np.arange(first, first + count)
    values = np.broadcast_to(t[:, None, None], (count, 8, 8)).astype("float64")
    return xr.Dataset(
        {"v": (("time", "y", "x"), values), "label": (("time",), t.astype("int32"))},
        coords={"time": t},
    )


ENCODING = {"v": {"chunks": (3, 4, 4), "chunk_axes": ["y", "x"]}, "label": {"chunks": (3,)}}


def _append(path: str, first: int, count: int) -> None:
    xh.to_hurray(steps(first, count), path, append_dim="time")


def _region(path: str, value: float) -> None:
    ds = steps(0, 6).drop_vars(["time", "label"])
    ds["v"][:] = value
    xh.to_hurray(ds, path, region={"time": slice(0, 6)})


def _appends(path: str, firsts: list[int], count: int) -> None:
    for first in firsts:
        _append(path, first, count)


def _kill_at(path: str, target: str, args: list, calls: int) -> None:
    """Run ``target(path, *args)``, SIGKILLing this process at its ``calls``-th call of
    a system call that writes (fsync, rename, link, pwrite, write of a descriptor);
    an in-place commit then appends in small writes, to be killed between them."""
    update.WRITE_BUFFER = 256
    kill_at_write(calls)
    globals()[target](path, *args)


def _warm_up() -> None:
    """Make the imports an update makes on first use; aligned with the stored chunks,
    so that no chunk is read back and no thread starts."""
    with tempfile.TemporaryDirectory() as work:
        path = str(Path(work) / "warm.hurray")
        xh.to_hurray(steps(0, 3), path, encoding=ENCODING)
        _append(path, 3, 3)
    assert threading.active_count() == 1


def digest(path) -> bytes:
    return Path(path).read_bytes()


def read_steps(path) -> np.ndarray:
    """The time steps the file holds, after checking that every value agrees."""
    with xr.open_dataset(path, engine="hurray") as ds:
        ds = ds.load()
    t = ds["time"].values
    assert (ds["label"].values == t).all()
    assert (ds["v"].values == t[:, None, None]).all()
    return t


def intact(path) -> bool:
    """Whether ``path`` verifies clean but for the bytes after the end of its version
    that a write killed before its commit (or a torn slot) leaves, which verify
    reports as its one problem."""
    problems = verify_file(path)
    return problems == [] or (
        len(problems) == 1 and "bytes after the end of the version" in problems[0]
    )


@pytest.fixture
def base(tmp_path) -> Path:
    path = tmp_path / "f.hurray"
    xh.to_hurray(steps(0, 7), path, encoding=ENCODING)
    return path


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    forks = ForkServer("test_update_atomic", [HERE, HERE.parent], warm_up="_warm_up")
    yield forks
    forks.close()


@pytest.mark.parametrize("calls", range(1, 14))
@pytest.mark.slow
def test_a_kill_at_any_write_leaves_the_old_or_the_new_version(server, base, calls):
    code = server.run("_kill_at", str(base), "_append", [7, 5], calls)
    found = read_steps(base)
    assert intact(base)
    if code == -signal.SIGKILL:
        # killed before its commit: the old version; at or after it: the new one
        assert len(found) in (7, 12)
    else:
        assert code == 0 and len(found) == 12
    # the lock died with the process: the next writer goes on
    _append(str(base), len(found), 2)
    assert len(read_steps(base)) == len(found) + 2


@pytest.mark.slow
def test_kills_at_random_times_during_appends_and_region_writes(server, base):
    rng = random.Random(12)
    outcomes = set()
    for run in range(12):
        before = read_steps(base)
        n = len(before)
        region = run % 3 == 2
        target, args = ("_region", [float(-run)]) if region else ("_append", [n, 2])
        pid = server.start(target, str(base), *args)
        time.sleep(rng.uniform(0, 0.15))
        os.kill(pid, signal.SIGKILL)
        server.wait(pid)
        assert intact(base)
        with xr.open_dataset(base, engine="hurray") as ds:
            v = ds["v"].values
            t = ds["time"].values
        if region:
            changed = bool((v[:6] == -run).all()) and run > 0
            assert changed or np.array_equal(v[:6], np.broadcast_to(t[:6, None, None], v[:6].shape))
            outcomes.add(changed)
            # put step values back for the next runs
            _region(str(base), 0.0)
            ds = steps(0, 6).drop_vars(["label"])
            xh.to_hurray(ds.drop_vars("time"), base, region={"time": slice(0, 6)})
        else:
            assert len(t) in (n, n + 2)
            outcomes.add(len(t) == n + 2)
            read_steps(base)


def test_two_writer_processes_serialize(server, base):
    a = server.start("_appends", str(base), [100, 102, 104, 106], 2)
    b = server.start("_appends", str(base), [200, 202, 204, 206], 2)
    assert (server.wait(a), server.wait(b)) == (0, 0)
    with xr.open_dataset(base, engine="hurray") as ds:
        t = ds["time"].values
        assert (ds["v"].values == t[:, None, None]).all()
    expected = [*range(7), *range(100, 108), *range(200, 208)]
    assert sorted(t.tolist()) == expected
    # each append landed whole: its two steps are next to each other
    pairs = [tuple(t[k : k + 2]) for k in range(7, len(t), 2)]
    assert all(p[1] == p[0] + 1 for p in pairs)
    assert verify_file(base) == []


def test_a_reader_during_commits_sees_one_whole_version(base):
    stop = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def read_loop() -> None:
        try:
            while not stop.is_set():
                reader = open_reader(base)
                n = reader.variable("time").shape[0]
                t = reader.read("time")
                v = reader.read("v")
                label = reader.read("label")
                assert len(t) == n and (label == t).all()
                assert (v == t[:, None, None]).all() and list(t) == list(range(n))
                seen.append(n)
        except BaseException as err:
            errors.append(err)

    thread = threading.Thread(target=read_loop)
    thread.start()
    # a reader kept open before the commits keeps reading its version
    kept = open_reader(base)
    try:
        for first in range(7, 27, 2):
            _append(str(base), first, 2)
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[0]
    assert len(set(seen)) > 1
    assert kept.read("v").shape == (7, 8, 8)
    assert (kept.read("label") == np.arange(7)).all()


def test_a_torn_slot_write_reads_as_the_old_version(base):
    """A crash in the middle of writing the slot leaves it damaged; the file is longer
    than the version it holds, so readers take the other slot."""
    before = digest(base)
    _append(str(base), 7, 2)
    with open(base, "r+b") as f:
        header = f.read(144)
        slots = [header[16:80], header[80:144]]
        newer = 0 if open_reader(base).header.generation % 2 else 1
        # the commit's slot, half written over the older one
        torn = slots[newer][:30] + bytes(34)
        f.seek(16 + 64 * newer)
        f.write(torn)
    assert len(read_steps(base)) == 7
    # the version the torn slot held is now bytes after the end of the one read
    (problem,) = verify_file(base)
    assert "bytes after the end of the version" in problem
    assert digest(base) != before
    _append(str(base), 7, 2)  # the next commit reuses the damaged slot
    assert len(read_steps(base)) == 9


def test_a_reader_reopened_after_commits_keeps_its_version(base):
    reader = open_reader(base)
    elsewhere = pickle.dumps(reader)  # as dask sends it to a worker
    _append(str(base), 7, 2)
    _region(str(base), -1.0)
    reader.source.close()  # the next read opens the file again
    for kept in (reader, pickle.loads(elsewhere)):
        assert (kept.read("label") == np.arange(7)).all()
        assert (kept.read("v") == np.arange(7.0)[:, None, None]).all()
    # a file replaced by another one (a rewrite, not an append) is refused
    moved = pickle.loads(elsewhere)
    xh.to_hurray(steps(0, 7), base, encoding=ENCODING)
    with pytest.raises(SourceChangedError):
        moved.read("v")
