"""Streaming a dataset into a Hurray file with Dask.

Every stored chunk of a dask-backed variable is encoded (layout permutation and
codecs) by its own Dask task.  The encoded chunks come back to the writing process
in placement order, a window of ``window`` chunks per worker at a time, and are
appended to the file as they arrive; memory stays bounded however large the
dataset is.  Variables held in memory or in a lazy backend array are encoded
chunk by chunk in the writing process.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np
import xarray as xr
from dask._task_spec import DataNode
from dask.base import get_scheduler
from dask.core import flatten, get_deps, toposort
from dask.optimization import cull

from ..container import ChunkCodec, ContainerWriter, DatasetMeta, VariableMeta
from .progress import ProgressBar

DEFAULT_WINDOW = 4
"""Encoded chunks in flight per Dask worker."""

Schedule = Callable[..., Sequence[Any]]
"""A Dask scheduler's ``get(graph, keys)``."""


def check_alignment(name: Hashable, var: xr.Variable, chunks: Sequence[int]) -> None:
    """Check that every dask chunk of ``var`` is made of whole stored ``chunks``.

    Dask chunks that are multiples of the stored chunks are split by the write; a
    dask chunk that ends inside a stored chunk is refused, as ``to_zarr`` refuses
    dask chunks that overlap Zarr chunks.

    Raises
    ------
    ValueError
        Naming the variable, the dimension, the dask chunks and the stored chunk.
    """
    if var.chunks is None:
        return
    for dim, sizes, size in zip(var.dims, var.chunks, chunks, strict=True):
        ends = np.cumsum(sizes)[:-1]
        inside = np.flatnonzero(ends % size)
        if inside.size:
            k = int(inside[0])
            raise ValueError(
                f"variable {name!r}: dask chunks {tuple(sizes)} along {dim!r} do not line up "
                f"with the stored chunks of {size}: dask chunk {k} ends at {int(ends[k])}, "
                f"inside a stored chunk.  Rechunk to multiples of {size}, e.g. "
                f"ds.chunk({{{dim!r}: {size}}}), or set encoding['chunks'] to sizes that "
                "divide the dask chunks"
            )


def chunk_box(var: VariableMeta, chunk_id: int) -> tuple[slice, ...]:
    """The slices of ``var`` covered by its chunk ``chunk_id`` (row-major index)."""
    corner = np.unravel_index(chunk_id, var.grid_shape)
    return tuple(slice(i * c, (i + 1) * c) for i, c in zip(corner, var.chunks, strict=True))


def _encode_block(block: np.ndarray, codec: ChunkCodec) -> np.ndarray:
    cell = np.empty((1,) * block.ndim, dtype=object)
    cell.reshape(-1)[0] = codec.encode(block)
    return cell


class LocalChunks:
    """The chunks of a variable held in memory or in a lazy backend array, encoded
    one at a time in the writing process."""

    def __init__(self, var: xr.Variable, codec: ChunkCodec) -> None:
        self.var = var
        self.codec = codec

    def encoded(self, chunk_ids: np.ndarray, schedule: Schedule, batch: int) -> Iterator[bytes]:
        """The stored bytes of chunks ``chunk_ids``, in turn."""
        for chunk_id in chunk_ids.tolist():
            block = self.var[chunk_box(self.codec.variable, chunk_id)]
            yield self.codec.encode(np.asarray(block.values))


class DaskChunks:
    """The chunks of a dask-backed variable: one encode task per stored chunk.

    The graph is optimized and flattened once; each batch of chunks runs the part
    of it those chunks need.  Results that later batches use again (a reduction
    every chunk uses, a dask chunk split across batches) are kept, within
    :data:`KEEP_BYTES`, instead of being computed once per batch (see :class:`Reuse`).
    """

    def __init__(self, data: da.Array, var: VariableMeta) -> None:
        # a fresh description: the tasks need not carry the cached chunk placement
        codec = ChunkCodec(replace(var))
        ndim = len(var.chunks)
        encoded = data.rechunk(var.chunks).map_blocks(
            _encode_block,
            codec,
            dtype=object,
            chunks=(1,) * ndim,
            meta=np.empty((0,) * ndim, dtype=object),
            name=f"hurray-encode-{uuid.uuid4().hex}",
        )
        (encoded,) = dask.optimize(encoded)
        self.graph = dict(encoded.__dask_graph__())
        self.keys = list(flatten(encoded.__dask_keys__()))

    def encoded(self, chunk_ids: np.ndarray, schedule: Schedule, batch: int) -> Iterator[bytes]:
        """The stored bytes of chunks ``chunk_ids``, in turn, computed ``batch`` at a time."""
        batches = [
            [self.keys[i] for i in chunk_ids[start : start + batch].tolist()]
            for start in range(0, len(chunk_ids), batch)
        ]
        reuse = Reuse(self.graph, batches)
        graph = dict(self.graph)  # kept results replace their tasks here
        kept: dict[Any, int] = {}  # key -> bytes of its kept result
        for number, keys in enumerate(batches):
            needed, _ = cull(graph, keys)
            extra = [k for k in needed if k not in kept and reuse.worth_keeping(k, number)]
            results = schedule(needed, [*keys, *extra])
            for cell in results[: len(keys)]:
                yield cell.reshape(-1)[0]
            for key, value in zip(extra, results[len(keys) :], strict=True):
                graph[key] = DataNode(key, value)
                kept[key] = int(getattr(value, "nbytes", 0))
            # drop what no later batch uses, then what is needed last, down to the budget
            for key in sorted(kept, key=lambda k: reuse.next_use(k, number), reverse=True):
                if reuse.next_use(key, number) < len(batches) and sum(kept.values()) <= KEEP_BYTES:
                    break
                graph[key] = self.graph[key]
                del kept[key]


