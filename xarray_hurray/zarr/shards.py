"""Shards whose inner chunks lie along the Hilbert curve, and merged region reads.

The ``sharding_indexed`` codec lets a writer place the inner chunks of a shard in
any order: its index records where each one is.  :class:`HilbertShardingCodec`
writes them in Hilbert order, so the inner chunks of a region sit in few
contiguous byte runs, while the metadata stays standard ``sharding_indexed``
that every Zarr v3 reader reads.

On zarr-python before 3.3, which fetches every inner chunk of a region read on
its own, the codec also fetches the shard index, merges the byte ranges of the
inner chunks it needs where they touch, fetches each merged run once and hands
zarr's own decoding the bytes from memory.  Newer zarr coalesces these reads
itself and is left to do so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import zarr
from zarr.abc.store import RangeByteRequest, SuffixByteRequest
from zarr.codecs.sharding import ShardingCodec
from zarr.core.buffer import default_buffer_prototype
from zarr.core.indexing import get_indexer
from zarr.registry import register_codec

from ..layout import chunk_placement, merge_runs
from .compat import (
    ZARR_MERGES_SHARD_READS,
    ZARR_ORDERS_SUBCHUNKS,
    ZARR_VALIDATES_INNER_CODECS,
    check_zarr_support,
)

if not (ZARR_MERGES_SHARD_READS and ZARR_VALIDATES_INNER_CODECS):
    # Only zarr < 3.3 has this class; only the hooks for zarr < 3.3 use it.
    from zarr.core.chunk_grids import RegularChunkGrid

if TYPE_CHECKING:
    from zarr.abc.store import ByteGetter, ByteRequest
    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer, BufferPrototype, NDBuffer


@lru_cache(maxsize=64)
def hilbert_placement(chunks_per_shard: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Coordinates of a shard's inner chunks in the order they are written."""
    flat = chunk_placement(chunks_per_shard, "hilbert")
    return tuple(zip(*(c.tolist() for c in np.unravel_index(flat, chunks_per_shard)), strict=True))


