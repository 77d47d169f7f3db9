"""Writes that run out of room: a file size limit (``RLIMIT_FSIZE``, EFBIG) and a full
file system (a small tmpfs, ENOSPC), hit at points spread over everything each kind of
write puts on disk.  After every failure the file has its old length and bytes, reads
as the old version, no temporary file is left and the space is free again.

A commit's slot write failing before and after its first byte is hit the same way
(:func:`slot_attempts`), and a computation failing after, and before, the first bytes
reach the file shows what happens to an earlier write's uncommitted tail.

Each run out of room is a subprocess (:func:`attempts`, :func:`slot_attempts`): the
limit, and the mount in a private mount namespace, must not reach the test process."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import verify_file
from xarray_hurray.container.format import PREFIX, SLOT_SIZE
from xarray_hurray.write.sinks import compact
from xarray_hurray.write.sinks.append import WRITE_BUFFER, FileAppend

STEPS = 20
"""Time steps of the base file, and of each write: 256 KiB of float32 noise each, so
every write (5 MiB) needs more than one 4 MiB buffer of an in-place commit."""

ENCODING = {"v": {"chunks": (1, 128, 128), "codecs": None}}


def data(start: int, stop: int, seed: int = 0) -> xr.Dataset:
    """Steps ``start:stop`` of a deterministic dataset of noise, which does not compress."""
    values = np.random.default_rng(seed).random((stop, 256, 256), dtype="float32")
    return xr.Dataset(
        {"v": (("time", "y", "x"), values[start:])},
        coords={"time": pd.date_range("2024-01-01", periods=stop)[start:]},
    )


BASE = data(0, STEPS)

WRITES: dict[str, Callable[[Path], object]] = {
    # a new file over the old one, and where there was none
    "replace": lambda p: xh.to_hurray(data(0, STEPS, seed=1), p, encoding=ENCODING),
    "create": lambda p: xh.to_hurray(BASE, p, encoding=ENCODING),
    "append": lambda p: xh.to_hurray(data(STEPS, 2 * STEPS), p, append_dim="time"),
    "region": lambda p: xh.to_hurray(
        (data(0, STEPS) - 1).drop_vars("time"), p, region={"time": slice(0, STEPS)}
    ),
    "compact": compact,
}
"""Every kind of local write: a new file (streamed into a temporary file), the two
in-place commits of a file, and a rewrite."""

FRACTIONS = (0.0, 0.3, 0.6, 0.999)
"""Where in what a write puts on disk it runs out of room (of the bytes it adds to the
file, or of its temporary file); besides these, no room at all and one byte short."""


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def _free_bytes(directory: Path) -> int:
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


def attempts(directory: str, base: str, full_disk: str) -> None:
    """Run every write of :data:`WRITES` into a copy of ``base`` in ``directory`` while
    room runs out at each failure point; print one JSON line per attempt.

    The room is a file size limit, or, with ``full_disk`` ``"1"``, the free space of
    the file system of ``directory`` (a small tmpfs), filled but for that room."""
    here = Path(directory)
    target, scratch, filler = here / "x.hurray", here / "scratch.hurray", here / "filler"
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    for kind, write in WRITES.items():
        # what the write adds to the file, or the length of its temporary file
        target.unlink(missing_ok=True)  # room on the small file system
        empty = _free_bytes(here)
        shutil.copyfile(base, scratch)
        if kind == "create":
            scratch.unlink()
        before = scratch.stat().st_size if scratch.exists() else 0
        write(scratch)
        grown = scratch.stat().st_size - (before if kind in ("append", "region") else 0)
        scratch.unlink()
        # a rewrite's old version is freed with the write (by a thread of its own for
        # a large file, within moments), not when garbage is collected
        if full_disk == "1":  # the only file system no other process writes to
            deadline = time.monotonic() + 10
            while _free_bytes(here) != empty and time.monotonic() < deadline:
                time.sleep(0.01)
            assert _free_bytes(here) == empty, f"{kind} holds space it replaced"
        start = before if kind in ("append", "region") else 0
        rooms = sorted({0, *(int(f * grown) for f in FRACTIONS), grown - 1})
        for room in rooms:
            shutil.copyfile(base, target)
            if kind == "create":
                target.unlink()
            old = {"length": target.stat().st_size if target.exists() else None}
            old["digest"] = _digest(target)
            if full_disk == "1":
                # a tmpfs gives space by pages: leave `room` rounded down to one
                page = os.statvfs(here).f_frsize
                filler.write_bytes(bytes(_free_bytes(here) - room // page * page))
            else:
                resource.setrlimit(resource.RLIMIT_FSIZE, (start + room, hard))
            free = _free_bytes(here)
            try:
                write(target)
            except OSError as error:
                failure = errno.errorcode.get(error.errno or 0, str(error))
            else:
                failure = "none"
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
            reads_as_old = None
            if target.exists():
                with xr.open_dataset(target, engine="hurray") as ds:
                    reads_as_old = ds.load().identical(BASE)
            record: dict[str, Any] = {
                "kind": kind,
                "room": room,
                "failure": failure,
                "old": old,
                "length": target.stat().st_size if target.exists() else None,
                "digest": _digest(target),
                "reads_as_old": reads_as_old,
                "space_given_back": _free_bytes(here) == free,
                "files": sorted(p.name for p in here.iterdir() if p != filler),
            }
            print(json.dumps(record), flush=True)
            filler.unlink(missing_ok=True)


NEW_SLOT = PREFIX.size + SLOT_SIZE
"""Where the first commit into a file written once puts its slot: slot 1."""


def slot_attempts(directory: str, base: str) -> None:
    """Run the in-place commits of :data:`WRITES` into a copy of ``base`` (a file
    written once) in ``directory``, the file size limit lowered when the commit starts
    writing its new slot: below the slot (its first ``pwrite`` fails, writing
    nothing) or 20 bytes into it (a torn slot).  Then append for real.  Print one JSON
    line per attempt."""
    here = Path(directory)
    target = here / "x.hurray"
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = Path(base).read_bytes()
    for kind in ("append", "region"):
        for limit in (0, NEW_SLOT + 20):
            shutil.copyfile(base, target)

            def at_slot(frame: Any, event: str, arg: Any, limit: int = limit) -> None:
                # the real write then fails in the kernel, at exactly this point
                if event == "call" and frame.f_code is FileAppend.write_slot.__code__:
                    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))

            sys.setprofile(at_slot)
            try:
                WRITES[kind](target)
            except OSError as error:
                failure = errno.errorcode.get(error.errno or 0, str(error))
            else:
                failure = "none"
            finally:
                sys.setprofile(None)
                resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
            now = target.read_bytes()
            with xr.open_dataset(target, engine="hurray") as ds:
                reads_as_old = ds.load().identical(BASE)
            record: dict[str, Any] = {
                "kind": kind,
                "limit": limit,
                "failure": failure,
                "identical": now == old,
                "outside_slot_same": now[:NEW_SLOT] + now[NEW_SLOT + SLOT_SIZE : len(old)]
                == old[:NEW_SLOT] + old[NEW_SLOT + SLOT_SIZE :],
                "reads_as_old": reads_as_old,
                "tail": len(now) - len(old),
                "problems": verify_file(target),
            }
            WRITES["append"](target)  # the next commit, over what is left
            with xr.open_dataset(target, engine="hurray") as ds:
                record["next_commit_reads"] = ds.load().identical(data(0, 2 * STEPS))
            print(json.dumps(record), flush=True)


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.slow
def test_a_commit_whose_slot_write_fails_keeps_nothing_unless_the_slot_was_begun(tmp_path, base):
    old = base.read_bytes()
    assert old[NEW_SLOT : NEW_SLOT + SLOT_SIZE] == bytes(SLOT_SIZE)  # slot 1 unused
    code = "import sys, test_failing_writes as t; t.slot_attempts(*sys.argv[1:])"
    result = _run([sys.executable, "-c", code, str(tmp_path), str(base)])
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["kind"], r["limit"]) for r in records] == [
        (kind, limit) for kind in ("append", "region") for limit in (0, NEW_SLOT + 20)
    ]
    for record in records:
        assert record["failure"] == "EFBIG", record
        assert record["reads_as_old"] and record["next_commit_reads"], record
        if record["limit"] == 0:  # nothing of the slot written: everything cut off
            assert record["identical"] and record["problems"] == [], record
        else:  # a torn slot: the appended bytes stay beside it, as readers need
            assert record["tail"] > 0 and record["outside_slot_same"], record
            # verify names them, and nothing else
            [problem] = record["problems"]
            assert problem.startswith(f"{record['tail']} bytes after the end of the version")


def _job(directory: Path, base: Path, full_disk: bool) -> list[str]:
    code = "import sys, test_failing_writes as t; t.attempts(*sys.argv[1:])"
    return [sys.executable, "-c", code, str(directory), str(base), "1" if full_disk else "0"]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("base") / "base.hurray"
    xh.to_hurray(BASE, path, encoding=ENCODING)
    return path


def _check(records: list[dict[str, Any]], base: Path, failure: str, space: bool) -> None:
    """Every attempt failed with ``failure`` and left the file as it was."""
    length, digest = base.stat().st_size, _digest(base)
    assert {r["kind"] for r in records} == set(WRITES)
    assert len(records) >= len(WRITES) * len(FRACTIONS)
    # the commits fail in their first buffer of chunks, in a later one, and in the
    # index and metadata appended last (one byte short)
    assert max(r["room"] for r in records if r["kind"] == "append") > WRITE_BUFFER
    for record in records:
        kind = record["kind"]
        assert record["failure"] == failure, record
        if kind == "create":  # nothing was there, and nothing is
            assert record["files"] == [] and record["length"] is None, record
        else:
            assert record["old"] == {"length": length, "digest": digest}, record
            assert (record["length"], record["digest"]) == (length, digest), record
            assert record["reads_as_old"] is True and record["files"] == ["x.hurray"], record
        if space:
            assert record["space_given_back"], record


@pytest.mark.slow
def test_a_write_over_the_file_size_limit_keeps_nothing_it_wrote(tmp_path, base):
    result = _run(_job(tmp_path, base, full_disk=False))
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    _check(records, base, "EFBIG", space=False)
    # the last attempt (a rewrite) left the old version for a fresh process too
    assert verify_file(tmp_path / "x.hurray") == []
    with xr.open_dataset(tmp_path / "x.hurray", engine="hurray") as ds:
        xr.testing.assert_identical(ds.load(), BASE)


@pytest.mark.slow
def test_a_write_on_a_full_file_system_keeps_nothing_it_wrote_and_frees_its_space(tmp_path, base):
    # a 24 MiB tmpfs in a private mount namespace (of a new user namespace, so that
    # no privilege is needed where those are allowed), filled but for the room
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare(1) is not installed: no small file system to fill")
    mount = tmp_path / "small"
    mount.mkdir()
    script = 'mount -t tmpfs -o size=24m tmpfs "$0" && exec "$@"'
    # whether this machine lets us mount one at all, told apart from a failing job
    probe = _run([unshare, "-Urm", "sh", "-c", script, str(mount), "true"])
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {probe.stderr.strip()[-200:]}")
    result = _run([unshare, "-Urm", "sh", "-c", script, str(mount), *_job(mount, base, True)])
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    _check(records, base, "ENOSPC", space=True)


class Boom(Exception):
    pass


def _boom(block: np.ndarray) -> np.ndarray:
    raise Boom("failed while computing")


@pytest.mark.parametrize("reached", [True, False], ids=["after-4-MiB", "before-any-byte"])
def test_a_failed_commit_cuts_an_uncommitted_tail_only_once_it_wrote(tmp_path, base, reached):
    # the bytes of an earlier write that never committed lie after the version's end;
    # the failed commit appends over them from the version's end: 5 MiB of chunks
    # (a buffer flushed) before its computation fails, or nothing
    path = tmp_path / "x.hurray"
    old = base.read_bytes()
    tail = bytes(range(256)) * 40
    path.write_bytes(old + tail)
    new = xr.Dataset()
    encoding = {}
    if reached:  # written before the failing variable, as it comes first
        new["big"] = ("time", "y", "x"), data(0, STEPS, seed=2)["v"].values
        encoding = {"/new": {"big": {"codecs": None}}}
    # 128 KiB: not a small variable, which a new file would place first
    failing = da.zeros((256, 64), chunks=(128, 64)).map_blocks(_boom, dtype="f8")
    new["failing"] = ("k", "j"), failing
    tree = xr.DataTree.from_dict({"/new": new})
    with pytest.raises(Boom):
        xh.to_hurray(tree, path, mode="a", encoding=encoding)
    assert path.read_bytes() == (old if reached else old + tail)
    with xr.open_dataset(path, engine="hurray") as ds:
        xr.testing.assert_identical(ds.load(), BASE)
