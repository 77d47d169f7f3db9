"""Streaming a dataset into a Hurray file with Dask.

Each dask chunk of a dask-backed variable is encoded (layout permutation and
codecs of every stored chunk it holds) by one Dask task, so the graph and the
scheduling cost grow with the dask chunks, not with the stored chunks.  The
encoded chunks come back to the writing process in placement order, about
``window`` stored chunks per worker at a time (at least one dask chunk per
worker), and are appended to the file as they arrive; memory stays bounded
however large the dataset is.  Variables held in memory or in a lazy backend
array are encoded chunk by chunk in the writing process.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import math
import os
import sys
import uuid
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, cast

import dask
import dask.array as da
import numpy as np
import xarray as xr
from dask.base import get_scheduler, optimize
from dask.core import flatten, get_deps, toposort
from dask.optimization import cull

from ..container import ChunkCodec, ContainerWriter, DatasetMeta, VariableMeta
from ..container.writer import PLACEMENT_SLICE
from ..errors import HurrayValueError
from .compat import DataNode
from .progress import ProgressBar

DEFAULT_WINDOW = 4
"""Encoded stored chunks in flight per Dask worker (at least one dask chunk each)."""

Schedule = Callable[..., Sequence[Any]]
"""A Dask scheduler's ``get(graph, keys)``."""


