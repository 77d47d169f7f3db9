"""The in-memory model of a Hurray file, of every format version (1.0, 1.1, 1.2).

A file is parsed here, and only here: :func:`open_model` tells the versions apart
once, from the header, and gives a :class:`FileModel` of the file's parts, each
parsed and checked when first asked for:

- its header: the 1.0 :class:`~.format.Header`, or from 1.1 the active
  :class:`~.format.Slot` of the header of two slots;
- its metadata, a :class:`~.metadata.DatasetMeta`;
- for each variable, a :class:`ChunkIndex`: the entries of some chunks, the stored
  chunks in placement order, the byte parts of the index and whether a chunk is
  stored, whether the index is 1.0's one array per variable (:class:`FlatIndex`) or
  pages found through a root and page tables (:class:`PagedIndex`, its pages of the
  version's :class:`~.index.PageFormat`).

What else a version decides is a property of its model, not a comparison of
version numbers where it is used: which parts are fixed (:attr:`FileModel.fixed_parts`),
whether the chunks must lie back to back (:attr:`FileModel.back_to_back`), whether
the file can be changed in place (:attr:`FileModel.in_place_updates`) and the page
format that an update of it writes (:attr:`PagedFile.pages`).  The reader,
``verify`` and the updates work on the model alone.

The model reads through :class:`FileBytes`: the first :data:`~.format.HEAD_SIZE`
bytes of the file (more from a remote source, :func:`first_read_bytes`), read once
at open, then requests merged under the reader's policy
for whatever lies beyond them.  It is thread-safe (what it has read is held under one
lock) and picklable.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import HurrayFormatError, HurrayValueError
from ..io import ByteSource, MergePolicy, plan_reads
from .checksum import verify
from .format import (
    HEAD_SIZE,
    HEADER_SIZE,
    INDEX_ENTRY,
    PAGE_ENTRIES,
    REFERENCE,
    SLOT_HEADER_SIZE,
    Header,
    Slot,
    check_version,
    unpack_slot_header,
)
from .index import (
    PageFormat,
    PageTable,
    check_references,
    page_counts,
    page_format,
    read_page_table,
    unpack_index,
)
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


class ChunkIndex(ABC):
    """The chunk index of one variable, whatever the file's version: where each chunk
    is, which chunks are stored and where the index itself lies.  Entries are
    :data:`~.format.INDEX_ENTRY` (offset, size, crc32c), checked when read; an entry
    of a missing chunk (from 1.1) is all zero.

    Parameters
    ----------
    path
        The variable's path.
    var
        Its description.
    """

    def __init__(self, path: str, var: VariableMeta) -> None:
        self.path = path
        self.var = var

    def every_entry(self) -> np.ndarray:
        """The entry of every chunk, by row-major chunk index."""
        return self.entries(np.arange(self.var.chunk_count, dtype=np.int64))

    @abstractmethod
    def entries(self, chunk_ids: np.ndarray) -> np.ndarray:
        """The entries of chunks ``chunk_ids`` (a 1-d array of row-major flat indices),
        read once and then held."""

    @abstractmethod
    def entry(self, chunk_id: int) -> tuple[int, int, int] | None:
        """The entry of chunk ``chunk_id`` as ``(offset, size, crc32c)``, None for a
        missing chunk: what :meth:`entries` gives for it, without the arrays that
        serve many chunks there (each Dask task of ``chunks={}`` looks up one)."""

    @abstractmethod
    def stored(self, entries: np.ndarray) -> np.ndarray:
        """Which of ``entries`` (of this index) are stored chunks."""

    @abstractmethod
    def stored_chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The placement positions and entries of the stored chunks, in placement
        order, a batch at a time: what the variable stores, read without anything
        per chunk of its grid where the index lists stored chunks only."""

    @abstractmethod
    def listing_bytes(self) -> int:
        """Bytes of index that :meth:`stored_chunks` reads (once read, they cost
        nothing more)."""

    @abstractmethod
    def parts(self) -> list[tuple[int, int]]:
        """The byte ranges ``(offset, length)`` the index takes in the file."""

    @abstractmethod
    def page_table(self) -> np.ndarray:
        """The page table as stored: a reference per index page, zero for an absent
        page (only an index of pages has one)."""

    @abstractmethod
    def root_entry(self) -> np.void:
        """The root's reference (offset, crc32c) to the page table (only an index of
        pages has one)."""


