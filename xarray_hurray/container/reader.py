"""Reading a Hurray file: one request for the head, one per variable index, and
merged range requests for the chunks a selection touches."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import HurrayFormatError
from ..io import ByteSource, MergePolicy, ReadPlan, plan_reads
from .checksum import verify
from .chunk import ChunkCodec
from .elements import parse_element_type
from .format import HEAD_SIZE, Header
from .index import unpack_index
from .limits import MAX_CHUNK_BYTES
from .metadata import DatasetMeta, VariableMeta, parse_metadata
from .select import Key, OuterSelection
from .threads import ordered_map


@dataclass(frozen=True)
class ChunkFetch:
    """The merged requests that fetch some chunks of one variable.

    Parameters
    ----------
    name
        The variable.
    chunk_ids
        Row-major flat indices of the chunks, in the order they are returned.
    entries
        Their index entries (offset, size, checksum).
    plan
        The requests, and which request holds each chunk.
    codec
        Decodes the variable's chunks.
    """

    name: str
    chunk_ids: np.ndarray
    entries: np.ndarray
    plan: ReadPlan
    codec: ChunkCodec


class ContainerReader:
    """Thread-safe, picklable reader of one Hurray file.

    Parameters
    ----------
    source
        Where the bytes are.
    policy
        How byte ranges are merged into requests; by default the source's own
        (object stores merge wider gaps than local files).
    verify_checksums
        Check the crc32c of every chunk before decoding it.  ``False`` trusts the
        chunk bytes and saves that time; header, metadata and indexes are still
        checked, and decoding still never reads or allocates past a chunk's size.

    Raises
    ------
    HurrayFormatError
        When the header or the metadata is missing, truncated, corrupt or of a
        later version.
    """

    def __init__(
        self,
        source: ByteSource,
        policy: MergePolicy | None = None,
        verify_checksums: bool = True,
        max_chunk_bytes: int = MAX_CHUNK_BYTES,
    ) -> None:
        self.source = source
        self.policy = policy or source.default_policy()
        self.verify_checksums = verify_checksums
        self.max_chunk_bytes = max_chunk_bytes
        head = source.read(0, HEAD_SIZE)
        self.header = Header.unpack(head)
        size = source.size()
        if size is not None and size != self.header.file_length:
            raise HurrayFormatError(
                f"{source.name} has {size} bytes but its header records "
                f"{self.header.file_length}: the file is truncated or was appended to"
            )
        self.metadata: DatasetMeta = parse_metadata(
            self._region(
                head,
                self.header.metadata_offset,
                self.header.metadata_length,
                "metadata",
                self.header.metadata_crc32c,
            )
        )
        if self.metadata.index_length != self.header.index_length:
            raise HurrayFormatError(
                f"the header records an index region of {self.header.index_length} bytes, "
                f"the chunk grids of the variables need {self.metadata.index_length}"
            )
        self._index_offsets = self.metadata.index_offsets(self.header.index_offset)
        self._head = head
        self._indexes: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def _region(self, head: bytes, offset: int, length: int, what: str, crc: int | None) -> bytes:
        """Bytes ``[offset, offset + length)``, from ``head`` when it holds them."""
        if offset + length <= len(head):
            data = head[offset : offset + length]
        else:
            data = self.source.read(offset, offset + length)
        if len(data) != length:
            raise HurrayFormatError(
                f"truncated file {self.source.name}: {what} needs bytes "
                f"[{offset}, {offset + length}), got {len(data)}"
            )
        if crc is not None:
            verify(data, crc, what)
        return data

    def variable(self, name: str) -> VariableMeta:
        """The description of variable ``name``."""
        return self.metadata.variable(name)

    def index(self, name: str) -> np.ndarray:
        """The checked chunk index of ``name`` (fetched once, then cached)."""
        with self._lock:
            if name not in self._indexes:
                var = self.variable(name)
                data = self._region(
                    self._head,
                    self._index_offsets[name],
                    var.index_length,
                    f"index of {name!r}",
                    None,
                )
                self._indexes[name] = unpack_index(
                    data, var.chunk_count, name, self.header.data_offset, self.header.file_length
                )
            return self._indexes[name]

    def iter_chunks(self, name: str, chunk_ids: np.ndarray) -> Iterator[np.ndarray]:
        """Decoded full chunks ``chunk_ids`` (row-major flat indices) of ``name``, in turn.

        All requests are planned and fetched first; chunks are then checked and
        decoded in parallel on a shared thread pool, a little ahead of the caller.
        """
        fetch = self._fetch(name, chunk_ids)
        yield from self._decoded(fetch, self.source.read_ranges(fetch.plan.requests))

    def _fetch(self, name: str, chunk_ids: np.ndarray) -> ChunkFetch:
        """The merged requests that fetch chunks ``chunk_ids`` of ``name``."""
        entries = self.index(name)[chunk_ids]
        starts = entries["offset"].astype(np.int64)
        stops = starts + entries["size"].astype(np.int64)
        try:
            codec = ChunkCodec(self.variable(name), self.max_chunk_bytes)
        except ValueError as err:
            raise HurrayFormatError(str(err)) from None
        return ChunkFetch(name, chunk_ids, entries, plan_reads(starts, stops, self.policy), codec)

    def _decoded(self, fetch: ChunkFetch, blobs: Sequence[bytes]) -> Iterator[np.ndarray]:
        """The chunks of ``fetch``, checked and decoded from the answers ``blobs`` to its
        requests."""
        name, chunk_ids, entries, plan = fetch.name, fetch.chunk_ids, fetch.entries, fetch.plan
        codec = fetch.codec
        starts = entries["offset"].astype(np.int64)
        stops = starts + entries["size"].astype(np.int64)
        pieces: list[tuple[bytes, int, str]] = []
        for i, (start, stop) in enumerate(zip(starts.tolist(), stops.tolist(), strict=True)):
            request = int(plan.request_of[i])
            req_start, req_stop = plan.requests[request].tolist()
            blob = blobs[request]
            if len(blob) != req_stop - req_start:
                raise HurrayFormatError(
                    f"truncated file {self.source.name}: bytes [{req_start}, {req_stop}) "
                    f"returned {len(blob)} bytes"
                )
            data = (
                blob
                if (start, stop) == (req_start, req_stop)
                else blob[start - req_start : stop - req_start]
            )
            what = f"chunk {int(chunk_ids[i])} of variable {name!r}"
            pieces.append((data, int(entries["crc32c"][i]), what))

        def decode(piece: tuple[bytes, int, str]) -> np.ndarray:
            data, crc, what = piece
            if self.verify_checksums:
                verify(data, crc, what)
            try:
                return codec.decode(data)
            except (ValueError, RuntimeError) as err:
                raise HurrayFormatError(f"cannot decode {what}: {err}") from err

        yield from ordered_map(decode, pieces)

    def read(self, name: str, key: Sequence[Key] | None = None) -> np.ndarray:
        """Outer selection ``key`` (one int, slice or integer array per axis) of ``name``.

        Only the chunks the selection touches are fetched.
        """
        selection, out = self._selection(name, key)
        if out.size:
            fetch = self._fetch(name, selection.chunk_ids())
            self._fill(out, selection, fetch, self.source.read_ranges(fetch.plan.requests))
        return out.reshape(selection.result_shape)

    async def read_async(self, name: str, key: Sequence[Key] | None = None) -> np.ndarray:
        """:meth:`read` as a coroutine, so that reads awaited together overlap.

        The chunk bytes come from the source's :meth:`~ByteSource.read_ranges_async`;
        the first read of a variable's index and the decoding run in a thread, so the
        event loop is never blocked.
        """
        selection, out = self._selection(name, key)
        if out.size:
            fetch = await asyncio.to_thread(self._fetch, name, selection.chunk_ids())
            blobs = await self.source.read_ranges_async(fetch.plan.requests)
            await asyncio.to_thread(self._fill, out, selection, fetch, blobs)
        return out.reshape(selection.result_shape)

    def _selection(self, name: str, key: Sequence[Key] | None) -> tuple[OuterSelection, np.ndarray]:
        """The outer selection ``key`` of ``name`` and an empty array to read it into."""
        var = self.variable(name)
        key = tuple(slice(None) for _ in var.shape) if key is None else tuple(key)
        selection = OuterSelection.build(key, var.shape, var.chunks)
        dtype = parse_element_type(var.dtype)
        if var.chunk_count == 0:
            # nothing to fetch, but the index (its checksum alone) is checked as for any
            # variable, so that every byte of the file is checked by some read
            self.index(name)
        return selection, np.empty(selection.out_shape, dtype=dtype.newbyteorder("="))

    def _fill(
        self,
        out: np.ndarray,
        selection: OuterSelection,
        fetch: ChunkFetch,
        blobs: Sequence[bytes],
    ) -> None:
        """Decode the fetched chunks and copy the selected elements into ``out``."""
        chunks = self._decoded(fetch, blobs)
        for chunk, (out_index, in_index) in zip(chunks, selection.pieces(), strict=True):
            out[out_index] = chunk[in_index]

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