def check_alignment(
    name: Hashable, var: xr.Variable, chunks: Sequence[int], start: Sequence[int] | None = None
) -> None:
    """Check that every dask chunk of ``var``, placed at ``start`` in the stored variable
    (its origin by default), ends where a stored chunk ends.

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
    start = start or (0,) * len(chunks)
    for dim, sizes, size, first in zip(var.dims, var.chunks, chunks, start, strict=True):
        ends = first + np.cumsum(sizes)[:-1]
        inside = np.flatnonzero(ends % size)
        if inside.size:
            k = int(inside[0])
            raise HurrayValueError(
                f"variable {name!r}: dask chunks {tuple(sizes)} along {dim!r} do not line up "
                f"with the stored chunks of {size}: dask chunk {k} ends at {int(ends[k])}, "
                f"inside a stored chunk.  Rechunk to multiples of {size}, e.g. "
                f"ds.chunk({{{dim!r}: {size}}}), or set encoding['chunks'] to sizes that "
                "divide the dask chunks"
                + (
                    f" (the data goes at {first}: its first dask chunk must hold "
                    f"{size - first % size} plus a multiple of {size})"
                    if first % size
                    else ""
                )
            )


def aligned_chunks(
    var: xr.Variable, chunks: Sequence[int], start: Sequence[int] | None = None
) -> xr.Variable:
    """``var``, its dask chunks regrouped so that each ends where a stored chunk ends
    (placed at ``start`` in the stored variable; its origin by default), as
    :func:`check_alignment` wants them: each boundary inside a stored chunk moves to
    that chunk's end, so no dask chunk grows by more than one stored chunk.  Data
    held otherwise is returned as it is."""
    if var.chunks is None:
        return var
    start = start or (0,) * len(chunks)
    regrouped = {}
    for dim, sizes, size, first in zip(var.dims, var.chunks, chunks, start, strict=True):
        ends = first + np.cumsum(sizes)
        last = int(ends[-1]) if len(ends) else first
        # boundaries rounded up to the grid, the end kept where it is
        cuts = np.unique(np.minimum(-(-ends[:-1] // size) * size, last))
        bounds = [first, *cuts[cuts > first].tolist(), last]
        regrouped[dim] = tuple(int(b - a) for a, b in itertools.pairwise(bounds) if b > a)
    return var.chunk(regrouped)


def chunk_box(var: VariableMeta, chunk_id: int) -> tuple[slice, ...]:
    """The slices of ``var`` covered by its chunk ``chunk_id`` (row-major index)."""
    corner = np.unravel_index(chunk_id, var.grid_shape)
    return tuple(slice(i * c, (i + 1) * c) for i, c in zip(corner, var.chunks, strict=True))


def stored_bytes(codec: ChunkCodec, block: np.ndarray, write_empty: bool) -> bytes:
    """The stored bytes of chunk ``block``; ``b""`` (not stored: a missing chunk) for a
    chunk of the fill value alone, unless ``write_empty`` (zarr's
    ``write_empty_chunks``).  A stored chunk always has at least one byte."""
    if not write_empty and codec.is_fill(block):
        return b""
    return codec.encode(block)


def _encode_stored_chunks(block: np.ndarray, codec: ChunkCodec, write_empty: bool) -> np.ndarray:
    """The stored bytes of every stored chunk of a dask ``block``, in row-major order
    (``b""`` for chunks left out, see :func:`stored_bytes`).

    The block starts on a stored-chunk boundary (see :func:`check_alignment`); its last
    chunks may be cut short at the array's edge.  One task per dask chunk, however many
    stored chunks it holds: the graph and the scheduling cost do not grow with them.
    """
    # map_blocks wants an array per block: one object cell holding the list (numpy
    # would make a list of bytes into an array of its own)
    cell = np.empty((1,) * block.ndim, dtype=object)
    cell.reshape(-1)[0] = codec.encode_chunks(block, write_empty)
    return cell


class LocalChunks:
    """The chunks of a variable held in memory or in a lazy backend array, encoded
    in the writing process: from memory a run at a time on the decode pool's
    threads (:meth:`ChunkCodec.encode_many`), from a lazy array one at a time."""

    def __init__(self, var: xr.Variable, codec: ChunkCodec, write_empty: bool = False) -> None:
        # in memory: slice the numpy array itself, much faster per chunk than xarray
        self.data = var.data if isinstance(var.data, np.ndarray) else var
        self.codec = codec
        self.write_empty = write_empty

    def encoded(
        self, chunk_ids: np.ndarray, schedule: Schedule, window: int, workers: int
    ) -> Iterator[list[bytes]]:
        """The stored bytes of chunks ``chunk_ids`` (``b""``: left out), in turn, in
        runs of a few hundred KiB."""
        if isinstance(self.data, np.ndarray):
            yield from self.codec.encode_many(self.data, chunk_ids, self.write_empty)
            return
        run: list[bytes] = []
        held = 0
        for chunk_id in chunk_ids.tolist():
            block = self.data[chunk_box(self.codec.variable, chunk_id)]
            run.append(stored_bytes(self.codec, block.values, self.write_empty))
            held += len(run[-1])
            if held >= RUN_BYTES:
                yield run
                run, held = [], 0
        if run:
            yield run


RUN_BYTES = 1 << 20
"""Encoded bytes of chunks from a lazy array handed to the writer at a time."""


class BlockMap:
    """Where the stored chunks of a variable lie among its dask chunks.

    Parameters
    ----------
    dask_chunks
        The dask chunk sizes along each axis, each a whole number of stored chunks
        except at the array's end (see :func:`check_alignment`).
    chunks
        The stored chunk shape.
    """

    def __init__(self, dask_chunks: Sequence[Sequence[int]], chunks: Sequence[int]) -> None:
        self._starts: list[np.ndarray] = []  # first stored chunk of each dask chunk, per axis
        self._counts: list[np.ndarray] = []  # stored chunks in each dask chunk, per axis
        for sizes, size in zip(dask_chunks, chunks, strict=True):
            sizes_a = np.asarray(sizes, dtype=np.int64)
            self._starts.append(np.concatenate(([0], np.cumsum(sizes_a)[:-1])) // size)
            self._counts.append(-(-sizes_a // size))
        self.grid_shape = tuple(int(c.sum()) for c in self._counts)
        self.block_count = math.prod(len(s) for s in self._starts)

    def locate(self, chunk_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The dask chunk (row-major index) holding each stored chunk of ``chunk_ids``,
        and the stored chunk's row-major index among those of its dask chunk."""
        block = np.zeros(len(chunk_ids), dtype=np.int64)
        local = np.zeros(len(chunk_ids), dtype=np.int64)
        if not self.grid_shape:  # a scalar: one chunk in one dask chunk
            return block, local
        coords = np.unravel_index(chunk_ids, self.grid_shape)
        for coord, starts, counts in zip(coords, self._starts, self._counts, strict=True):
            # the last dask chunk starting at or before the coordinate holds it; the
            # indices accumulate row-major, axis by axis
            b = np.searchsorted(starts, coord, side="right") - 1
            block = block * len(starts) + b
            local = local * counts[b] + (coord - starts[b])
        return block, local