KEEP_BYTES = 256 * 2**20
"""Largest total size of intermediate results kept from one write batch for later ones."""


class Reuse:
    """Which intermediate results of a batched write later batches use again.

    Each batch runs only the part of the graph its chunks need, so a result that
    several batches need (a reduction every chunk uses, a dask chunk split into
    many stored chunks) would be computed once per batch.  A result is worth
    keeping when the next batch or at least two later batches use it directly.
    """

    def __init__(self, graph: Mapping[Any, Any], batches: Sequence[Sequence[Any]]) -> None:
        self.never = len(batches)
        _, self.dependents = get_deps(graph)
        self.first_use = dict.fromkeys(graph, self.never)
        for number, keys in enumerate(batches):
            for key in keys:
                self.first_use[key] = number
        for key in reversed(toposort(graph)):  # dependents before their dependencies
            for user in self.dependents[key]:
                self.first_use[key] = min(self.first_use[key], self.first_use[user])

    def _later_uses(self, key: Any, batch: int) -> set[int]:
        return {
            use
            for user in self.dependents[key]
            if batch < (use := self.first_use[user]) < self.never
        }

    def worth_keeping(self, key: Any, batch: int) -> bool:
        """Whether the result of ``key``, computed in ``batch``, should be kept."""
        later = self._later_uses(key, batch)
        return len(later) >= 2 or batch + 1 in later

    def next_use(self, key: Any, batch: int) -> int:
        """The first batch after ``batch`` that uses ``key`` directly, or the batch count."""
        return min(self._later_uses(key, batch), default=self.never)


def _worker_count(schedule: Schedule) -> int:
    client = getattr(schedule, "__self__", None)
    nthreads = getattr(client, "nthreads", None)
    if callable(nthreads):
        return max(sum(nthreads().values()), 1)
    return int(dask.config.get("num_workers", None) or os.cpu_count() or 1)


def _waiting_for_tasks() -> AbstractContextManager[Any]:
    """Inside a ``dask.distributed`` task, leave the worker's thread pool while the
    write waits for its chunk tasks, so they cannot starve; elsewhere, nothing."""
    try:
        from distributed import get_worker, worker_client
    except ImportError:
        return contextlib.nullcontext()
    try:
        get_worker()
    except ValueError:
        return contextlib.nullcontext()
    return worker_client()


class DaskWrite:
    """One write of a CF-encoded dataset, ready to run here or as a Dask task.

    Building it checks the dask chunks and builds the encode graphs; nothing is
    written until :meth:`run`.

    Parameters
    ----------
    path
        The file to create or replace.
    metadata
        The dataset description.
    variables
        The CF-encoded variables, by name.
    window
        Encoded chunks in flight per Dask worker.
    progress
        Draw a progress bar on standard error; ``None``: when it is a terminal.

    Raises
    ------
    ValueError
        For dask chunks that do not line up with the stored chunks, or a window
        below 1.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        metadata: DatasetMeta,
        variables: Mapping[Hashable, xr.Variable],
        *,
        window: int = DEFAULT_WINDOW,
        progress: bool | None = None,
    ) -> None:
        if not isinstance(window, int) or isinstance(window, bool) or window < 1:
            raise ValueError(f"window must be an integer >= 1, got {window!r}")
        self.path = Path(path)
        self.metadata = metadata
        self.window = window
        self.progress = progress
        self._chunks: dict[str, LocalChunks | DaskChunks] = {}
        for var in metadata.variables:
            source = variables[var.name]
            check_alignment(var.name, source, var.chunks)
            if isinstance(source.data, da.Array):
                self._chunks[var.name] = DaskChunks(source.data, var)
            else:
                self._chunks[var.name] = LocalChunks(source, ChunkCodec(var))

    def run(self) -> None:
        """Write the file: in a temporary file beside the target, moved into place
        only once complete; any failure leaves the target as it was."""
        total = sum(var.chunk_count for var in self.metadata.variables)
        show = sys.stderr.isatty() if self.progress is None else self.progress
        bar = None
        with _waiting_for_tasks():
            schedule = get_scheduler(cls=da.Array)
            batch = self.window * _worker_count(schedule)
            try:
                with ContainerWriter(self.path, self.metadata) as writer:
                    # drawn once the temporary file exists: a target that cannot be
                    # written fails with its error alone
                    bar = ProgressBar(f"writing {self.path.name}", total) if show else None
                    for var in self.metadata.variables:
                        stream = self._chunks[var.name].encoded(var.placement, schedule, batch)
                        for chunk_id, data in zip(var.placement.tolist(), stream, strict=True):
                            writer.write_chunk(var.name, chunk_id, data)
                            if bar is not None:
                                bar.update(1, len(data))
            finally:
                if bar is not None:
                    bar.close()
