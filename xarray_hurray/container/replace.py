"""Replacing what is at a path: a finished file or folder put in the place of the old
one, which is never removed before the new one is there (:func:`move_into_place`),
and the large file a write replaces freed by a thread of its own."""

from __future__ import annotations

import os
import shutil
import stat
import threading
import uuid
from pathlib import Path


def move_into_place(new: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Put ``new``, a finished file or directory beside ``target``, at ``target``.

    The one way a completed write takes the place of what was there.  A file over a
    file (or over nothing) is a single atomic rename: a reader opens the old file or
    the new one.  A rename cannot replace a directory, nor put one over a file, so
    there the old target is renamed aside first and deleted only once ``new`` is in
    place; should that second rename fail, the old target is put back.  No step
    deletes the old content before the new one is at ``target``.  The rename is made
    durable with a sync of the directory.
    """
    new, target = Path(new), Path(target)
    if not os.path.lexists(target) or not (os.path.isdir(target) or os.path.isdir(new)):
        replaced = hold_replaced(target)
        os.replace(new, target)
        if replaced is not None:
            release_in_background(replaced)
    else:
        aside = target.with_name(f".{target.name}.{uuid.uuid4().hex}.old")
        os.replace(target, aside)
        try:
            os.replace(new, target)
        except BaseException:
            os.replace(aside, target)
            raise
        if aside.is_dir() and not aside.is_symlink():
            shutil.rmtree(aside)
        else:
            aside.unlink()
    sync_directory(target.parent)


BACKGROUND_FREE_BYTES = 4 * 2**20
"""Smallest file replaced by a write whose freeing is left to a thread of its own
(see :func:`hold_replaced`); smaller ones are freed by the rename itself."""


def hold_replaced(target: Path) -> int | None:
    """A descriptor of the regular file of at least :data:`BACKGROUND_FREE_BYTES` at
    ``target``, opened so that the rename of a new version over it does not free it;
    None where there is no such file, it cannot be opened, or the system cannot
    rename over an open file (Windows).

    Freeing a file drops its cached pages and gives its blocks back: tens of
    milliseconds for a few hundred MiB, which the rename dropping its last name
    would spend before the write returns.  Held open, the file is freed when the
    descriptor is closed, by :func:`release_in_background`.  Until then its space
    stays allocated, as during the write.
    """
    if os.name != "posix":
        return None
    # no symbolic link followed (the rename replaces the link itself), and a FIFO
    # left at the target never blocks the open
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags)
    except OSError:
        return None
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_size >= BACKGROUND_FREE_BYTES:
        return fd
    os.close(fd)
    return None


def release_in_background(fd: int) -> None:
    """Close ``fd`` (from :func:`hold_replaced`) in a thread of its own, which frees
    the replaced file while the caller goes on; here, where no thread can start (at
    interpreter shutdown)."""
    thread = threading.Thread(target=os.close, args=(fd,), name="hurray-free-replaced")
    try:
        thread.start()
    except RuntimeError:
        os.close(fd)


def sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (POSIX); a no-op where directories
    cannot be opened (Windows)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
