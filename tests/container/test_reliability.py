"""Crash-safe writes, concurrent readers and writer input that the format cannot hold."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import random
import signal
import struct
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import open_reader, verify_file
from xarray_hurray.container import replace as replace_module
from xarray_hurray.container.replace import move_into_place
from xarray_hurray.io import SourceChangedError

# spawn, not fork: earlier tests leave threads (servers, pools, event loops) in this
# process, and a forked child may inherit a lock one of them held
SPAWN = multiprocessing.get_context("spawn")
FORK = multiprocessing.get_context("fork")  # writers killed mid-write: started fast
SIDE = 512


def _versioned(version: int) -> xr.Dataset:
    """A dataset whose every element records ``version``."""
    return xr.Dataset({"v": (("y", "x"), np.full((SIDE, SIDE), float(version)))})


def _write(version: int, path: str) -> None:
    xh.to_hurray(_versioned(version), path, encoding={"v": {"chunks": (32, 32)}}, codecs=None)


def _write_forever(path: str, first: int) -> None:
    version = first
    while True:
        _write(version, path)
        version += 1


def _version_of(path) -> int:
    """The version a complete, valid file holds; fails on anything else."""
    assert verify_file(path) == []
    values = open_reader(path).read("v")
    assert np.all(values == values.flat[0])
    return int(values.flat[0])


@pytest.mark.slow
def test_killed_writers_never_damage_the_target(tmp_path):
    target = tmp_path / "data.hurray"
    _write(0, str(target))
    start = time.perf_counter()
    _write(0, str(target))
    duration = time.perf_counter() - start
    rng = random.Random(8)
    version, kills = 0, 0
    for _ in range(20):
        writer = FORK.Process(target=_write_forever, args=(str(target), version + 1))
        writer.start()
        time.sleep(rng.uniform(0, 2 * duration))
        os.kill(writer.pid, signal.SIGKILL)
        writer.join()
        kills += writer.exitcode == -signal.SIGKILL
        found = _version_of(target)  # never partial, never mixed
        assert found >= version
        version = found
    assert kills == 20
    # one more writer, killed only once it has replaced the target: kills both cut
    # writes short and land after complete ones, whatever the machine's load
    replaced = target.stat().st_ino
    writer = FORK.Process(target=_write_forever, args=(str(target), version + 1))
    writer.start()
    deadline = time.monotonic() + 30
    while target.stat().st_ino == replaced and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(writer.pid, signal.SIGKILL)
    writer.join()
    assert _version_of(target) > version
    leftovers = [p.name for p in tmp_path.iterdir() if p != target]
    assert all(name.startswith(".data.hurray.") and name.endswith(".tmp") for name in leftovers)
    _write(0, str(target))  # the next write removes what killed writers left
    assert sorted(tmp_path.iterdir()) == [target]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "data.hurray"
    _write(3, str(target))
    before = target.read_bytes()
    bad = _versioned(4).assign(s=(("k",), np.array(["ok", "\ud800"], dtype=object)))
    with pytest.raises(xh.HurrayValueError, match="lone surrogate"):
        xh.to_hurray(bad, target, codecs=None)
    assert target.read_bytes() == before
    assert sorted(tmp_path.iterdir()) == [target]


@pytest.fixture(scope="module")
def random_file(tmp_path_factory):
    rng = np.random.default_rng(3)
    truth = rng.standard_normal((200, 150, 3)).astype("f4")
    path = tmp_path_factory.mktemp("conc") / "random.hurray"
    ds = xr.Dataset({"v": (("z", "y", "x"), truth)})
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (16, 16, 2)}})
    return path, truth


def _random_keys(seed: int, shape: tuple[int, ...], count: int) -> list[tuple[slice, ...]]:
    rng = random.Random(seed)
    keys = []
    for _ in range(count):
        key = []
        for n in shape:
            a, b = sorted(rng.sample(range(n + 1), 2))
            key.append(slice(a, b))
        keys.append(tuple(key))
    return keys


def _check_regions(reader, truth: np.ndarray, seed: int) -> int:
    for key in _random_keys(seed, truth.shape, 25):
        np.testing.assert_array_equal(reader.read("v", key), truth[key])
    return seed


@pytest.mark.slow
def test_threads_and_processes_read_the_numpy_truth(random_file):
    path, truth = random_file
    reader = open_reader(path)
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(_check_regions, [reader] * 16, [truth] * 16, range(16)))
    with ProcessPoolExecutor(3, mp_context=SPAWN) as pool:
        seeds = range(100, 106)
        assert list(pool.map(_check_regions, [reader] * 6, [truth] * 6, seeds)) == list(seeds)


def test_an_open_reader_keeps_its_version_while_the_file_is_replaced(tmp_path):
    target = tmp_path / "data.hurray"
    _write(0, str(target))
    reader = open_reader(target)
    writer = FORK.Process(target=_write_forever, args=(str(target), 1))
    writer.start()
    try:
        seen = set()
        for key in _random_keys(1, (SIDE, SIDE), 60):
            seen.update(np.unique(reader.read("v", key)).tolist())
            fresh = open_reader(target)  # a new reader sees one whole version
            assert np.unique(fresh.read("v", key)).size == 1
        assert seen == {0.0}
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.join()


def test_a_pickled_reader_refuses_a_file_replaced_since_it_was_opened(tmp_path):
    target = tmp_path / "data.hurray"
    _write(0, str(target))
    shipped = pickle.dumps(open_reader(target))  # what a dask task carries to a worker
    _write(1, str(target))
    reader = pickle.loads(shipped)
    with pytest.raises(SourceChangedError, match="replaced or modified after it was opened"):
        reader.read("v")
    assert np.unique(pickle.loads(pickle.dumps(open_reader(target))).read("v")).tolist() == [1]


@pytest.mark.parametrize("dtype", ["f2", "f4", "f8", "c8", "c16"])
def test_special_floats_round_trip_bit_exactly(tmp_path, dtype):
    width = np.dtype(dtype).itemsize // (2 if dtype.startswith("c") else 1)
    bits = {2: "<u2", 4: "<u4", 8: "<u8"}[width]
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0], dtype=f"f{width}")
    payloads = specials.view(bits).copy()
    exponent = {2: 0x7C00, 4: 0x7F800000, 8: 0x7FF0000000000000}[width]
    payloads = np.concatenate([payloads, np.array([exponent | 1, exponent | 5], dtype=bits)])
    values = payloads.view(f"f{width}")  # the last two are signalling NaNs with payloads
    data = values if dtype.startswith("f") else values + 1j * values[::-1]
    path = tmp_path / "special.hurray"
    ds = xr.Dataset({"v": (("x",), data.astype(dtype))})
    for codecs in (None, "zstd"):
        xh.to_hurray(ds, path, codecs=codecs, encoding={"v": {"chunks": (4,)}})
        back = open_reader(path).read("v")
        assert back.tobytes() == ds["v"].values.tobytes()
    assert struct.unpack("<d", struct.pack("<d", -0.0)) == (-0.0,)


DEEP_LIST: list = [1]
for _ in range(40):
    DEEP_LIST = [DEEP_LIST]


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda ds: ds.assign_attrs({1: "a"}), TypeError, "attribute names must be strings"),
        (lambda ds: ds.assign_attrs(a={"nested": 1}), TypeError, "attribute 'a'"),
        (lambda ds: ds.assign_attrs(a=object()), TypeError, "attribute 'a'"),
        (lambda ds: ds.assign_attrs(a=b"bytes"), TypeError, "attribute 'a'"),
        (lambda ds: ds.assign_attrs(a="\udcff"), ValueError, "not valid Unicode"),
        (lambda ds: ds.assign_attrs(a=DEEP_LIST), ValueError, "deeper"),
        (lambda ds: ds.rename_vars(v=1), TypeError, "must be either a string or None"),
        (lambda ds: ds.rename_vars(v="\ud800"), ValueError, "not valid Unicode"),
        (lambda ds: ds.rename_dims(x=""), ValueError, "must not be empty"),
        (lambda ds: ds.rename_dims(x=("a", 1)), TypeError, "must be strings"),
    ],
)
def test_what_the_format_cannot_hold_fails_before_writing(tmp_path, make, error, match):
    path = tmp_path / "bad.hurray"
    path.write_bytes(b"previous content")
    ds = make(xr.Dataset({"v": (("y", "x"), np.zeros((2, 3)))}))
    with pytest.raises(error, match=match):
        xh.to_hurray(ds, path)
    assert path.read_bytes() == b"previous content"
    assert sorted(tmp_path.iterdir()) == [path]


def test_readers_in_many_threads_share_one_index_fetch(random_file):
    path, truth = random_file
    reader = open_reader(path)
    barrier = threading.Barrier(6)

    def read(seed: int) -> bool:
        barrier.wait()
        return np.array_equal(reader.read("v"), truth) and seed >= 0

    with ThreadPoolExecutor(6) as pool:
        assert all(pool.map(read, range(6)))


def _make(path, kind, text):
    if kind == "file":
        path.write_text(text)
    else:
        path.mkdir()
        (path / "part").write_text(text)


def _read(path):
    return (path / "part").read_text() if path.is_dir() else path.read_text()


@pytest.mark.parametrize("old", ["none", "file", "dir"])
@pytest.mark.parametrize("new", ["file", "dir"])
def test_move_into_place_leaves_only_the_new_content(tmp_path, old, new):
    target, staged = tmp_path / "out", tmp_path / ".out.tmp"
    if old != "none":
        _make(target, old, "old")
    _make(staged, new, "new")
    move_into_place(staged, target)
    assert _read(target) == "new" and (target.is_dir() == (new == "dir"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def _open_files():
    """What each descriptor of this process names (the one listing them is gone by
    the time it is read)."""
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
        except FileNotFoundError:
            pass
    return links


def _join_releases():
    for thread in threading.enumerate():
        if thread.name == "hurray-free-replaced":
            thread.join(timeout=30)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.parametrize("kind", ["large file", "small file", "link to a large file", "fifo"])
def test_a_replaced_file_is_freed_once_the_new_one_is_in_place(tmp_path, monkeypatch, kind):
    """The file a write replaces is held open across the rename and freed by a thread
    of its own (large regular files only): the new content is at the target at once,
    the descriptor handed to the release still reads the old bytes, and once it is
    released no descriptor of this process holds the old file.  A symbolic link is
    replaced itself (the file it names is kept), and a FIFO at the target does not
    block the write."""
    handed = []
    monkeypatch.setattr(replace_module, "release_in_background", handed.append)
    target, staged = tmp_path / "out", tmp_path / ".out.tmp"
    size = (replace_module.BACKGROUND_FREE_BYTES if "large" in kind else 1000) + 1
    if kind == "link to a large file":
        (tmp_path / "elsewhere").write_bytes(b"e" * size)
        target.symlink_to(tmp_path / "elsewhere")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.write_bytes(b"o" * size)
    staged.write_bytes(b"new")
    move_into_place(staged, target)
    assert target.read_bytes() == b"new" and not target.is_symlink()
    assert len(handed) == (kind == "large file")
    for fd in handed:
        assert os.pread(fd, 8, size - 8) == b"o" * 8
        monkeypatch.undo()
        replace_module.release_in_background(fd)
    _join_releases()
    assert not [link for link in _open_files() if link.startswith(str(target))]
    if kind == "link to a large file":
        assert (tmp_path / "elsewhere").read_bytes() == b"e" * size
