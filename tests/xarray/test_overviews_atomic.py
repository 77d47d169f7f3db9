"""The pyramid paths killed at every write: a new pyramid leaves no file or the whole
one, an append into every level leaves all levels old or all new, and the spill
directory a killed pyramid write leaves in the temporary folder is removed by the
next pyramid write.

As in test_update_atomic.py, writers run in children of a fork server that imported
this module once."""

from __future__ import annotations

import os
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
from test_overviews import brute_level
from test_update_atomic import intact

import xarray_hurray as xh
from xarray_hurray.container import update
from xarray_hurray.container.tempfiles import _HOST

HERE = Path(__file__).resolve().parent

FACTORS = [2, 4]
PATTERN = np.arange(16 * 12, dtype="float64").reshape(16, 12) / 100
"""The field of every step, less the step's number."""


def steps(first: int, count: int, chunked: bool = False) -> xr.Dataset:
    """Time steps ``first`` to ``first + count`` of a (time, y, x) field: step t is
    ``t + PATTERN``; dask-backed with ``chunked`` (a pyramid write then spills)."""
    t = np.arange(first, first + count)
    ds = xr.Dataset(
        {"v": (("time", "y", "x"), t[:, None, None] + PATTERN[None])},
        coords={"time": t, "y": np.arange(16.0), "x": np.arange(12.0)},
    )
    return ds.chunk({"time": 1, "y": 4, "x": 4}) if chunked else ds


ENCODING = {"v": {"chunks": (1, 4, 4)}}


def _new(path: str, count: int, chunked: bool) -> None:
    xh.to_hurray(steps(0, count, chunked), path, overviews=FACTORS, encoding=ENCODING)


def _append(path: str, first: int, count: int) -> None:
    xh.to_hurray(steps(first, count), path, append_dim="time")


def _kill_at(path: str, scratch: str, target: str, args: list, calls: int) -> None:
    """Run ``target(path, *args)`` with the temporary folder ``scratch``, SIGKILLing
    this process at its ``calls``-th write (see :func:`forking.kill_at_write`)."""
    tempfile.tempdir = scratch
    update.WRITE_BUFFER = 256
    kill_at_write(calls)
    globals()[target](path, *args)


def _warm_up() -> None:
    """Make the imports a pyramid write makes on first use, without a thread (in
    memory values: no dask computation)."""
    with tempfile.TemporaryDirectory() as work:
        path = str(Path(work) / "warm.hurray")
        _new(path, 2, chunked=False)
        _append(path, 2, 1)
    assert threading.active_count() == 1


def held_steps(path) -> int:
    """The number of time steps of the pyramid at ``path``, once every level is
    checked against the brute force of those steps."""
    with xr.open_datatree(path, engine="hurray") as tree:
        levels = {name: node.to_dataset().load() for name, node in tree.children.items()}
    assert list(levels) == ["0", "1", "2"]
    count = levels["0"].sizes["time"]
    expected = steps(0, count)["v"].values
    np.testing.assert_array_equal(levels["0"]["v"].values, expected)
    for number, factor in enumerate(FACTORS, start=1):
        level = levels[str(number)]["v"].values
        assert len(level) == count
        for k in range(count):
            want = brute_level(expected[k], [0, 1], factor, "mean")
            np.testing.assert_allclose(level[k], want, rtol=1e-12)
    return count


def spills(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("hurray-overviews-"))


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    forks = ForkServer("test_overviews_atomic", [HERE, HERE.parent], warm_up="_warm_up")
    yield forks
    forks.close()


@pytest.fixture
def scratch(tmp_path) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("calls", range(1, 6))  # its 4 writes: the file, 2 fsyncs, a rename
def test_a_kill_at_any_write_of_a_new_pyramid_leaves_no_file_or_the_whole_one(
    server, tmp_path, scratch, calls, monkeypatch
):
    path = tmp_path / "p.hurray"
    code = server.run("_kill_at", str(path), str(scratch), "_new", [3, True], calls)
    if code == -signal.SIGKILL:
        assert not path.exists() or held_steps(path) == 3
        assert spills(scratch)  # left by the killed write
    else:
        assert code == 0 and held_steps(path) == 3 and not spills(scratch)
    # the next pyramid write removes what the killed one left
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    _new(str(path), 4, chunked=True)
    assert held_steps(path) == 4
    assert spills(scratch) == []
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.slow
@pytest.mark.parametrize("calls", range(1, 22))  # its 20: 18 pwrites, 2 fsyncs
def test_a_kill_at_any_write_of_an_append_leaves_every_level_old_or_new(
    server, tmp_path, scratch, calls
):
    path = tmp_path / "p.hurray"
    _new(str(path), 5, chunked=False)
    code = server.run("_kill_at", str(path), str(scratch), "_append", [5, 2], calls)
    found = held_steps(path)
    assert intact(path)
    if code == -signal.SIGKILL:
        assert found in (5, 7)  # every level old, or every level new
    else:
        assert code == 0 and found == 7
    # the lock died with the process: the next append goes on, into every level
    _append(str(path), found, 1)
    assert held_steps(path) == found + 1


def _big_new(path: str) -> None:
    """A pyramid write long enough to be killed while it computes and spills."""
    ds = xr.Dataset({"v": (("y", "x"), np.arange(2048.0 * 1024).reshape(2048, 1024))})
    xh.to_hurray(ds.chunk({"y": 256, "x": 256}), path, overviews=[2, 4, 8])


@pytest.mark.slow
def test_kills_at_random_times_during_a_new_pyramid(server, tmp_path, scratch, monkeypatch):
    rng = np.random.default_rng(5)
    path = tmp_path / "p.hurray"
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    killed = 0
    for _ in range(6):
        pid = server.start("_kill_at", str(path), str(scratch), "_big_new", [], 10**9)
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(pid, signal.SIGKILL)
        killed += server.wait(pid) == -signal.SIGKILL
        if path.exists():  # written whole before the kill
            with xr.open_datatree(path, engine="hurray") as tree:
                assert tree["3"]["v"].shape == (256, 128)
            path.unlink()
        assert len(spills(scratch)) <= 1  # each write removes those of the killed
    assert killed
    _new(str(path), 2, chunked=True)
    assert spills(scratch) == []


def test_the_spill_of_a_running_writer_is_kept(tmp_path, scratch, monkeypatch):
    """Only the spills of processes that no longer run are removed: a spill named by a
    running process (this one's parent) stays."""
    name = scratch / f"hurray-overviews-{_HOST}-{os.getppid()}-0123abcd.tmp"
    name.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    _new(str(tmp_path / "p.hurray"), 2, chunked=True)
    assert spills(scratch) == [name.name]


def test_a_pyramid_write_leaves_no_spill(tmp_path, scratch, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    _new(str(tmp_path / "p.hurray"), 2, chunked=True)
    assert spills(scratch) == [] and os.listdir(scratch) == []
