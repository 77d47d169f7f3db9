"""A new version written whole: a new file streamed in placement order, the chunks it
keeps copied from the base as stored bytes (checked against their CRC-32C, never
decoded), which replaces the old file in one rename (a local file) or one upload (an
object, through :class:`~.staged.StagedUpload`).  ``hurray compact`` and updates of
objects too small for parts take it."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from ...container import ContainerReader, ContainerWriter, DatasetMeta
from ...container.checksum import chunk_crcs, verify
from ...container.sink import ChunkSink
from ...container.update import kept_chunks
from ...errors import HurrayFormatError, HurrayValueError
from ...io import MergePolicy, plan_reads

COPY_BYTES = 32 * 2**20
"""Largest batch of unchanged chunk bytes read from the base at a time."""

COPY_POLICY = MergePolicy(max_gap=0, max_request=COPY_BYTES)
"""Copies read the chunks they need and nothing between them."""


class StagedRewrite(ChunkSink):
    """Write the new version of a file whole, unchanged chunks copied from the base.

    Changed chunks are given with :meth:`write_chunks`, variable by variable in the
    order of the new metadata and each in its placement order (the order of
    :class:`ContainerWriter`); the unchanged chunks between them are copied as they
    come.  Committing copies the rest and moves the file into place.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        base: ContainerReader,
        metadata: DatasetMeta,
        written: Mapping[str, np.ndarray],
    ) -> None:
        self.base = base
        self._old: dict[str, dict[int, int]] = {}  # variable path -> new id -> old id
        held = {path for path, _ in base.metadata.all_variables()}
        for name, var in metadata.all_variables():
            if name not in held:
                continue
            old_ids, new_ids = kept_chunks(base.variable(name), var)
            keep = ~np.isin(new_ids, written.get(name, ()))
            self._old[name] = dict(zip(new_ids[keep].tolist(), old_ids[keep].tolist(), strict=True))
        self._writer = ContainerWriter(path, metadata)
        self._order = self._writer.placement()
        self._copies = self._copy_stream()

    def _copy_stream(self) -> Iterator[bytes]:
        """The stored bytes of every kept chunk, in the order the new file holds them,
        read from the base in batches of at most :data:`COPY_BYTES`."""
        for path, var in self._writer.placed:
            old = self._old.get(path)
            if not old:
                continue
            old_ids = np.array([old[c] for c in var.placement.tolist() if c in old], dtype=np.int64)
            sizes = np.cumsum(self.base.index(path)["size"][old_ids].astype(np.int64))
            start = 0
            while start < len(old_ids):
                # at least one chunk per batch, however large
                done = int(sizes[start - 1]) if start else 0
                stop = max(int(np.searchsorted(sizes, done + COPY_BYTES, "right")), start + 1)
                yield from self._read_old(path, old_ids[start:stop])
                start = stop

    def _read_old(self, name: str, old_ids: np.ndarray) -> Iterator[bytes]:
        """The stored bytes of chunks ``old_ids`` of ``name`` in the base, checked;
        ``b""`` for a missing chunk, which stays missing."""
        index = self.base.model.chunk_index(name)
        entries = index.every_entry()[old_ids]
        stored = index.stored(entries)
        starts = entries["offset"].astype(np.int64)
        stops = starts + entries["size"].astype(np.int64)
        plan = plan_reads(starts[stored], stops[stored], COPY_POLICY)
        request_of = np.full(len(entries), -1, dtype=np.int64)
        request_of[stored] = plan.request_of
        blobs = self.base.source.read_ranges(plan.requests)
        for i, (start, stop) in enumerate(zip(starts.tolist(), stops.tolist(), strict=True)):
            if not stored[i]:
                yield b""
                continue
            request = int(request_of[i])
            first = int(plan.requests[request][0])
            data = blobs[request][start - first : stop - first]
            what = f"chunk {int(old_ids[i])} of variable {name!r}"
            if len(data) != stop - start:
                raise HurrayFormatError(f"truncated file {self.base.source.name}: {what}")
            verify(data, int(entries["crc32c"][i]), what, placed=True)
            yield data

    def _copy_until(self, target: tuple[str, int] | None) -> None:
        """Copy kept chunks until the next one in placement order is ``target``."""
        for path, chunk_id in self._order:
            if (path, chunk_id) == target:
                return
            if chunk_id not in self._old.get(path, {}):
                where = "the end" if target is None else f"chunk {target[1]} of {target[0]!r}"
                raise HurrayValueError(
                    f"chunk {chunk_id} of {path!r} is neither written nor kept before "
                    f"{where}: chunks must come in placement order"
                )
            self._writer.write_chunk(path, chunk_id, next(self._copies) or None)
        if target is not None:
            raise HurrayValueError(f"chunk {target[1]} of {target[0]!r} written out of order")

    def write_chunks(
        self,
        name: str,
        chunk_ids: np.ndarray,
        data: Sequence[bytes | None],
        crcs: Sequence[int] | None = None,
    ) -> None:
        checksums = chunk_crcs(data, crcs)
        for chunk_id, one, crc in zip(np.asarray(chunk_ids).tolist(), data, checksums, strict=True):
            self._copy_until((name, chunk_id))
            self._writer.write_chunk(name, chunk_id, one, crc)

    def commit(self) -> None:
        """Copy the kept chunks after the last one written, and move the new file into
        place."""
        self._copy_until(None)
        self._writer.commit()

    def abort(self) -> None:
        """Drop the new version; the file stays as it was."""
        self._writer.abort()
