"""Thread pools shared by a process, made on first use."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor


class SharedThreadPool:
    """A thread pool shared by the process, made on first use.

    A forked child makes its own: threads do not fork, and the pool of the parent,
    whose idle threads the child does not have, would queue work that never runs.

    Parameters
    ----------
    threads
        The threads of the pool.
    name
        The prefix of their names.
    """

    def __init__(self, threads: int, name: str) -> None:
        self.threads = threads
        self.name = name
        self._pool: ThreadPoolExecutor | None = None
        self._pid = -1
        self._lock = threading.Lock()

    def __call__(self) -> ThreadPoolExecutor:
        """The pool of this process."""
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix=self.name)
                self._pid = os.getpid()
            return self._pool
