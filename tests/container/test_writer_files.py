"""The files a write touches: its temporary file in every failure, the target's
kind, name length, link and permissions, and input refused before either exists."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time

import dask.array as da
import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container.tempfiles import leftovers, temporary_path

DS = xr.Dataset({"v": (("y", "x"), np.arange(64.0).reshape(8, 8))})


def run_python(code: str, *args: object, **kwargs: object) -> subprocess.Popen:
    """Start ``code`` in a new interpreter that imports this worktree's package."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


@pytest.mark.slow
def test_a_write_failing_for_space_leaves_no_temporary_file(tmp_path):
    # a file size limit (EFBIG) stands for a full disk (ENOSPC): both fail the write
    # and then the flush that closing the file repeats
    target = tmp_path / "x.hurray"
    xh.to_hurray(DS, target)
    before = target.read_bytes()
    code = """
        import resource, signal, sys
        import numpy as np, xarray as xr, xarray_hurray as xh
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # fail with EFBIG, do not die
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
        big = xr.Dataset({"v": (("x",), np.random.default_rng(0).random(10**6))})
        try:
            xh.to_hurray(big, sys.argv[1], codecs=None)
        except OSError as err:
            print(err.errno, file=sys.stderr)
            sys.exit(3)
    """
    writer = run_python(code, target)
    _, err = writer.communicate(timeout=120)
    assert writer.returncode == 3, err
    assert int(err.split()[-1]) == 27  # EFBIG
    assert sorted(tmp_path.iterdir()) == [target] and target.read_bytes() == before