class FileModel(ABC):
    """A Hurray file as parsed: its header, metadata and the index of each variable.

    Attributes
    ----------
    data
        Where its bytes come from.
    header
        The 1.0 header, or the active slot (from 1.1).
    metadata
        The description of its groups and variables.
    header_size
        Bytes of the header.
    in_place_updates
        Whether a new version can be committed in place, after the bytes of this one
        (from 1.1: the header has two slots); else an update rewrites the file.
    """

    header: Header | Slot
    metadata: DatasetMeta
    header_size: ClassVar[int]
    in_place_updates: ClassVar[bool]

    def __init__(self, data: FileBytes) -> None:
        self.data = data
        self._lock = threading.Lock()
        self._indexes: dict[str, ChunkIndex] = {}

    @property
    def version(self) -> tuple[int, int]:
        """The format version of the file."""
        return self.header.version

    @property
    def fixed_parts(self) -> list[tuple[int, int, str]]:
        """The parts ``(offset, length, name)`` of the file outside the indexes of the
        variables and their chunks: the header, the metadata and, from 1.1, the index
        root."""
        header = self.header
        return [
            (0, self.header_size, "the header"),
            (header.metadata_offset, header.metadata_length, "the metadata"),
        ]

    @property
    def back_to_back(self) -> tuple[int, int] | None:
        """The bytes ``[start, stop)`` that the chunks fill without a gap, variable by
        variable and each in its placement order, where the version requires that
        (1.0); None where they may lie anywhere (from 1.1)."""
        return None

    def chunk_index(self, path: str) -> ChunkIndex:
        """The index of the variable at ``path``."""
        index = self._indexes.get(path)
        if index is None:
            # two threads may both make one: the first kept serves both
            index = self._indexes.setdefault(path, self._index(path, self.metadata.variable(path)))
        return index

    @abstractmethod
    def _index(self, path: str, var: VariableMeta) -> ChunkIndex:
        """A new index of variable ``var`` at ``path``."""

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def open_model(data: FileBytes, max_metadata_containers: int) -> FileModel:
    """The model of the file whose bytes ``data`` gives, its header and metadata
    parsed and checked (the indexes are read when first asked for).

    Raises
    ------
    HurrayFormatError
        When the header or the metadata is missing, truncated, corrupt or of a
        later version, naming the problem.
    """
    _, minor = check_version(data.head)
    size = data.source.size()
    # the one place versions are told apart: 1.0 has its own header and a flat index,
    # every later version two slots and an index of pages
    model = FlatFile if minor == 0 else PagedFile
    return model(data, size, max_metadata_containers)


class FlatFile(FileModel):
    """A format 1.0 file: the fixed header, the metadata, one index per variable and
    the chunks back to back after them."""

    header: Header
    header_size = HEADER_SIZE
    in_place_updates = False

    def __init__(self, data: FileBytes, size: int | None, max_metadata_containers: int) -> None:
        super().__init__(data)
        self.header = header = Header.unpack(data.head)
        if size is not None and size != header.file_length:
            raise HurrayFormatError(
                f"{data.source.name} has {size} bytes but its header records "
                f"{header.file_length}: the file is truncated or was appended to"
            )
        metadata = data.region(
            header.metadata_offset, header.metadata_length, "metadata", header.metadata_crc32c
        )
        self.metadata = parse_metadata(metadata, header.version, max_metadata_containers)
        if self.metadata.index_length != header.index_length:
            raise HurrayFormatError(
                f"the header records an index region of {header.index_length} bytes, "
                f"the chunk grids of the variables need {self.metadata.index_length}"
            )
        self._index_offsets = self.metadata.index_offsets(header.index_offset)

    @property
    def back_to_back(self) -> tuple[int, int]:
        return self.header.data_offset, self.header.file_length

    def _index(self, path: str, var: VariableMeta) -> ChunkIndex:
        return FlatIndex(self, path, var, self._index_offsets[var.name])


