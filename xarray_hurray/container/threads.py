"""A process-wide thread pool that decodes the chunks of one read in parallel.

Decompression (zstd, lz4, zlib, blosc in numcodecs), checksums and the layout
permutation release the GIL for most of their work, so threads overlap them.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from itertools import islice
from typing import TypeVar

import numpy as np

from ..io.pool import SharedThreadPool

T = TypeVar("T")
R = TypeVar("R")


def pool_threads() -> int:
    """Threads of the decode pool: one per CPU."""
    return os.cpu_count() or 1


_shared_pool = SharedThreadPool(pool_threads(), "hurray-decode")
"""The decode pool of this process."""


SCRATCH_BYTES = 64 * 2**20
"""Largest buffer a thread keeps from chunk to chunk (see :func:`scratch`; larger
chunks are coded through buffers of their own)."""

_scratch = threading.local()
"""Each thread's chunk buffer (``buffer``)."""


def scratch(nbytes: int) -> np.ndarray:
    """A byte buffer of at least ``nbytes`` that this thread owns, for one chunk at a
    time: decompressed chunks land there before they are placed, and chunks to be
    compressed are gathered there, without a new allocation (and its page faults)
    per chunk.  Kept for the thread's next chunks up to :data:`SCRATCH_BYTES`."""
    found: np.ndarray | None = getattr(_scratch, "buffer", None)
    if found is not None and found.nbytes >= nbytes:
        return found
    buffer = np.empty(nbytes, dtype=np.uint8)
    if nbytes <= SCRATCH_BYTES:
        _scratch.buffer = buffer
    return buffer


def ordered_map(func: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
    """``func`` of each item, in item order, run on the shared pool.

    At most twice as many items as the pool has threads are in flight, so results
    are held only a little ahead of the consumer.  A single item runs in the
    calling thread.  An exception in ``func`` is raised when its result is
    reached; items not yet started are then dropped.
    """
    if len(items) < 2 or pool_threads() < 2:
        yield from map(func, items)
        return
    pool = _shared_pool()
    pending: deque[Future[R]] = deque()
    upcoming = iter(items)
    try:
        for item in upcoming:
            pending.append(pool.submit(func, item))
            if len(pending) >= 2 * pool_threads():
                break
        while pending:
            result = pending.popleft().result()
            for item in islice(upcoming, 1):
                pending.append(pool.submit(func, item))
            yield result
    finally:
        for future in pending:
            future.cancel()


def run_as_produced(tasks: Iterable[Callable[[], R]]) -> list[R]:
    """Run each task on the shared pool as soon as ``tasks`` yields it; the results,
    in that order, once all have run.

    ``tasks`` is consumed in the calling thread, so the tasks run while it waits for
    what the next ones need (the answers of a read still on their way).  An exception
    of ``tasks`` or of a task is raised; tasks not yet started are then cancelled.
    Without a second CPU the tasks run in the calling thread, in turn.
    """
    if pool_threads() < 2:
        return [task() for task in tasks]
    pool = _shared_pool()
    futures: list[Future[R]] = []
    try:
        for task in tasks:
            futures.append(pool.submit(task))
        return [future.result() for future in futures]
    finally:
        for future in futures:
            future.cancel()
