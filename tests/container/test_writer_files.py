"""The files a write touches: its temporary file in every failure, the target's
kind, name length, link and permissions, and input refused before either exists."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

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


def test_sigterm_removes_the_temporary_file_and_still_ends_the_process(tmp_path):
    target = tmp_path / "x.hurray"
    code = """
        import sys, time
        import dask.array as da, xarray as xr, xarray_hurray as xh
        def slow(block):
            time.sleep(0.05)
            return block
        data = da.zeros((400, 64), chunks=(1, 64)).map_blocks(slow)
        xh.to_hurray(xr.Dataset({"v": (("t", "x"), data)}), sys.argv[1])
    """
    writer = run_python(code, target)
    deadline = time.monotonic() + 60
    while not any(tmp_path.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [p.name.endswith(".tmp") for p in tmp_path.iterdir()] == [True]
    writer.send_signal(signal.SIGTERM)
    writer.communicate(timeout=60)
    assert writer.returncode == -signal.SIGTERM  # the default action, as without us
    assert list(tmp_path.iterdir()) == []


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