@pytest.mark.slow
def test_a_write_on_a_full_disk_fails_and_leaves_the_old_file_alone(tmp_path):
    # a real full disk: a 256 KiB tmpfs, mounted in a private mount namespace (of a new
    # user namespace, so that no privilege is needed where those are allowed)
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare(1) is not installed: no small file system to fill")
    mount = tmp_path / "small"
    mount.mkdir()
    code = """
        import errno, os, sys
        import numpy as np, xarray as xr, xarray_hurray as xh
        target = os.path.join(sys.argv[1], "x.hurray")
        xh.to_hurray(xr.Dataset({"v": (("x",), np.arange(100.0))}), target)
        before = open(target, "rb").read()
        noise = np.random.default_rng(0).random(2**16)  # 512 KiB that do not compress
        try:
            xh.to_hurray(xr.Dataset({"v": (("x",), noise)}), target, codecs=None)
        except OSError as err:
            same = open(target, "rb").read() == before
            print(err.errno == errno.ENOSPC, os.listdir(sys.argv[1]), same)
    """
    script = 'mount -t tmpfs -o size=256k tmpfs "$0" && exec "$1" -c "$2" "$0"'
    result = subprocess.run(
        [unshare, "-Urm", "sh", "-c", script, mount, sys.executable, textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
        timeout=120,
    )
    if result.returncode != 0 and not result.stdout:
        pytest.skip(f"cannot mount a small file system here: {result.stderr.strip()[-200:]}")
    assert result.stdout.split() == ["True", "['x.hurray']", "True"], result.stderr


def test_a_write_removes_what_dead_writers_of_its_target_left(tmp_path):
    target = tmp_path / "x.hurray"
    dead = run_python("pass")
    dead.communicate(timeout=60)
    ours = temporary_path(target)
    left = ours.with_name(ours.name.replace(f"-{os.getpid()}-", f"-{dead.pid}-"))
    running = ours.with_name(ours.name.replace(f"-{os.getpid()}-", f"-{os.getppid()}-"))
    other = temporary_path(tmp_path / "y.hurray")
    for path in (left, running, other):
        path.write_bytes(b"partial")
    assert leftovers(target) == [left]
    xh.to_hurray(DS, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [target.name, running.name, other.name]
    )


@pytest.mark.slow
@pytest.mark.parametrize("thread", ["main", "other"])
def test_sigterm_ends_a_write_as_without_the_package_and_the_next_write_removes_its_file(
    tmp_path, thread
):
    # no handler of the package: SIGTERM takes its default action, ending the process,
    # from a write in the main thread or in another; the temporary file it leaves is
    # removed by the next write to the target, as after SIGKILL
    target = tmp_path / "x.hurray"
    code = """
        import sys, threading, time
        import dask.array as da, xarray as xr, xarray_hurray as xh
        def slow(block):
            time.sleep(0.05)
            return block
        data = da.zeros((400, 64), chunks=(1, 64)).map_blocks(slow)
        ds = xr.Dataset({"v": (("t", "x"), data)})
        if sys.argv[2] == "main":
            xh.to_hurray(ds, sys.argv[1])
        else:
            writer = threading.Thread(target=xh.to_hurray, args=(ds, sys.argv[1]))
            writer.start()
            writer.join()
    """
    writer = run_python(code, target, thread)
    deadline = time.monotonic() + 60
    while not any(tmp_path.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.02)
    writer.send_signal(signal.SIGTERM)
    writer.communicate(timeout=60)
    assert writer.returncode == -signal.SIGTERM  # the default action
    (left,) = tmp_path.iterdir()
    assert left.name.startswith(".x.hurray.") and leftovers(target) == [left]
    xh.to_hurray(DS, target)
    assert list(tmp_path.iterdir()) == [target]


def test_a_write_leaves_the_sigterm_handler_of_the_application_alone(tmp_path):
    """The handler that the application installed is the process's during the write
    (seen from inside a task of it) and after it."""
    seen = []

    def handler(signum: int, frame: object) -> None:
        pass  # never called: no signal is sent

    def task(block: np.ndarray) -> np.ndarray:
        seen.append(signal.getsignal(signal.SIGTERM))
        return block

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        data = da.zeros((4, 8), chunks=(1, 8)).map_blocks(task)
        xh.to_hurray(xr.Dataset({"v": (("t", "x"), data)}), tmp_path / "x.hurray")
        assert seen and all(one is handler for one in seen)
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_write_removes_what_0_1_0_writers_left_a_day_ago(tmp_path):
    # 0.1.0 named temporary files .<name>.<32 hex digits>.tmp, without a process id:
    # one untouched for a day is removed; a fresh one may belong to a running writer
    target = tmp_path / "x.hurray"
    old, fresh = (tmp_path / f".x.hurray.{digit * 32}.tmp" for digit in "ab")
    other = tmp_path / f".y.hurray.{'c' * 32}.tmp"
    for path in (old, fresh, other):
        path.write_bytes(b"partial")
    day_ago = time.time() - 24 * 3600 - 60
    os.utime(old, (day_ago, day_ago))
    assert leftovers(target) == [old]
    assert sorted(leftovers(target, legacy_age=0)) == [old, fresh]
    xh.to_hurray(DS, target)
    assert sorted(tmp_path.iterdir()) == sorted([target, fresh, other])


@pytest.mark.parametrize("length", [218, 240, 255])
def test_the_longest_file_names_can_be_written(tmp_path, length):
    for char in ("a", "é"):  # one byte, two bytes per character
        name = (char * length)[: length - len(".hurray")] + ".hurray"
        while len(os.fsencode(name)) > 255:
            name = name[1:]
        xh.to_hurray(DS, tmp_path / name)
        with xr.open_dataset(tmp_path / name, engine="hurray") as out:
            xr.testing.assert_identical(out.load(), DS)
    assert all(not p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_a_write_goes_through_a_symlink_and_keeps_permissions(tmp_path):
    real = tmp_path / "real.hurray"
    xh.to_hurray(DS * 2, real)
    os.chmod(real, 0o600)
    link = tmp_path / "link.hurray"
    link.symlink_to(real)
    xh.to_hurray(DS, link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    with xr.open_dataset(real, engine="hurray") as out:
        xr.testing.assert_identical(out.load(), DS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.hurray", "real.hurray"]


@pytest.mark.slow
def test_special_files_are_neither_replaced_nor_waited_for(tmp_path):
    fifo = tmp_path / "pipe.hurray"
    os.mkfifo(fifo)
    with pytest.raises(xh.HurrayValueError, match="is a FIFO, not a file"):
        xh.to_hurray(DS, fifo)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    with pytest.raises(xh.HurrayValueError, match="not a regular file"):
        xr.open_dataset(fifo, engine="hurray")  # returns at once: no writer needed
    verify = run_python(
        "from xarray_hurray.cli import main; import sys; sys.exit(main(['verify', sys.argv[1]]))",
        fifo,
    )
    _, err = verify.communicate(timeout=60)
    assert verify.returncode == 2 and "not a regular file" in err
    with pytest.raises(xh.HurrayValueError, match="is a device"):
        xh.to_hurray(DS, "/dev/null")


@pytest.mark.parametrize(
    ("codecs", "match"),
    [
        ({"id": "zlib", "level": 99}, "invalid zlib codec configuration"),
        ({"id": "blosc", "cname": "nope"}, "invalid blosc codec configuration"),
        ({"id": "zstd", "level": "x"}, "invalid zstd codec configuration"),
    ],
)
def test_bad_codec_settings_fail_before_any_file_exists(tmp_path, codecs, match):
    with pytest.raises(xh.HurrayValueError, match=match):
        xh.to_hurray(DS, tmp_path / "x.hurray", codecs=codecs)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "text",
    [np.array(["a", "\ud800"], dtype=object), np.array(["a", "\udcff"], dtype="U2")],
)
def test_text_that_is_not_unicode_fails_before_any_file_exists(tmp_path, text):
    with pytest.raises(xh.HurrayValueError, match=r"lone surrogate|not a Unicode scalar"):
        xh.to_hurray(xr.Dataset({"s": (("k",), text)}), tmp_path / "x.hurray")
    assert list(tmp_path.iterdir()) == []
