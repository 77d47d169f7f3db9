"""The engine of every write: a :class:`~xarray_hurray.write.plan.WritePlan` run on
Dask, with the local scheduler's threads or a distributed cluster, in bounded memory.

The engine opens the plan's sink, asks each part's encoder for its chunks in
placement order (at most ``window`` stored chunks per worker in flight, see
:mod:`xarray_hurray.write.encode`), hands them to the sink a run at a time and
commits; any failure aborts the sink, which leaves the target as it was.
"""

from __future__ import annotations

import contextlib
import os
import sys
from contextlib import AbstractContextManager
from typing import Any, cast

import dask
import dask.array as da
from dask.base import get_scheduler

from ..errors import HurrayValueError
from .encode import Schedule
from .plan import WritePlan
from .progress import ProgressBar

DEFAULT_WINDOW = 4
"""Encoded stored chunks in flight per Dask worker (at least one dask chunk each)."""


def check_window(window: object) -> int:
    """``window``, checked: an integer of at least 1 (not a bool).

    Raises
    ------
    ValueError
        For anything else.
    """
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        raise HurrayValueError(f"window must be an integer >= 1, got {window!r}")
    return window


def current_scheduler() -> Schedule:
    """The scheduler a dask array computes with here, as ``get_scheduler`` finds it.

    dask's ``get_scheduler`` imports ``distributed`` to look for a client: in a fresh
    process, a third of a second of a small write.  No client can exist where
    ``distributed`` was never imported, so then the configured scheduler, or dask
    arrays' own, is the answer without the import.
    """
    if "distributed" in sys.modules or dask.config.get("scheduler", None):
        return cast(Schedule, get_scheduler(cls=da.Array))
    return cast(Schedule, da.Array.__dask_scheduler__)


def distributed_client(schedule: Schedule) -> Any:
    """The ``dask.distributed`` client whose ``get`` ``schedule`` is, else None."""
    client = getattr(schedule, "__self__", None)
    return client if hasattr(client, "gather") else None


def worker_count(schedule: Schedule) -> int:
    """The threads that run the tasks of ``schedule``: those of the distributed
    cluster, else the local scheduler's."""
    nthreads = getattr(distributed_client(schedule), "nthreads", None)
    if callable(nthreads):
        return max(int(sum(nthreads().values())), 1)
    return int(dask.config.get("num_workers", None) or os.cpu_count() or 1)


def waiting_for_tasks() -> AbstractContextManager[Any]:
    """Inside a ``dask.distributed`` task, leave the worker's thread pool while the
    write waits for its chunk tasks, so they cannot starve; elsewhere, nothing."""
    # a worker has imported distributed: a process that has not is no worker, and
    # importing it only to find out would cost a fresh process's first write 0.3 s
    if "distributed" not in sys.modules:
        return contextlib.nullcontext()
    try:
        from distributed import get_worker, worker_client
    except ImportError:
        return contextlib.nullcontext()
    try:
        get_worker()
    except ValueError:
        return contextlib.nullcontext()
    return worker_client()


def run(plan: WritePlan, *, window: int = DEFAULT_WINDOW, progress: bool | None = None) -> None:
    """Encode the chunks of every part of ``plan`` and store them in its sink, which
    commits at the end.

    Parameters
    ----------
    plan
        The write.
    window
        Encoded chunks in flight per Dask worker.
    progress
        Draw a progress bar on standard error; ``None``: when it is a terminal.

    Raises
    ------
    ValueError
        For a window below 1.
    """
    check_window(window)
    total = sum(len(part.chunk_ids) for part in plan.parts)
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    with waiting_for_tasks():
        schedule = current_scheduler()
        workers = worker_count(schedule)
        try:
            with plan.open_sink() as sink:
                # drawn once the sink is open: a target that cannot be written fails
                # with its error alone
                bar = ProgressBar(f"writing {plan.name}", total) if show else None
                for part in plan.parts:
                    stream = part.chunks.encoded(part.source_ids, schedule, window, workers)
                    done = 0
                    for chunks in stream:
                        ids = part.chunk_ids[done : done + len(chunks)]
                        sink.write_chunks(part.name, ids, [data or None for data in chunks])
                        done += len(chunks)
                        if bar is not None:
                            bar.update(len(chunks), sum(map(len, chunks)))
                    # as the zip of ids and chunks once checked: a stream that ends
                    # early would leave chunks unwritten (read back as the fill)
                    if done != len(part.chunk_ids):
                        raise RuntimeError(
                            f"{done} of the {len(part.chunk_ids)} chunks of "
                            f"{part.name!r} were encoded"
                        )
        finally:
            if bar is not None:
                bar.close()