class FlatIndex(ChunkIndex):
    """The 1.0 index of a variable: the entry of every chunk in row-major order, then
    their crc32c, read whole at the first use.  Every chunk is stored."""

    def __init__(self, file: FlatFile, path: str, var: VariableMeta, offset: int) -> None:
        super().__init__(path, var)
        self.file = file
        self.offset = offset
        self._entries: np.ndarray | None = None

    def every_entry(self) -> np.ndarray:
        with self.file._lock:
            if self._entries is None:
                var, header = self.var, self.file.header
                data = self.file.data.region(
                    self.offset, var.index_length, f"index of {self.path!r}"
                )
                self._entries = unpack_index(
                    data, var.chunk_count, self.path, header.data_offset, header.file_length
                )
            return self._entries

    def entries(self, chunk_ids: np.ndarray) -> np.ndarray:
        entries: np.ndarray = self.every_entry()[chunk_ids]
        return entries

    def entry(self, chunk_id: int) -> tuple[int, int, int]:
        entry = self.every_entry()[chunk_id]
        return int(entry["offset"]), int(entry["size"]), int(entry["crc32c"])

    def stored(self, entries: np.ndarray) -> np.ndarray:
        return np.ones(len(entries), dtype=bool)

    def stored_chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        index, count = self.every_entry(), self.var.chunk_count
        for first in range(0, count, STORED_BATCH):
            positions = np.arange(first, min(first + STORED_BATCH, count), dtype=np.int64)
            yield positions, index[self.var.placement[positions]]

    def listing_bytes(self) -> int:
        # the whole index, which any entry of it reads too
        return self.var.index_length

    def parts(self) -> list[tuple[int, int]]:
        return [(self.offset, self.var.index_length)]

    def page_table(self) -> np.ndarray:
        raise HurrayValueError(self._no_pages())

    def root_entry(self) -> np.void:
        raise HurrayValueError(self._no_pages())

    def _no_pages(self) -> str:
        return f"{self.path!r} is of a format 1.0 file: its index is one array, without pages"