class DaskChunks:
    """The chunks of a dask-backed variable: one encode task per dask chunk.

    Each task encodes every stored chunk of its dask chunk and returns their bytes,
    so the graph has one task more per dask chunk whatever the number of stored
    chunks.  The tasks run in batches, in the order in which placement first needs
    their dask chunks; each batch runs the part of the graph it needs.  Results that
    later batches use again (a reduction every chunk uses) are kept, within
    :data:`KEEP_BYTES`, instead of being computed once per batch (see :class:`Reuse`).
    """

    def __init__(self, data: da.Array, var: VariableMeta, write_empty: bool = False) -> None:
        # a fresh description: the tasks need not carry the cached chunk placement
        codec = ChunkCodec(replace(var))
        ndim = len(var.chunks)
        lazy: Any = data  # dask's map_blocks is typed for arrays, not functions of them
        encoded = lazy.map_blocks(
            _encode_stored_chunks,
            codec,
            write_empty,
            dtype=object,
            chunks=(1,) * ndim,
            meta=np.empty((0,) * ndim, dtype=object),
            name=f"hurray-encode-{uuid.uuid4().hex}",
        )
        (encoded,) = optimize(encoded)
        self.graph = dict(encoded.__dask_graph__())
        self.keys = list(flatten(encoded.__dask_keys__()))
        self.blocks = BlockMap(data.chunks, var.chunks)

    def _slices(self, chunk_ids: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, len(chunk_ids), PLACEMENT_SLICE):
            yield self.blocks.locate(chunk_ids[start : start + PLACEMENT_SLICE])

    def encoded(
        self, chunk_ids: np.ndarray, schedule: Schedule, window: int, workers: int
    ) -> Iterator[list[bytes]]:
        """The stored bytes of chunks ``chunk_ids`` (``b""``: left out), in turn, in
        runs of consecutive chunks from one dask chunk.

        The dask chunks holding them are computed in batches, each once its first
        stored chunk is due: at least ``workers`` dask chunks (one per worker) and
        ``window * workers`` stored chunks per batch, so dask chunks of one stored
        chunk each run ``window * workers`` at a time, and large ones one per worker.
        """
        count = self.blocks.block_count
        left = np.zeros(count, dtype=np.int64)  # chunks of each dask chunk not yet given
        first = np.full(count, len(chunk_ids), dtype=np.int64)
        for start, (block, _) in zip(
            range(0, len(chunk_ids), PLACEMENT_SLICE), self._slices(chunk_ids), strict=True
        ):
            left += np.bincount(block, minlength=count)
            used, at = np.unique(block, return_index=True)
            first[used] = np.minimum(first[used], at + start)
        # dask chunks by first use; those no chunk uses (first == len) sort last, cut off
        order = np.argsort(first, kind="stable")[: int(np.count_nonzero(left))].tolist()
        batches: list[list[int]] = [[]]
        held = 0  # stored chunks of the last batch
        for b in order:
            if len(batches[-1]) >= workers and held >= window * workers:
                batches.append([])
                held = 0
            batches[-1].append(b)
            held += int(left[b])
        results = self._batches(batches, schedule)
        pending: dict[int, list[bytes | None]] = {}
        remaining = left.tolist()
        for block, local in self._slices(chunk_ids):
            # consecutive chunks of one dask chunk go out as one run
            cuts = [0, *(np.flatnonzero(np.diff(block)) + 1).tolist(), len(block)]
            blocks, locals_ = block[cuts[:-1]].tolist(), local.tolist()
            for b, start, stop in zip(blocks, cuts[:-1], cuts[1:], strict=True):
                while b not in pending:  # the next batch holds it: first-use order
                    pending.update(next(results))
                parts = pending[b]
                run = [parts[k] for k in locals_[start:stop]]
                # handed over once: the references are dropped so that the bytes go
                # as soon as the writer has them, and a dask chunk's list when all went
                for k in locals_[start:stop]:
                    parts[k] = None
                remaining[b] -= stop - start
                if not remaining[b]:
                    del pending[b]
                yield run

    def _batches(
        self, batches: Sequence[Sequence[int]], schedule: Schedule
    ) -> Iterator[dict[int, list[bytes | None]]]:
        """The encoded stored chunks of each batch of dask chunks, batch by batch."""
        key_batches = [[self.keys[b] for b in blocks] for blocks in batches]
        reuse = Reuse(self.graph, key_batches)
        graph = dict(self.graph)  # kept results replace their tasks here
        kept: dict[Any, int] = {}  # key -> bytes of its kept result
        for number, (blocks, keys) in enumerate(zip(batches, key_batches, strict=True)):
            needed, _ = cull(graph, keys)
            extra = [k for k in needed if k not in kept and reuse.worth_keeping(k, number)]
            results = schedule(needed, [*keys, *extra])
            yield {
                b: list(cell.reshape(-1)[0])
                for b, cell in zip(blocks, results[: len(keys)], strict=True)
            }
            for key, value in zip(extra, results[len(keys) :], strict=True):
                graph[key] = DataNode(key, value)
                kept[key] = int(getattr(value, "nbytes", 0))
            # drop what no later batch uses, then what is needed last, down to the budget
            total = sum(kept.values())
            for key in sorted(kept, key=lambda k: reuse.next_use(k, number), reverse=True):
                if reuse.next_use(key, number) < len(batches) and total <= KEEP_BYTES:
                    break
                graph[key] = self.graph[key]
                total -= kept.pop(key)


