"""The temporary file of a write: where it goes, its name, and that it does not outlive
the write: a failing write deletes it, and one that a signal, SIGKILL or a power loss
ended leaves it to the next write to the same target.

A write streams into ``.<target name>.<host>-<pid>-<token>.tmp`` beside the target,
the name cut so that it stays within the 255 bytes a file name may have.  A write
that fails deletes it.  A process that ends during a write leaves it: the next write
to the same target deletes the temporary files of processes of this host that no
longer run (:func:`remove_leftovers`), and those of version 0.1.0 writers left
untouched for a day.  No signal handler is installed for that: how a process answers
a signal is its application's choice, which a library must not change.  The scratch
directories of a write (:func:`scratch_directory`) follow the same rules in the
system's temporary folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
import stat
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from ..errors import HurrayValueError

NAME_MAX = 255
"""Bytes a file name may have on the file systems in common use."""

_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]
"""This host, in temporary names: a process id means something only on its host."""

_SUFFIX = re.compile(r"([0-9a-f]{6})-(\d{1,10})-[0-9a-f]{8}\.tmp")
_SUFFIX_BYTES = len(f"{_HOST}-{2**32}-{'0' * 8}.tmp")

_LEGACY_SUFFIX = re.compile(r"[0-9a-f]{32}\.tmp")
"""The temporary names of version 0.1.0: ``.<target name>.<32 hex digits>.tmp``,
without host or process id."""

LEGACY_AGE = 24 * 3600.0
"""Seconds a temporary file of a version 0.1.0 write must have been left untouched
before a write removes it: its name does not tell whether its writer still runs, but
a running writer changes its file."""


def _prefix(target: Path) -> str:
    """``.<name>``, the name cut so that a temporary name stays within
    :data:`NAME_MAX` bytes (a character cut in two keeps its bytes, as the file
    system sees names as bytes)."""
    return "." + os.fsdecode(os.fsencode(target.name)[: NAME_MAX - 2 - _SUFFIX_BYTES])


def temporary_path(target: Path) -> Path:
    """A new temporary name beside ``target`` for this process."""
    token = uuid.uuid4().hex[:8]
    return target.with_name(f"{_prefix(target)}.{_HOST}-{os.getpid()}-{token}.tmp")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (where that cannot be told: assume it does)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True


def leftovers(target: Path, legacy_age: float = LEGACY_AGE) -> list[Path]:
    """Temporary files of writes to ``target`` that did not finish (a writer killed
    with SIGKILL, or a power loss): those of processes of this host that no longer
    run, and those named as version 0.1.0 named them that were not modified for
    ``legacy_age`` seconds (0: all of them)."""
    prefix = _prefix(target) + "."
    legacy = f".{target.name}."
    found = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return []
    for entry in entries:
        if entry.name.startswith(legacy) and _LEGACY_SUFFIX.fullmatch(entry.name[len(legacy) :]):
            try:
                untouched = time.time() - entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            if untouched >= legacy_age:
                found.append(Path(entry.path))
            continue
        if entry.name.startswith(prefix) and _left_by_the_dead(entry.name[len(prefix) :]):
            found.append(Path(entry.path))
    return found


def _left_by_the_dead(suffix: str) -> bool:
    """Whether a temporary name ending in ``suffix`` (``<host>-<pid>-<token>.tmp``) is
    that of a process of this host that no longer runs (this process's own belong to
    writes still open in it)."""
    match = _SUFFIX.fullmatch(suffix)
    if match is None or match[1] != _HOST:
        return False
    pid = int(match[2])
    return pid != os.getpid() and not _alive(pid)


def remove_leftovers(target: Path) -> None:
    """Delete :func:`leftovers` of ``target``; one that cannot be deleted stays."""
    for path in leftovers(target):
        try:
            path.unlink()
        except OSError:
            pass


@contextlib.contextmanager
def scratch_directory(prefix: str) -> Iterator[str]:
    """A new directory in the system's temporary folder for the scratch files of one
    write, ``<prefix>-<host>-<pid>-<token>.tmp``, removed when the block ends.  The
    directories of that prefix left by processes of this host that no longer run (a
    writer ended by a signal) are removed first, as the next write to a target
    removes the temporary files of such writes."""
    parent = Path(tempfile.gettempdir())
    try:
        entries = list(os.scandir(parent))
    except OSError:
        entries = []
    for entry in entries:
        if entry.name.startswith(f"{prefix}-") and _left_by_the_dead(entry.name[len(prefix) + 1 :]):
            shutil.rmtree(entry.path, ignore_errors=True)
    token = uuid.uuid4().hex[:8]
    path = parent / f"{prefix}-{_HOST}-{os.getpid()}-{token}.tmp"
    path.mkdir(mode=0o700)
    try:
        yield os.fspath(path)
    finally:
        # a failed task leaves others of the computation running, which may still
        # write into the directory as it is removed: what is left goes with the next
        shutil.rmtree(path, ignore_errors=True)


def writable_target(path: str | os.PathLike[str]) -> Path:
    """The file a write to ``path`` replaces: the file a symbolic link points to (a
    write goes through the link and keeps it), else ``path``.

    Raises
    ------
    HurrayValueError
        When ``path`` is a FIFO, a device or a socket: not replaced by a file.
    """
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return target  # nothing there yet (or no directory: creating the file says so)
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        kind = "FIFO" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "device"
        raise HurrayValueError(
            f"{os.fspath(path)} is a {kind}, not a file: a Hurray file is not written over it",
            value=os.fspath(path),
        )
    return target


def keep_mode(target: Path, fd: int) -> None:
    """Give the new file ``fd`` the permission bits of the file it will replace."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISREG(mode) and hasattr(os, "fchmod"):
        os.fchmod(fd, stat.S_IMODE(mode))
