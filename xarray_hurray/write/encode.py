"""The encoders of a write: the stored bytes of the chunks of a variable, in the order
a plan asks for them.

Each dask chunk of a dask-backed variable is encoded (layout permutation and codecs
of every stored chunk it holds) by one Dask task, so the graph and the scheduling
cost grow with the dask chunks, not with the stored chunks.  The encoded chunks come
back to the writing process in placement order, about ``window`` stored chunks per
worker at a time (at least one dask chunk per worker); memory stays bounded however
large the dataset is.  Variables held in memory or in a lazy backend array are
encoded chunk by chunk in the writing process.
"""

from __future__ import annotations

import bisect
import math
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import dask.array as da
import dask.local
import dask.threaded
import numpy as np
import xarray as xr
from dask.base import optimize
from dask.core import flatten, get_deps, toposort
from dask.optimization import cull

from ..container import ChunkCodec, VariableMeta
from ..container.chunk import EncodedRun, chunk_box
from ..container.writer import PLACEMENT_SLICE
from .compat import DataNode

Schedule = Callable[..., Sequence[Any]]
"""A Dask scheduler's ``get(graph, keys)``."""


def stored_bytes(codec: ChunkCodec, block: np.ndarray, write_empty: bool) -> bytes:
    """The stored bytes of chunk ``block``; ``b""`` (not stored: a missing chunk) for a
    chunk of the fill value alone, unless ``write_empty`` (zarr's
    ``write_empty_chunks``).  A stored chunk always has at least one byte."""
    if not write_empty and codec.is_fill(block):
        return b""
    return codec.encode(block)