KEEP_BYTES = 256 * 2**20
"""Largest total size of intermediate results kept from one write batch for later ones."""


class Reuse:
    """Which intermediate results of a batched write later batches use again.

    Each batch runs only the part of the graph its chunks need, so a result that
    several batches need (a reduction every chunk uses) would be computed once per
    batch.  A result is worth keeping when the next batch or at least two later
    batches use it directly.
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
        self._uses: dict[Any, list[int]] = {}

    def _batches_using(self, key: Any) -> list[int]:
        """The batches that use ``key`` directly, sorted (worked out once per key: a
        reduction has as many dependents as there are chunks)."""
        uses = self._uses.get(key)
        if uses is None:
            uses = sorted({self.first_use[user] for user in self.dependents[key]} - {self.never})
            self._uses[key] = uses
        return uses

    def worth_keeping(self, key: Any, batch: int) -> bool:
        """Whether the result of ``key``, computed in ``batch``, should be kept."""
        uses = self._batches_using(key)
        later = bisect.bisect_right(uses, batch)
        return len(uses) - later >= 2 or (later < len(uses) and uses[later] == batch + 1)

    def next_use(self, key: Any, batch: int) -> int:
        """The first batch after ``batch`` that uses ``key`` directly, or the batch count."""
        uses = self._batches_using(key)
        later = bisect.bisect_right(uses, batch)
        return uses[later] if later < len(uses) else self.never


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


def _worker_count(schedule: Schedule) -> int:
    nthreads = getattr(distributed_client(schedule), "nthreads", None)
    if callable(nthreads):
        return max(int(sum(nthreads().values())), 1)
    return int(dask.config.get("num_workers", None) or os.cpu_count() or 1)


def _waiting_for_tasks() -> AbstractContextManager[Any]:
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


class ChunkSink(Protocol):
    """Where a write puts stored chunks: :class:`ContainerWriter` or an update."""

    def write_chunk(self, name: str, chunk_id: int, data: bytes | None) -> None:
        """Store ``data`` as chunk ``chunk_id`` of the variable at path ``name``; None
        leaves it out (a missing chunk)."""


def write_run(sink: ChunkSink, name: str, chunk_ids: np.ndarray, run: list[bytes | None]) -> None:
    """Store the chunks ``chunk_ids`` of the variable at path ``name`` with the bytes
    of ``run`` (None: missing), in turn: as one call for a new file's writer."""
    if isinstance(sink, ContainerWriter):
        sink.write_chunks(name, chunk_ids, run)
        return
    for chunk_id, data in zip(chunk_ids.tolist(), run, strict=True):
        sink.write_chunk(name, chunk_id, data)