class PagedFile(FileModel):
    """A file of format 1.1 or later: the header of two slots, the metadata of a tree
    of groups, the index root, and per variable a page table of index pages in the
    page format of the file's version (:attr:`pages`), the parts anywhere in the file.

    Attributes
    ----------
    pages
        How the file's index pages and page table entries are laid out; an update
        in place writes its pages so (a file keeps its version for the life of its
        bytes).
    root
        The checked root: a reference to each variable's page table, by variable
        number.
    """

    header: Slot
    header_size = SLOT_HEADER_SIZE
    in_place_updates = True

    def __init__(self, data: FileBytes, size: int | None, max_metadata_containers: int) -> None:
        super().__init__(data)
        self.header = slot = unpack_slot_header(data.head, size)
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
        self.metadata = parse_metadata(metadata, slot.version, max_metadata_containers)
        self.pages: PageFormat = page_format(slot.version)
        self.root = self._check_root(root)
        self._numbers = {path: k for k, (path, _) in enumerate(self.metadata.all_variables())}
        self._pages: OrderedDict[tuple[int, int], np.ndarray | None] = OrderedDict()
        self._cached_bytes = 0  # of the entries in self._pages

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
                min(-(-v.chunk_count // PAGE_ENTRIES) * self.pages.reference.itemsize, 2**63 - 1)
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

    @property
    def fixed_parts(self) -> list[tuple[int, int, str]]:
        slot = self.header
        return [*super().fixed_parts, (slot.root_offset, slot.root_length, "the index root")]

    def _index(self, path: str, var: VariableMeta) -> ChunkIndex:
        return PagedIndex(self, path, var, self._numbers[path])

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


def _cost(entries: np.ndarray | None) -> int:
    """Bytes a page kept in the cache counts for (a page of missing chunks only, kept
    as None, for a dictionary slot)."""
    return 64 if entries is None else entries.nbytes


class PagedIndex(ChunkIndex):
    """The index of a variable of a file of format 1.1 or later: the entries of its
    chunks in placement order, :data:`~.format.PAGE_ENTRIES` to a page, found through
    its page table; only the pages a read needs are read, and kept in the file's page
    cache.  A chunk of size 0 is missing."""

    def __init__(self, file: PagedFile, path: str, var: VariableMeta, number: int) -> None:
        super().__init__(path, var)
        self.file = file
        self.number = number
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
                    self.var.chunk_count,
                    pages=file.pages,
                    what=repr(self.path),
                    file_length=file.header.file_length,
                )
            return self._table

    def entries(self, chunk_ids: np.ndarray) -> np.ndarray:
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
        return out

    def entry(self, chunk_id: int) -> tuple[int, int, int] | None:
        position = int(self.var.positions(np.array([chunk_id], dtype=np.int64))[0])
        page = position // PAGE_ENTRIES
        rows = self._fetch_pages([page])[page]
        if rows is None:  # an absent page: all of its chunks missing
            return None
        entry = rows[position - page * PAGE_ENTRIES]
        if not entry["size"]:
            return None
        return int(entry["offset"]), int(entry["size"]), int(entry["crc32c"])

    def stored(self, entries: np.ndarray) -> np.ndarray:
        return np.asarray(entries["size"] != 0)

    def stored_chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        present = self.table().pages
        step = STORED_BATCH // PAGE_ENTRIES
        for first in range(0, len(present), step):
            pages = present[first : first + step].tolist()
            found = self._fetch_pages(pages)
            held = [(p, rows) for p in pages if (rows := found[p]) is not None]  # all, present
            kept = [(p, rows, np.flatnonzero(rows["size"])) for p, rows in held]
            if any(len(k) for _, _, k in kept):
                yield (
                    np.concatenate([k + p * PAGE_ENTRIES for p, _, k in kept]),
                    np.concatenate([rows[k] for _, rows, k in kept]),
                )

    def listing_bytes(self) -> int:
        return self.table().present_bytes

    def parts(self) -> list[tuple[int, int]]:
        table = self.table()
        reference = self.file.pages.reference
        parts = [(int(self.root_entry()["offset"]), table.count * reference.itemsize)]
        parts += zip(table.refs["offset"].tolist(), table.lengths.tolist(), strict=True)
        return [part for part in parts if part[1]]

    def page_table(self) -> np.ndarray:
        return self.table().dense()

    def root_entry(self) -> np.void:
        entry: np.void = self.file.root[self.number]
        return entry

    def _fetch_pages(self, pages: list[int]) -> dict[int, np.ndarray | None]:
        """The checked entries of ``pages``, from the file's cache or read in merged
        requests; None for an absent page (all its chunks missing)."""
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
                entries = file.pages.unpack(
                    blobs[k],
                    int(counts[k]),
                    length=int(lengths[k]),
                    crc=int(table.refs["crc32c"][rows[k]]),
                    what=f"index page {p} of {self.path!r}",
                    file_length=file.header.file_length,
                )
                # a page of missing chunks only (1.1, or a 1.2 page of an empty bitmap)
                # reads, and is kept, as an absent one
                read[p] = entries if entries["size"].any() else None
        file.keep_pages(self.number, read)
        found.update(read)
        return found