def _encode_stored_chunks(block: np.ndarray, codec: ChunkCodec, write_empty: bool) -> np.ndarray:
    """The stored bytes and checksums of every stored chunk of a dask ``block``, in
    row-major order (``b""`` for chunks left out, see :func:`stored_bytes`), as an
    :class:`EncodedRun`.

    The block starts on a stored-chunk boundary (see :func:`check_alignment`); its last
    chunks may be cut short at the array's edge.  One task per dask chunk, however many
    stored chunks it holds: the graph and the scheduling cost do not grow with them.
    """
    # map_blocks wants an array per block: one object cell holding the run
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
        self.variable = var
        self.codec = codec
        self.write_empty = write_empty

    def in_tasks(self) -> DaskChunks:
        """The same chunks, encoded by Dask tasks: one per stored chunk."""
        stored = self.codec.variable
        chunked = self.variable.chunk(dict(zip(self.variable.dims, stored.chunks, strict=True)))
        return DaskChunks(chunked.data, stored, self.write_empty)

    def encoded(
        self, chunk_ids: np.ndarray, schedule: Schedule, window: int, workers: int
    ) -> Iterator[EncodedRun]:
        """The stored bytes of chunks ``chunk_ids`` (``b""``: left out) and their
        checksums, in turn, in runs of a few hundred KiB."""
        if isinstance(self.data, np.ndarray):
            yield from self.codec.encode_many(self.data, chunk_ids, self.write_empty)
            return
        run: list[bytes] = []
        held = 0
        for chunk_id in chunk_ids.tolist():
            stored = self.codec.variable
            block = self.data[chunk_box(chunk_id, stored.grid_shape, stored.chunks)]
            run.append(stored_bytes(self.codec, block.values, self.write_empty))
            held += len(run[-1])
            if held >= RUN_BYTES:
                yield EncodedRun.of(run)
                run, held = [], 0
        if run:
            yield EncodedRun.of(run)


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
    """The chunks of a dask-backed variable: one task per dask chunk.

    The tasks run in batches, in the order in which placement first needs their dask
    chunks; each batch runs the part of the graph it needs.  Results that later
    batches use again (a reduction every chunk uses) are kept, within
    :data:`KEEP_BYTES`, instead of being computed once per batch (see :class:`Reuse`).

    Where the tasks run in the writing process (Dask's threaded or synchronous
    scheduler), a task computes its dask chunk and the writer encodes the stored
    chunks from it in placement order, on the decode pool's threads, just before
    they are written: a dask chunk's values are held until its last stored chunk is
    written, but never beside all of its encoded chunks, so a batch holds no more
    than the values of its dask chunks, as ``to_zarr`` holds them.  Elsewhere (a
    distributed cluster, worker processes) each task encodes every stored chunk of
    its dask chunk and returns their bytes (:attr:`graph`), so that what crosses to
    the writer is compressed; either way the graph has one task more per dask chunk
    whatever the number of stored chunks.
    """

    def __init__(self, data: da.Array, var: VariableMeta, write_empty: bool = False) -> None:
        # a fresh description: the tasks need not carry the cached chunk placement
        self.codec = ChunkCodec(replace(var))
        self.write_empty = write_empty
        ndim = len(var.chunks)
        lazy: Any = data  # dask's map_blocks is typed for arrays, not functions of them
        encoded = lazy.map_blocks(
            _encode_stored_chunks,
            self.codec,
            write_empty,
            dtype=object,
            chunks=(1,) * ndim,
            meta=np.empty((0,) * ndim, dtype=object),
            name=f"hurray-encode-{uuid.uuid4().hex}",
        )
        (encoded,) = optimize(encoded)
        self.cells = encoded
        """The encode tasks: one object cell per dask chunk, holding their bytes."""
        self.graph = dict(encoded.__dask_graph__())
        self.keys = list(flatten(encoded.__dask_keys__()))
        self.data = data
        self.blocks = BlockMap(data.chunks, var.chunks)

    def _slices(self, chunk_ids: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, len(chunk_ids), PLACEMENT_SLICE):
            yield self.blocks.locate(chunk_ids[start : start + PLACEMENT_SLICE])

    def encoded(
        self, chunk_ids: np.ndarray, schedule: Schedule, window: int, workers: int
    ) -> Iterator[EncodedRun]:
        """The stored bytes of chunks ``chunk_ids`` (``b""``: left out) and their
        checksums, in turn, in runs of consecutive chunks from one dask chunk.

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
        in_process = schedule in IN_PROCESS
        if in_process:
            (values,) = optimize(self.data)
            graph, keys = dict(values.__dask_graph__()), list(flatten(values.__dask_keys__()))
        else:
            graph, keys = self.graph, self.keys
        results = self._batches(batches, schedule, graph, keys)
        pending: dict[int, Any] = {}  # by dask chunk, see _held
        remaining = left.tolist()
        for block, local in self._slices(chunk_ids):
            # consecutive chunks of one dask chunk go out as one run
            cuts = [0, *(np.flatnonzero(np.diff(block)) + 1).tolist(), len(block)]
            for b, start, stop in zip(block[cuts[:-1]].tolist(), cuts[:-1], cuts[1:], strict=True):
                while b not in pending:  # the next batch holds it: first-use order
                    pending.update(self._held(next(results), in_process))
                ids = local[start:stop]
                if in_process:
                    array = pending[b]
                    yield from self.codec.encode_many(array, ids, self.write_empty)
                    del array  # not held while the next batch is computed
                else:
                    parts = pending[b]
                    picked = ids.tolist()
                    yield EncodedRun(
                        [parts.chunks[k] for k in picked], [parts.crcs[k] for k in picked]
                    )
                    # handed over once: the references are dropped so that the bytes go
                    # as soon as the writer has them
                    for k in picked:
                        parts.chunks[k] = b""
                    del parts
                remaining[b] -= stop - start
                if not remaining[b]:
                    del pending[b]

    def _held(self, batch: dict[int, Any], in_process: bool) -> dict[int, Any]:
        """What ``encoded`` keeps of each dask chunk of ``batch`` (its results by dask
        chunk) until its stored chunks are given: its values (tested for the fill
        run by run as they are encoded), or its encoded chunks (an :class:`EncodedRun`)."""
        if not in_process:
            return {b: cell.reshape(-1)[0] for b, cell in batch.items()}
        return dict(batch)

    def _batches(
        self,
        batches: Sequence[Sequence[int]],
        schedule: Schedule,
        tasks: Mapping[Any, Any],
        task_keys: Sequence[Any],
    ) -> Iterator[dict[int, Any]]:
        """The results of the tasks ``task_keys`` of the graph ``tasks`` (one per dask
        chunk) for each batch of dask chunks, batch by batch."""
        key_batches = [[task_keys[b] for b in blocks] for blocks in batches]
        reuse = Reuse(tasks, key_batches)
        graph = dict(tasks)  # kept results replace their tasks here
        kept: dict[Any, int] = {}  # key -> bytes of its kept result
        for number, (blocks, keys) in enumerate(zip(batches, key_batches, strict=True)):
            needed, _ = cull(graph, keys)
            extra = [k for k in needed if k not in kept and reuse.worth_keeping(k, number)]
            results = list(schedule(needed, [*keys, *extra]))
            batch = dict(zip(blocks, results, strict=False))
            # nothing here may hold a batch's results while the next one is computed:
            # the consumer drops each dask chunk's once its stored chunks are written
            del results[: len(keys)]
            yield batch
            del batch
            for key, value in zip(extra, results, strict=True):
                graph[key] = DataNode(key, value)
                kept[key] = int(getattr(value, "nbytes", 0))
            del results
            # drop what no later batch uses, then what is needed last, down to the budget
            total = sum(kept.values())
            for key in sorted(kept, key=lambda k: reuse.next_use(k, number), reverse=True):
                if reuse.next_use(key, number) < len(batches) and total <= KEEP_BYTES:
                    break
                graph[key] = tasks[key]
                total -= kept.pop(key)


IN_PROCESS = (dask.threaded.get, dask.local.get_sync)
"""The schedulers whose tasks run in the writing process, where dask chunks are
encoded by the writer (see :class:`DaskChunks`)."""


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


def chunk_encoder(
    var: VariableMeta, source: xr.Variable, write_empty: bool = False
) -> LocalChunks | DaskChunks:
    """The encoder of the chunks of ``var`` from the CF-encoded ``source``.

    The dask chunks of ``source`` must be made of whole stored chunks (see
    :func:`xarray_hurray.write.plan.check_alignment`).
    """
    if isinstance(source.data, da.Array):
        return DaskChunks(source.data, var, write_empty)
    return LocalChunks(source, ChunkCodec(var), write_empty)