def merged_requests(slices: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte ranges ``[start, stop)`` sorted, with touching or overlapping ranges merged."""
    if not slices:
        return []
    starts, stops = np.asarray(slices, dtype=np.int64).T
    return [(int(a), int(b)) for a, b in merge_runs(starts, stops)]


@dataclass(frozen=True)
class PrefetchedShard:
    """Serve the requests zarr makes for one shard read from bytes fetched beforehand.

    Parameters
    ----------
    runs
        ``(start, bytes)`` of each prefetched byte run of the shard.
    index_request, index_bytes
        The request that reads the shard index, and its answer.
    """

    runs: tuple[tuple[int, Buffer], ...]
    index_request: ByteRequest
    index_bytes: Buffer

    async def get(
        self, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        """The bytes of ``byte_range``, which must lie in the index or one prefetched run."""
        # zarr asks for the index with the very request _prefetch made for it
        if byte_range == self.index_request:
            return self.index_bytes
        if isinstance(byte_range, RangeByteRequest):
            for start, data in self.runs:
                if start <= byte_range.start and byte_range.end <= start + len(data):
                    return data[byte_range.start - start : byte_range.end - start]
        raise RuntimeError(f"shard read requested {byte_range!r}, which was not prefetched")


class HilbertShardingCodec(ShardingCodec):
    """``sharding_indexed`` with the inner chunks of each shard placed along the Hilbert curve.

    Takes the arguments of zarr's :class:`~zarr.codecs.ShardingCodec`.  Use it as an
    array's serializer with the shard shape as the array's chunk shape, and
    ``compressors=None`` at the array level (compress inside ``codecs``), so region
    reads can fetch single inner chunks.

    Raises
    ------
    UnsupportedZarrError
        If the installed zarr-python is not one these hooks were built for.
    """

    def __init__(self, **kwargs: Any) -> None:
        check_zarr_support()
        super().__init__(**kwargs)

    if not ZARR_VALIDATES_INNER_CODECS:

        def validate(self, *, shape: tuple[int, ...], dtype: Any, chunk_grid: Any) -> None:
            """zarr's checks, and each inner codec against the inner chunk shape."""
            super().validate(shape=shape, dtype=dtype, chunk_grid=chunk_grid)
            inner_grid = RegularChunkGrid(chunk_shape=self.chunk_shape)
            for codec in self.codecs:
                codec.validate(shape=self.chunk_shape, dtype=dtype, chunk_grid=inner_grid)

    def _subchunk_order_iter(
        self, chunks_per_shard: tuple[int, ...], subchunk_write_order: Any = None
    ) -> tuple[tuple[int, ...], ...]:
        # zarr >= 3.3 lays inner chunks out in the order this returns.
        return hilbert_placement(chunks_per_shard)

    if not ZARR_ORDERS_SUBCHUNKS:

        async def _encode_shard_dict(
            self,
            map: Any,
            chunks_per_shard: tuple[int, ...],
            buffer_prototype: BufferPrototype,
        ) -> Buffer | None:
            # zarr < 3.3 writes Morton order here; write Hilbert order instead.
            from zarr.codecs.sharding import _ShardIndex

            index = _ShardIndex.create_empty(chunks_per_shard)
            index_at_start = getattr(self.index_location, "value", self.index_location) == "start"
            offset = self._shard_index_size(chunks_per_shard) if index_at_start else 0
            buffers = []
            for coords in hilbert_placement(chunks_per_shard):
                value = map.get(coords)
                if value is None or len(value) == 0:
                    continue
                # offsets are from the shard's start, past the index when it leads
                index.set_chunk_slice(coords, slice(offset, offset + len(value)))
                offset += len(value)
                buffers.append(value)
            if not buffers:
                return None
            index_bytes = await self._encode_shard_index(index)
            buffers.insert(0 if index_at_start else len(buffers), index_bytes)
            return buffer_prototype.buffer.create_zero_length().combine(buffers)

    if not ZARR_MERGES_SHARD_READS:

        async def _decode_partial_single(
            self, byte_getter: ByteGetter, selection: Any, shard_spec: ArraySpec
        ) -> NDBuffer | None:
            # zarr < 3.3 requests each inner chunk on its own; prefetch merged runs.
            chunks_per_shard = self._get_chunks_per_shard(shard_spec)
            indexer = get_indexer(
                selection,
                shape=shard_spec.shape,
                chunk_grid=RegularChunkGrid(chunk_shape=self.chunk_shape),
            )
            wanted = {coords for coords, *_ in indexer}
            # a read of every inner chunk fetches the shard whole: nothing to merge
            if self._is_total_shard(wanted, chunks_per_shard):
                return await super()._decode_partial_single(byte_getter, selection, shard_spec)
            prefetched = await self._prefetch(byte_getter, wanted, chunks_per_shard)
            if prefetched is None:
                return None
            return await super()._decode_partial_single(prefetched, selection, shard_spec)

        async def _prefetch(
            self,
            byte_getter: ByteGetter,
            wanted: set[tuple[int, ...]],
            chunks_per_shard: tuple[int, ...],
        ) -> PrefetchedShard | None:
            """Fetch the shard index, then the merged byte runs of the ``wanted`` chunks."""
            size = self._shard_index_size(chunks_per_shard)
            at_start = getattr(self.index_location, "value", self.index_location) == "start"
            index_request = RangeByteRequest(0, size) if at_start else SuffixByteRequest(size)
            prototype = default_buffer_prototype()
            index_bytes = await byte_getter.get(prototype=prototype, byte_range=index_request)
            if index_bytes is None:
                return None
            index = await self._decode_shard_index(index_bytes, chunks_per_shard)
            slices = [index.get_chunk_slice(coords) for coords in wanted]
            runs = merged_requests([s for s in slices if s is not None])
            parts = await asyncio.gather(
                *(
                    byte_getter.get(prototype=prototype, byte_range=RangeByteRequest(a, b))
                    for a, b in runs
                )
            )
            # a run that came back None: the shard was deleted after its index was
            # read; answer as zarr does for a shard that is missing
            present = [part for part in parts if part is not None]
            if len(present) != len(parts):
                return None
            return PrefetchedShard(
                tuple((a, part) for (a, _), part in zip(runs, present, strict=True)),
                index_request,
                index_bytes,
            )


@contextmanager
def using_hilbert_shards() -> Iterator[None]:
    """Within the block, zarr uses :class:`HilbertShardingCodec` for every sharded array.

    Arrays opened inside it, by zarr or by xarray, write their shards in Hilbert
    order and read regions through the merging read path.  Outside it, only
    arrays created with a :class:`HilbertShardingCodec` instance use it.
    """
    check_zarr_support()
    register_codec("sharding_indexed", HilbertShardingCodec)
    name = f"{HilbertShardingCodec.__module__}.{HilbertShardingCodec.__qualname__}"
    with zarr.config.set({"codecs.sharding_indexed": name}):
        yield
