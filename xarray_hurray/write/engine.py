"""The engine of every write: a :class:`~xarray_hurray.write.plan.WritePlan` run on
Dask, with the local scheduler's threads or a distributed cluster, in bounded memory.

The engine opens the plan's sink and delivers the chunks the way the sink takes
them (see :mod:`xarray_hurray.container.sink`), then commits; any failure aborts the
sink, which leaves the target as it was:

- **gathered**: it asks each part's encoder for its chunks in placement order (at
  most ``window`` stored chunks per worker in flight, see
  :mod:`xarray_hurray.write.encode`) and hands them to the sink a run at a time;
- **in the tasks**, for a :class:`~xarray_hurray.container.sink.TaskSink`: one
  task per run, depending on the encode tasks of its chunks (one per dask chunk),
  joins them and writes the run with the sink's run writer where they were
  encoded; the engine computes the run tasks (on a cluster, as futures when a
  progress bar counts them) and hands what they return back to the sink.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, cast

import dask
import dask.array as da
import numpy as np
from dask.base import compute, get_scheduler
from dask.delayed import Delayed, delayed

from ..container.sink import ChunkSink, RunReceipt, TaskRuns, TaskSink
from ..errors import HurrayValueError
from .encode import DaskChunks, Schedule
from .plan import WritePart, WritePlan
from .progress import KeysDone, ProgressBar

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


def execute(plan: WritePlan, *, window: int = DEFAULT_WINDOW, progress: bool | None = None) -> None:
    """Encode the chunks of every part of ``plan`` and store them in its sink, which
    commits at the end.

    Parameters
    ----------
    plan
        The write.
    window
        Encoded chunks in flight per Dask worker (for a sink that gathers them).
    progress
        Draw a progress bar on standard error; ``None``: when it is a terminal.

    Raises
    ------
    ValueError
        For a window below 1.
    """
    check_window(window)
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    with waiting_for_tasks():
        schedule = current_scheduler()
        try:
            with plan.open_sink() as sink:
                if isinstance(sink, TaskSink):
                    runs = sink.runs_in_tasks()
                    sink.written(compute_runs(run_tasks(plan.parts, runs), schedule, runs, show))
                    return
                assert isinstance(sink, ChunkSink)  # the two protocols of a sink
                # drawn once the sink is open: a target that cannot be written fails
                # with its error alone
                total = sum(len(part.chunk_ids) for part in plan.parts)
                bar = ProgressBar(f"writing {plan.name}", total) if show else None
                gather(plan, sink, schedule, window, bar)
        finally:
            if bar is not None:
                bar.close()


def gather(
    plan: WritePlan, sink: ChunkSink, schedule: Schedule, window: int, bar: ProgressBar | None
) -> None:
    """Hand the encoded chunks of every part of ``plan`` to ``sink.write_chunks``, in
    the plan's order, counting them on ``bar``."""
    workers = worker_count(schedule)
    for part in plan.parts:
        stream = part.encoder.encoded(part.box_ids, schedule, window, workers)
        done = 0
        for run in stream:
            chunks = run.chunks
            ids = part.chunk_ids[done : done + len(chunks)]
            sink.write_chunks(part.name, ids, [data or None for data in chunks], run.crcs)
            done += len(chunks)
            if bar is not None:
                bar.update(len(chunks), sum(map(len, chunks)))
        # as the zip of ids and chunks once checked: a stream that ends early would
        # leave chunks unwritten (read back as the fill)
        if done != len(part.chunk_ids):
            raise RuntimeError(
                f"{done} of the {len(part.chunk_ids)} chunks of {part.name!r} were encoded"
            )


def join_run(
    writer: Callable[[int, Sequence[bytes], Sequence[int]], RunReceipt],
    number: int,
    picks: np.ndarray,
    *cells: np.ndarray,
) -> RunReceipt:
    """The task of one run: its chunks' stored bytes and checksums, picked from the
    results of the encode tasks, written by the sink's run ``writer`` as run ``number``.

    Parameters
    ----------
    writer
        The sink's ``TaskRuns.write_run``.
    number
        The run.
    picks
        One row per chunk of the run, in placement order: which of ``cells`` holds
        it and its index in that cell's list.
    cells
        Results of the encode tasks: each a one-element object block holding the
        :class:`~xarray_hurray.container.chunk.EncodedRun` of the chunks of one dask
        chunk (``b""``: left out).
    """
    runs = [cell.reshape(-1)[0] for cell in cells]
    picked = picks.tolist()
    blobs = [runs[i].chunks[k] for i, k in picked]
    return writer(number, blobs, [runs[i].crcs[k] for i, k in picked])


def run_tasks(parts: Sequence[WritePart], runs: TaskRuns[Any]) -> list[Delayed]:
    """One task per run of ``runs``, each depending on the encode tasks (one per dask
    chunk) of its chunks.

    Raises
    ------
    ValueError
        For a part whose chunks are not encoded by Dask tasks, or runs that do not
        cover the chunks of ``parts`` exactly.
    """
    # every chunk in placement order: its encode task and index in that task's list
    cells: list[Delayed] = []
    local: list[np.ndarray] = []
    for part in parts:
        if not isinstance(part.encoder, DaskChunks):
            raise HurrayValueError(
                f"the chunks of {part.name!r} are encoded in the writing process; a sink "
                "whose runs are written in the tasks takes dask-backed parts only"
            )
        block, index = part.encoder.blocks.locate(part.box_ids)
        base = len(cells)
        cells.extend(part.encoder.cells.to_delayed(optimize_graph=False).reshape(-1).tolist())
        local.append(np.stack([block + base, index], axis=1))
    picks = np.concatenate([np.zeros((0, 2), np.int64), *local])
    if int(runs.cuts[-1]) != len(picks):
        raise HurrayValueError(
            f"runs of {int(runs.cuts[-1])} chunks for a write of {len(picks)} chunks"
        )
    prefix = f"hurray-run-{uuid.uuid4().hex}"
    tasks = []
    for k in range(runs.count):
        rows = picks[runs.cuts[k] : runs.cuts[k + 1]]
        used, inverse = np.unique(rows[:, 0], return_inverse=True)
        tasks.append(
            delayed(join_run, pure=False)(
                runs.write_run,
                k,
                np.stack([inverse.reshape(-1), rows[:, 1]], axis=1),
                *(cells[b] for b in used.tolist()),
                dask_key_name=(prefix, k),
            )
        )
    return tasks


def compute_runs(
    tasks: Sequence[Delayed], schedule: Schedule, runs: TaskRuns[Any], show: bool
) -> list[Any]:
    """The results of the run ``tasks``, in order, counted on a progress bar as they
    come when ``show``: from the futures of a distributed client, else from the
    local scheduler's callbacks.  The graphs were optimized when the encode tasks
    were made."""
    if not show:
        return list(compute(*tasks, optimize_graph=False, scheduler=schedule))
    bar = ProgressBar(runs.label, len(tasks), unit=runs.unit)
    try:
        client = distributed_client(schedule)
        if client is not None:
            from distributed import as_completed

            futures = client.compute(list(tasks), optimize_graph=False)
            for future in as_completed(futures):  # type: ignore[no-untyped-call]
                bar.update(1, future.result().length)
            return list(client.gather(futures))
        with KeysDone([task.key for task in tasks], bar):
            return list(compute(*tasks, optimize_graph=False, scheduler=schedule))
    finally:
        bar.close()