@dataclass(frozen=True)
class WritePart:
    """The chunks of the stored variable ``var`` that a write stores.

    ``chunks`` encodes the chunks of ``source``: ``var`` itself, or the part of it
    whose first chunk is at chunk-grid position ``grid_offset`` (a box of whole
    chunks, the last ones cut by the end of ``var``).  Which chunks those are is
    worked out only when the write runs: a pending write stays small.
    """

    var: VariableMeta
    source: VariableMeta
    grid_offset: tuple[int, ...]
    chunks: LocalChunks | DaskChunks
    path: str | None = None
    """Where ``var`` is in the tree of groups (``"a/b/name"``); None: in the root."""

    @classmethod
    def whole(
        cls,
        var: VariableMeta,
        data: xr.Variable,
        write_empty: bool = False,
        path: str | None = None,
    ) -> WritePart:
        """Every chunk of ``var``, from the CF-encoded ``data``.

        Raises
        ------
        ValueError
            For dask chunks that do not line up with the stored chunks.
        """
        encoder = chunk_encoder(var, data, write_empty)
        return cls(var, var, (0,) * len(var.shape), encoder, path)

    @property
    def name(self) -> str:
        """The stored variable's path (its name, in the root group)."""
        return self.var.name if self.path is None else self.path

    @cached_property
    def _ids(self) -> tuple[np.ndarray, np.ndarray]:
        if self.source is self.var or not self.var.grid_shape:
            # the whole variable (a scalar's one chunk is always all of it)
            return self.var.placement, self.var.placement
        source_ids = np.arange(self.source.chunk_count, dtype=np.int64)
        cells = np.unravel_index(source_ids, self.source.grid_shape)
        shifted = tuple(c + o for c, o in zip(cells, self.grid_offset, strict=True))
        chunk_ids = np.ravel_multi_index(shifted, self.var.grid_shape).astype(np.int64)
        rank = np.empty(self.var.chunk_count, dtype=np.int64)
        rank[self.var.placement] = np.arange(self.var.chunk_count)
        order = np.argsort(rank[chunk_ids], kind="stable")  # the file's placement order
        return chunk_ids[order], source_ids[order]

    @property
    def chunk_ids(self) -> np.ndarray:
        """The chunks written, row-major in ``var``'s grid, in ``var``'s placement order."""
        return self._ids[0]

    @property
    def source_ids(self) -> np.ndarray:
        """The same chunks, row-major in ``source``'s grid."""
        return self._ids[1]


def chunk_encoder(
    var: VariableMeta, source: xr.Variable, write_empty: bool = False
) -> LocalChunks | DaskChunks:
    """The encoder of the chunks of ``var`` from the CF-encoded ``source``.

    Raises
    ------
    ValueError
        For dask chunks that do not line up with the stored chunks.
    """
    check_alignment(var.name, source, var.chunks)
    if isinstance(source.data, da.Array):
        return DaskChunks(source.data, var, write_empty)
    return LocalChunks(source, ChunkCodec(var), write_empty)


class DaskWrite:
    """One write of a CF-encoded dataset, ready to run here or as a Dask task.

    Its parts hold the encode graphs, built and checked beforehand; nothing is
    written until :meth:`run`.

    Parameters
    ----------
    path
        The file to create or replace.
    metadata
        The dataset description.
    parts
        The chunks written, variable by variable in the order of ``metadata``.
    window
        Encoded chunks in flight per Dask worker.
    progress
        Draw a progress bar on standard error; ``None``: when it is a terminal.
    exclusive
        Fail instead of replacing an existing file (``mode="w-"``).

    Raises
    ------
    ValueError
        For a window below 1.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        metadata: DatasetMeta,
        parts: Sequence[WritePart],
        *,
        window: int = DEFAULT_WINDOW,
        progress: bool | None = None,
        exclusive: bool = False,
    ) -> None:
        if not isinstance(window, int) or isinstance(window, bool) or window < 1:
            raise HurrayValueError(f"window must be an integer >= 1, got {window!r}")
        self.path = Path(path)
        self.metadata = metadata
        self.window = window
        self.progress = progress
        self.exclusive = exclusive
        self.parts = parts

    def open_sink(self) -> AbstractContextManager[ChunkSink]:
        """The writer of the new file: in a temporary file beside the target, moved
        into place only once complete; any failure leaves the target as it was."""
        return ContainerWriter(self.path, self.metadata, exclusive=self.exclusive)

    def run(self) -> None:
        """Encode and store the chunks of every part, committed at the end."""
        total = sum(len(part.chunk_ids) for part in self.parts)
        show = sys.stderr.isatty() if self.progress is None else self.progress
        bar = None
        with _waiting_for_tasks():
            schedule = current_scheduler()
            workers = _worker_count(schedule)
            try:
                with self.open_sink() as sink:
                    # drawn once the temporary file exists: a target that cannot be
                    # written fails with its error alone
                    bar = ProgressBar(f"writing {self.path.name}", total) if show else None
                    for part in self.parts:
                        stream = part.chunks.encoded(
                            part.source_ids, schedule, self.window, workers
                        )
                        done = 0
                        for run in stream:
                            ids = part.chunk_ids[done : done + len(run)]
                            write_run(sink, part.name, ids, [data or None for data in run])
                            done += len(run)
                            if bar is not None:
                                bar.update(len(run), sum(map(len, run)))
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
