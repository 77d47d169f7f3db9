"""The in-memory model of a Hurray file.

A file is parsed here, and only here: :class:`FileModel` gives its parts, each parsed
and checked when first asked for:

- its header: the active :class:`~.format.Slot` of the header's two;
- its metadata, a :class:`~.metadata.DatasetMeta`;
- the index root, and for each variable a :class:`ChunkIndex`: the entries of some
  chunks, the stored chunks in placement order, the byte parts of the index and
  whether a chunk is stored, read through the variable's page table and index pages.

The checksums of chunks, pages and page tables are bound to their place in the file
(:class:`~.checksum.Places`); the model checks pages and tables against their places
and gives each chunk's entry with the CRC-32C its bytes must have, so that a chunk
read in another's place fails its check.  The reader, ``verify`` and the updates work
on the model alone.

The model reads through :class:`FileBytes`: the first :data:`~.format.HEAD_SIZE`
bytes of the file (more from a remote source, :func:`first_read_bytes`), read once
at open, then requests merged under the reader's policy
for whatever lies beyond them.  It is thread-safe (what it has read is held under one
lock) and picklable.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import HurrayFormatError
from ..io import ByteSource, MergePolicy, plan_reads
from .checksum import Places, verify
from .format import (
    HEAD_SIZE,
    HEADER_SIZE,
    INDEX_ENTRY,
    PAGE_ENTRIES,
    PAGE_REFERENCE,
    REFERENCE,
    Slot,
    unpack_header,
)
from .index import PageTable, bound, check_references, page_counts, read_page_table, unpack_page
from .metadata import DatasetMeta, VariableMeta, parse_metadata
from .readahead import ahead_bytes

PAGE_CACHE_BYTES = 64 * 2**20
"""Most bytes of parsed index pages a file's model keeps; the least recently used go
first."""

STORED_BATCH = 64 * PAGE_ENTRIES
"""Chunk positions whose stored chunks :meth:`ChunkIndex.stored_chunks` gives at once
(64 index pages)."""


FIRST_READ_SHARE = 4
"""The first read of a remote file takes what its link moves in ``1 / FIRST_READ_SHARE``
of a latency (see :func:`first_read_bytes`)."""


def first_read_bytes(policy: MergePolicy) -> int:
    """Bytes the open of a file reads at once: :data:`~.format.HEAD_SIZE`, or, under
    a policy made from a cost model (a remote source), what its link moves in a
    quarter of a latency where that is more.

    The bytes past the head cost at most a quarter of a round trip, and save one
    wherever the index pages, the coordinates placed after the head (:mod:`.front`)
    or a large metadata run past it (500 kB for the default models of object
    storage and plain HTTP: 20 ms at 100 MB/s).
    """
    return max(HEAD_SIZE, ahead_bytes(policy) // FIRST_READ_SHARE)


class FileBytes:
    """The bytes of a file as its reader gets them: ``head``, the first
    :func:`first_read_bytes` (or the whole of a shorter file), read at open,
    then requests to ``source`` merged under ``policy`` for what lies beyond."""

    def __init__(self, source: ByteSource, policy: MergePolicy, head: bytes) -> None:
        self.source = source
        self.policy = policy
        self.head = head

    @classmethod
    def open(cls, source: ByteSource, policy: MergePolicy) -> FileBytes:
        """The bytes of ``source``, its head read with one request of
        :func:`first_read_bytes` under ``policy``."""
        return cls(source, policy, source.read(0, first_read_bytes(policy)))

    def region(self, offset: int, length: int, what: str, crc: int | None = None) -> bytes:
        """Bytes ``[offset, offset + length)``, from the head when it holds them;
        checked against ``crc`` unless it is None.

        Raises
        ------
        HurrayFormatError
            For bytes the file does not have, or a checksum mismatch, naming ``what``.
        """
        if offset + length <= len(self.head):
            data = self.head[offset : offset + length]
        else:
            data = self.source.read(offset, offset + length)
        self._check_length(data, offset, length, what)
        if crc is not None:
            verify(data, crc, what)
        return data

    def regions(self, parts: Sequence[tuple[int, int, str, int]]) -> list[bytes]:
        """The checked bytes of each ``(offset, length, what, crc32c)`` part, as
        :meth:`region` gives them, read in merged requests (see :meth:`ranges`)."""
        starts = np.array([p[0] for p in parts], dtype=np.int64)
        stops = starts + np.array([p[1] for p in parts], dtype=np.int64)
        out = self.ranges(starts, stops)
        for data, (offset, length, what, crc) in zip(out, parts, strict=True):
            self._check_length(data, offset, length, what)
            verify(data, crc, what)
        return out

    def ranges(self, starts: np.ndarray, stops: np.ndarray) -> list[bytes]:
        """The bytes ``[starts[k], stops[k])`` of each range (shorter where the file
        is): cut from the head where it holds them, the others read in requests merged
        under the policy, all sent at once."""
        outside = stops > len(self.head)
        plan = plan_reads(starts[outside], stops[outside], self.policy)
        blobs = self.source.read_ranges(plan.requests) if len(plan.requests) else []
        request_of = np.full(len(starts), -1, dtype=np.int64)
        request_of[outside] = plan.request_of
        out = []
        for start, stop, request in zip(
            starts.tolist(), stops.tolist(), request_of.tolist(), strict=True
        ):
            if request < 0:
                out.append(self.head[start:stop])
            else:
                first = int(plan.requests[request][0])
                out.append(blobs[request][start - first : stop - first])
        return out

    def _check_length(self, data: bytes, offset: int, length: int, what: str) -> None:
        if len(data) != length:
            raise HurrayFormatError(
                f"truncated file {self.source.name}: {what} needs bytes "
                f"[{offset}, {offset + length}), got {len(data)}"
            )


class FileModel:
    """A Hurray file as parsed: its header, metadata, index root and the index of each
    variable.

    Parameters
    ----------
    data
        Where its bytes come from.
    max_metadata_containers
        Most JSON arrays and objects the metadata may hold.

    Attributes
    ----------
    data
        Where its bytes come from.
    header
        The active slot of the header.
    metadata
        The description of its groups and variables.
    root
        The checked root: a reference to each variable's page table, by variable
        number.

    Raises
    ------
    HurrayFormatError
        When the header or the metadata is missing, truncated, corrupt or of a version
        this reader does not read, naming the problem.
    """

    header_size = HEADER_SIZE
    """Bytes of the header."""

    def __init__(self, data: FileBytes, max_metadata_containers: int) -> None:
        self.data = data
        self._lock = threading.Lock()
        self._indexes: dict[str, ChunkIndex] = {}
        self.header: Slot = unpack_header(data.head, data.source.size())
        slot = self.header
        # such a file changes only by appends that leave this version's bytes alone
        allow_appends = getattr(data.source, "allow_appends", None)
        if allow_appends is not None:
            allow_appends()
        metadata, root = data.regions(
            [
                (slot.metadata_offset, slot.metadata_length, "metadata", slot.metadata_crc32c),
                (slot.root_offset, slot.root_length, "the index root", slot.root_crc32c),
            ]
        )
        self.metadata: DatasetMeta = parse_metadata(metadata, max_metadata_containers)
        self.root = self._check_root(root)
        self._numbers = {path: k for k, (path, _) in enumerate(self.metadata.all_variables())}
        self._pages: OrderedDict[tuple[int, int], np.ndarray | None] = OrderedDict()
        self._cached_bytes = 0  # of the entries in self._pages

    @property
    def version(self) -> tuple[int, int]:
        """The format version of the file."""
        return self.header.version

    @property
    def fixed_parts(self) -> list[tuple[int, int, str]]:
        """The parts ``(offset, length, name)`` of the file outside the indexes of the
        variables and their chunks: the header, the metadata and the index root."""
        slot = self.header
        return [
            (0, self.header_size, "the header"),
            (slot.metadata_offset, slot.metadata_length, "the metadata"),
            (slot.root_offset, slot.root_length, "the index root"),
        ]

    def chunk_index(self, path: str) -> ChunkIndex:
        """The index of the variable at ``path``."""
        index = self._indexes.get(path)
        if index is None:
            # two threads may both make one: the first kept serves both
            var = self.metadata.variable(path)
            index = self._indexes.setdefault(path, ChunkIndex(self, path, var, self._numbers[path]))
        return index

    def _check_root(self, root: bytes) -> np.ndarray:
        variables = self.metadata.all_variables()
        if len(root) != REFERENCE.itemsize * len(variables):
            raise HurrayFormatError(
                f"the index root has {len(root)} bytes; the {len(variables)} variables "
                f"need {REFERENCE.itemsize * len(variables)}"
            )
        refs = np.frombuffer(root, dtype=REFERENCE)
        # a page table of more bytes than the file holds is refused before anything is
        # sized by the chunk count: that bounds the chunks a file may declare by its size
        lengths = np.array(
            [
                # -(-a // b) is the ceiling of a / b: a last page may be partial; the
                # min keeps a hostile chunk count inside int64 for the check to refuse
                min(-(-v.chunk_count // PAGE_ENTRIES) * PAGE_REFERENCE.itemsize, 2**63 - 1)
                for _, v in variables
            ],
            dtype=np.int64,
        )
        # offset 0 means no page table, which only a variable without chunks may have
        check_references(
            refs,
            lengths,
            "page table of variable",
            self.header.file_length,
            absent=False,
            names=[f"the page table of variable {path!r}" for path, _ in variables],
        )
        return refs

    def cached_pages(self, number: int, pages: Sequence[int]) -> dict[int, np.ndarray | None]:
        """The entries of those of ``pages`` of variable ``number`` that earlier reads
        keep (None: a page of missing chunks only), as most recently used."""
        with self._lock:
            found = {p: self._pages[(number, p)] for p in pages if (number, p) in self._pages}
            for p in found:
                self._pages.move_to_end((number, p))
        return found

    def keep_pages(self, number: int, found: dict[int, np.ndarray | None]) -> None:
        """Keep the entries of pages ``found`` of variable ``number`` for later reads,
        within :data:`PAGE_CACHE_BYTES`, the least recently used leaving first."""
        with self._lock:
            for p, entries in found.items():
                if (number, p) not in self._pages:
                    self._pages[(number, p)] = entries
                    self._cached_bytes += _cost(entries)
            while self._cached_bytes > PAGE_CACHE_BYTES:
                self._cached_bytes -= _cost(self._pages.popitem(last=False)[1])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _cost(entries: np.ndarray | None) -> int:
    """Bytes a page kept in the cache counts for (a page of missing chunks only, kept
    as None, for a dictionary slot)."""
    return 64 if entries is None else entries.nbytes


class ChunkIndex:
    """The index of one variable: the entries of its chunks in placement order,
    :data:`~.format.PAGE_ENTRIES` to a page, found through its page table; only the
    pages a read needs are read, and kept in the file's page cache (as stored).  An
    entry (:data:`~.format.INDEX_ENTRY`: offset, size, checksum) is given with the
    CRC-32C its chunk's bytes must have, its place taken out of the stored checksum
    (:func:`~.index.bound`); a chunk of size 0 is missing, all of its entry zero.

    Parameters
    ----------
    file
        The file's model.
    path
        The variable's path.
    var
        Its description.
    number
        Its variable number: its entry in the root.
    """

    def __init__(self, file: FileModel, path: str, var: VariableMeta, number: int) -> None:
        self.file = file
        self.path = path
        self.var = var
        self.number = number
        self.places = Places(path, var.grid_shape)
        """The places of the variable's chunks, pages and page table."""
        self._table: PageTable | None = None

    def table(self) -> PageTable:
        """The checked page table, read once."""
        file = self.file
        with file._lock:
            if self._table is None:
                ref = file.root[self.number]
                self._table = read_page_table(
                    lambda start, stop: file.data.region(start, stop - start, "a page table"),
                    (int(ref["offset"]), int(ref["crc32c"])),
                    -(-self.var.chunk_count // PAGE_ENTRIES),
                    place=self.places.table,
                    what=repr(self.path),
                    file_length=file.header.file_length,
                )
            return self._table

    def every_entry(self) -> np.ndarray:
        """The entry of every chunk, by row-major chunk index."""
        return self.entries(np.arange(self.var.chunk_count, dtype=np.int64))

    def entries(self, chunk_ids: np.ndarray) -> np.ndarray:
        """The entries of chunks ``chunk_ids`` (a 1-d array of row-major flat indices),
        read once and then held."""
        positions = self.var.positions(chunk_ids)
        pages = positions // PAGE_ENTRIES
        if len(pages) == 1:  # a dask task's one chunk: no sort to do
            wanted, inverse = pages, np.zeros(1, dtype=np.intp)
        else:
            wanted, inverse = np.unique(pages, return_inverse=True)
        found = self._fetch_pages(wanted.tolist())
        out = np.zeros(len(chunk_ids), dtype=INDEX_ENTRY)  # missing chunks stay zero
        # the rows of each page, grouped in one sort rather than a pass per page
        by_page = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[by_page], np.arange(len(wanted) + 1))
        for k, page in enumerate(wanted.tolist()):
            rows = found[page]
            if rows is not None:
                at = by_page[bounds[k] : bounds[k + 1]]
                out[at] = rows[positions[at] - page * PAGE_ENTRIES]
        return bound(out, self.places.chunks(chunk_ids))

    def entry(self, chunk_id: int) -> tuple[int, int, int] | None:
        """The entry of chunk ``chunk_id`` as ``(offset, size, crc32c)``, None for a
        missing chunk: what :meth:`entries` gives for it, without the arrays that
        serve many chunks there (each Dask task of ``chunks={}`` looks up one)."""
        position = int(self.var.positions(np.array([chunk_id], dtype=np.int64))[0])
        page = position // PAGE_ENTRIES
        rows = self._fetch_pages([page])[page]
        if rows is None:  # an absent page: all of its chunks missing
            return None
        entry = rows[position - page * PAGE_ENTRIES]
        if not entry["size"]:
            return None
        crc = int(entry["crc32c"]) ^ self.places.chunk(chunk_id)
        return int(entry["offset"]), int(entry["size"]), crc

    @staticmethod
    def stored(entries: np.ndarray) -> np.ndarray:
        """Which of ``entries`` are stored chunks."""
        return np.asarray(entries["size"] != 0)

    def stored_chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The placement positions, chunks (row-major flat indices) and entries of the
        stored chunks, in placement order, a batch at a time: what the variable
        stores, read without anything per chunk of its grid."""
        present = self.table().pages
        step = STORED_BATCH // PAGE_ENTRIES
        for first in range(0, len(present), step):
            pages = present[first : first + step].tolist()
            found = self._fetch_pages(pages)
            held = [(p, rows) for p in pages if (rows := found[p]) is not None]  # all, present
            kept = [(p, rows, np.flatnonzero(rows["size"])) for p, rows in held]
            if any(len(k) for _, _, k in kept):
                positions = np.concatenate([k + p * PAGE_ENTRIES for p, _, k in kept])
                chunk_ids = self.var.chunk_ids(positions)
                entries = np.concatenate([rows[k] for _, rows, k in kept])
                yield positions, chunk_ids, bound(entries, self.places.chunks(chunk_ids))

    def listing_bytes(self) -> int:
        """Bytes of index that :meth:`stored_chunks` reads (once read, they cost
        nothing more)."""
        return self.table().present_bytes

    def parts(self) -> list[tuple[int, int]]:
        """The byte ranges ``(offset, length)`` the index takes in the file."""
        table = self.table()
        parts = [(int(self.root_entry()["offset"]), table.count * PAGE_REFERENCE.itemsize)]
        parts += zip(table.refs["offset"].tolist(), table.lengths.tolist(), strict=True)
        return [part for part in parts if part[1]]

    def page_table(self) -> np.ndarray:
        """The page table as stored: a reference per index page, zero for an absent
        page."""
        return self.table().dense()

    def root_entry(self) -> np.void:
        """The root's reference (offset, checksum) to the page table, as stored."""
        entry: np.void = self.file.root[self.number]
        return entry

    def _fetch_pages(self, pages: list[int]) -> dict[int, np.ndarray | None]:
        """The checked entries of ``pages`` as stored, from the file's cache or read in
        merged requests; None for an absent page (all its chunks missing)."""
        file = self.file
        table = self.table()
        found = file.cached_pages(self.number, pages)
        if len(found) == len(pages):  # all kept from earlier reads
            return found
        # Pages are read without the lock, so reads of other variables do not wait on
        # this one's requests; two threads may then read the same page, and both
        # store equal, checked entries.
        todo = np.array([p for p in pages if p not in found], dtype=np.int64)
        rows = table.find(todo)
        for p in todo[rows < 0].tolist():
            found[p] = None
        stored, rows = todo[rows >= 0], rows[rows >= 0]
        read: dict[int, np.ndarray | None] = {}
        if len(stored):
            starts = table.refs["offset"][rows].astype(np.int64)
            lengths = table.lengths[rows]
            counts = page_counts(self.var.chunk_count, stored)
            # pages in the head are not read again
            blobs = file.data.ranges(starts, starts + lengths)
            for k, p in enumerate(stored.tolist()):
                entries = unpack_page(
                    blobs[k],
                    int(counts[k]),
                    length=int(lengths[k]),
                    crc=int(table.refs["crc32c"][rows[k]]) ^ self.places.page(p),
                    what=f"index page {p} of {self.path!r}",
                    file_length=file.header.file_length,
                )
                # a page of an empty bitmap reads, and is kept, as an absent one
                read[p] = entries if entries["size"].any() else None
        file.keep_pages(self.number, read)
        found.update(read)
        return found
