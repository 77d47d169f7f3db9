"""The writer lock of an existing local file, which every write into it holds from
reading its base version to committing the next one."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def lock_file(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the exclusive writer lock of the existing file ``path``.

    The lock is ``flock(LOCK_EX)`` on the file itself: a second writer waits until the
    first one finishes.  A write replaces the file by a rename, so after waiting the
    lock may be held on a file no longer at ``path``; it is then taken again on the
    new one.  Locks are advisory (only writers of this package take them) and, over
    network file systems, only as reliable as the file system's ``flock``.

    Raises
    ------
    FileNotFoundError
        When there is no file at ``path``.
    NotImplementedError
        Where ``fcntl`` does not exist (Windows).
    """
    if fcntl is None:  # pragma: no cover - Windows
        raise NotImplementedError("changing an existing Hurray file needs fcntl.flock (POSIX)")
    while True:
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # the lock is on an inode: held only if path still names that inode
            held, current = os.fstat(fd), _stat_or_none(path)
            if current is not None and (held.st_dev, held.st_ino) == (
                current.st_dev,
                current.st_ino,
            ):
                yield
                return
        finally:
            os.close(fd)  # releases the lock


def _stat_or_none(path: str | os.PathLike[str]) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
