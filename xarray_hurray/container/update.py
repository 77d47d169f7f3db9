"""Changing an existing Hurray file in place: a new version appended after its base
and committed by a header slot, at one instant.

An update starts from the version of the file it opened (its *base*), stores the
chunks that change and keeps every other chunk.  The writer holds the exclusive
lock of a local file (:func:`~.lock.lock_file`) for the whole update and opens the base
under it.  This module is the format's primitive of an update; the sinks of the
write pipeline build on it (:mod:`xarray_hurray.write.sinks`, whose ``choose_sink``
decides which takes a write):

- :func:`kept_chunks`: the chunks of a base a new version keeps where they are;
- :class:`InPlaceCommit`: the new version's chunks, index pages, page tables, root
  and metadata appended after the base's bytes, to an :class:`AppendTarget` (the
  base's file or a new object, in ``xarray_hurray.write.sinks.append``), and
  committed by the header slot the base does not use.

A variable keeps its path for the life of the file, so the checksums bound to the
places of its kept chunks, pages and page table (:class:`~.checksum.Places`) hold in
the new version as they are.

Until the commit the base is the file; a process killed at any point before leaves
it exactly as it was.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import HurrayFormatError
from .checksum import Places, chunk_crcs, crc32c
from .format import INDEX_ENTRY, PAGE_ENTRIES, PAGE_REFERENCE, PREFIX, REFERENCE, SLOT_SIZE, Slot
from .head import version_slot
from .index import bound_page, pack_page, page_counts, set_page_reference
from .metadata import DatasetMeta, VariableMeta
from .reader import ContainerReader
from .sink import ChunkSink


def kept_chunks(old: VariableMeta, new: VariableMeta) -> tuple[np.ndarray, np.ndarray]:
    """The chunks of ``old`` that ``new`` holds at the same chunk-grid position:
    ``(old row-major ids, new row-major ids)``.  Shapes may have grown; a variable
    whose dimensions, chunks, element type, layout, codecs or fill changed keeps
    nothing."""
    same = (old.dims, old.chunks, old.dtype, old.layout, old.codecs, old.fill_bytes) == (
        new.dims,
        new.chunks,
        new.dtype,
        new.layout,
        new.codecs,
        new.fill_bytes,
    )
    if not same or any(o > n for o, n in zip(old.grid_shape, new.grid_shape, strict=True)):
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    old_ids = np.arange(old.chunk_count, dtype=np.int64)
    if not old.grid_shape:  # a scalar: its one chunk
        return old_ids, old_ids
    corners = np.unravel_index(old_ids, old.grid_shape)
    return old_ids, np.ravel_multi_index(corners, new.grid_shape).astype(np.int64)


class AppendTarget(ABC):
    """Where an :class:`InPlaceCommit` puts the bytes of the new version: after the
    end of the base in its file, or into a new object that keeps the base's bytes
    (``FileAppend`` and ``ObjectAppend``, side by side in
    ``xarray_hurray.write.sinks.append``)."""

    @property
    @abstractmethod
    def buffer_bytes(self) -> int:
        """Bytes of the new version gathered before one :meth:`store`."""

    @abstractmethod
    def store(self, data: bytes, offset: int) -> None:
        """Store ``data``, bytes of the new version, at ``offset`` (past the base's end)."""

    @abstractmethod
    def header(self) -> bytes:
        """The header of the base, as it is now."""

    @abstractmethod
    def sync(self) -> None:
        """Make every byte stored so far durable."""

    @abstractmethod
    def write_slot(self, slot: bytes, offset: int) -> None:
        """Write the new header slot at ``offset`` and make it durable: the commit."""

    @abstractmethod
    def discard(self, stored: bool) -> None:
        """Give up the new version; ``stored``: some of it may have reached the target."""


class InPlaceCommit(ChunkSink):
    """Append a new version after the bytes of a base and commit it by its header slot,
    copy on write.

    Changed chunks are appended as they come (any order).  Committing appends the
    index pages that changed, a new page table for every changed variable (the others
    keep theirs), a new root and the new metadata, makes them durable (``fsync``),
    then writes the slot the base does not use with the next generation and makes
    that durable.  Nothing the base references is ever overwritten: until the slot
    is written the file reads as the base, and readers that opened the base keep
    reading it.  Bytes after the base's ``file_length`` (left by a write that never
    committed) are overwritten.

    Parameters
    ----------
    target
        Where the new version's bytes go: the base's file (``FileAppend``,
        already locked by the caller) or a new object.
    base
        The reader of the version the file holds.
    metadata
        The description of the new version.
    written
        By variable path, the chunks (row-major ids of the new grid) that change.
    """

    def __init__(
        self,
        target: AppendTarget,
        base: ContainerReader,
        metadata: DatasetMeta,
        written: Mapping[str, np.ndarray],
    ) -> None:
        model = base.model
        if model.header.generation >= 2**64 - 1:  # the next would not fit the slot's u64
            raise HurrayFormatError(
                f"the file's version is generation {model.header.generation}, the last a "
                "header slot holds: no commit can follow it; write the file anew "
                "(hurray compact)",
                value=model.header.generation,
            )
        self.base = base
        self.metadata = metadata
        self.target = target
        self._model = model
        self._slot = model.header
        self._reached_file = False  # whether a write past the base's end was tried
        self._position = self._slot.file_length
        self._buffer = bytearray()
        self._buffer_start = self._position
        self._new: dict[str, list[tuple[int, int, int, int]]] = {name: [] for name in written}

    def _append(self, data: bytes) -> int:
        """Append ``data`` (through the buffer); its offset."""
        offset = self._position
        self._buffer += data
        self._position += len(data)
        if len(self._buffer) >= self.target.buffer_bytes:
            self._flush()
        return offset

    def _flush(self) -> None:
        # marked before the write: one that fails may have stored part of the buffer
        # (a file size limit or a disk filling up cut a pwrite short, then refuse the
        # next one), and abort must cut that part off too
        self._reached_file = self._reached_file or bool(self._buffer)
        if self._buffer:
            self.target.store(bytes(self._buffer), self._buffer_start)
        self._buffer.clear()
        self._buffer_start = self._position

    def write_chunks(
        self,
        name: str,
        chunk_ids: np.ndarray,
        data: Sequence[bytes | None],
        crcs: Sequence[int] | None = None,
    ) -> None:
        entries = self._new.setdefault(name, [])
        checksums = chunk_crcs(data, crcs)
        for chunk_id, one, crc in zip(np.asarray(chunk_ids).tolist(), data, checksums, strict=True):
            if not one:  # missing: the fill
                entries.append((chunk_id, 0, 0, 0))
                continue
            entries.append((chunk_id, self._append(one), len(one), crc))

    def _page_table(self, path: str, var: VariableMeta) -> tuple[int, int]:
        """Append the changed pages and the page table of variable ``path`` of the new
        version (unless nothing of it changed); its root entry ``(offset, crc32c)``."""
        held = {p for p, _ in self.base.metadata.all_variables()}
        old = self.base.variable(path) if path in held else None
        new = np.array(self._new.get(path, []), dtype=np.int64).reshape(-1, 4)
        if old is not None and old.to_json() == var.to_json() and not len(new):
            entry = self._model.chunk_index(path).root_entry()
            return int(entry["offset"]), int(entry["crc32c"])
        count = var.chunk_count
        places = Places(path, var.grid_shape)
        counts = page_counts(count)  # chunk positions on each page
        # where each chunk of the new version is: new, kept from the base, or missing
        source = np.full(count, -1, dtype=np.int64)  # old chunk id, by new chunk id
        if old is not None:
            old_ids, new_ids = kept_chunks(old, var)
            source[new_ids] = old_ids
        source[new[:, 0]] = -1  # a written chunk is never taken from the base
        # a page is kept when it holds the same chunks, at the same positions, as the
        # base's page of that number, none of them written
        kept_page = np.zeros(len(counts), dtype=bool)
        if old is not None and old.chunk_count:
            same = np.zeros(count, dtype=bool)
            shared = min(count, old.chunk_count)
            same[:shared] = source[var.placement[:shared]] == old.placement[:shared]
            same[var.position[new[:, 0]]] = False
            old_counts = page_counts(old.chunk_count)
            for page in range(min(len(counts), len(old_counts))):
                rows = same[page * PAGE_ENTRIES : (page + 1) * PAGE_ENTRIES]
                kept_page[page] = counts[page] == old_counts[page] and bool(rows.all())
        table = np.zeros(len(counts), dtype=PAGE_REFERENCE)
        if kept_page.any():
            # bound to the same places: the variable's path and the pages' numbers
            table[kept_page] = self._model.chunk_index(path).page_table()[kept_page]
        # entries of the pages written, in placement order
        positions = np.concatenate(
            [
                np.arange(p * PAGE_ENTRIES, min((p + 1) * PAGE_ENTRIES, int(count)))
                for p in np.flatnonzero(~kept_page).tolist()
            ]
            or [np.empty(0, dtype=np.int64)]
        )
        entries = np.zeros(len(positions), dtype=INDEX_ENTRY)
        chunks = var.placement[positions]
        from_base = source[chunks] >= 0
        if from_base.any():
            entries[from_base] = self.base.entries(path, source[chunks][from_base])
        # row of each written chunk among the entries: the inverse of ``chunks``
        # (written chunks are all on pages that are written, so none is -1)
        rank = np.full(count, -1, dtype=np.int64)
        rank[chunks] = np.arange(len(chunks))
        rows = rank[new[:, 0]]
        entries["offset"][rows], entries["size"][rows], entries["crc32c"][rows] = new[:, 1:].T
        start = 0
        for page in np.flatnonzero(~kept_page).tolist():
            page_entries = entries[start : start + int(counts[page])]
            start += len(page_entries)
            if page_entries["size"].any():  # else absent: all its chunks are missing
                data = pack_page(bound_page(var, places, page, page_entries))
                set_page_reference(table, page, self._append(data), data, places.page(page))
        if not len(table):
            return 0, 0
        data = table.tobytes()
        return self._append(data), crc32c(data) ^ places.table

    def commit(self) -> None:
        """Append the index and metadata of the new version, make everything durable,
        then switch the header to it."""
        paths = self.metadata.all_variables()
        root = np.zeros(len(paths), dtype=REFERENCE)
        for number, (path, var) in enumerate(paths):
            root[number] = self._page_table(path, var)
        root_bytes, meta_bytes = root.tobytes(), self.metadata.to_bytes()
        root_offset = self._append(root_bytes)
        meta_offset = self._append(meta_bytes)
        self._flush()
        self.target.sync()  # every new part is on disk before a slot points to it
        slot = version_slot(
            self._slot.generation + 1,
            (meta_offset, meta_bytes),
            (root_offset, root_bytes),
            self._position,
        )
        header = self.target.header()
        prefix = header[: PREFIX.size]
        # the slot the base does not use: the other one, or the damaged trace of a
        # commit that never completed
        active = next(
            k
            for k in (0, 1)
            if Slot.unpack(prefix, header[PREFIX.size + k * SLOT_SIZE :][:SLOT_SIZE]) == self._slot
        )
        self.target.write_slot(slot.pack(prefix), PREFIX.size + (1 - active) * SLOT_SIZE)

    def abort(self) -> None:
        """Give up the new version: whatever part of it reached the file, however the
        write failed (a full disk, a file size limit, an error of the caller), is cut
        off again, so the file ends where the base does and its space is given back
        (nothing references those bytes; a process killed before this leaves them as
        an uncommitted tail, which readers ignore).  A tail an earlier interrupted
        write left goes too, as the append began overwriting it; a write that never
        reached the file cuts nothing, nor does one whose slot write failed before
        storing a byte of the slot.  Once a byte of the new slot is written (the
        rest of it, or its ``fsync``, failing) nothing is cut: the slot may have
        reached the disk, and its version needs those bytes; a torn slot needs them
        too, as readers accept it only beside bytes after the version's end (the
        target knows whether its slot was begun)."""
        self.target.discard(self._reached_file)
