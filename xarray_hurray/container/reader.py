"""Reading a Hurray file: one request for the head, then, per read, the index pages
under the selection and merged range requests for the chunks it touches.

What every open reads is read once: the chunks of index coordinates and bounds
that lie in the open's first read (a new file places them right after the head, see
:mod:`.front`) are cut from its bytes, and such a variable, once read whole, is
held decoded, so that xarray asking for a coordinate again makes no request;
:meth:`ContainerReader.hold` reads several of them in one wave.  A pan's next boxes
are read ahead (:mod:`.readahead`)."""

from __future__ import annotations

# asyncio is imported in the functions that await: a reader that never awaits skips
# its import (25 ms of a cold process)
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property, partial, wraps
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from ..errors import HurrayChangedError, HurrayFormatError
from ..io import ByteSource, MergePolicy, ReadPlan, plan_reads
from ..io.remote import changed
from .checksum import Bytes, crc32c, verify
from .chunk import ChunkCodec
from .elements import parse_element_type
from .format import INDEX_ENTRY, Slot, unpack_header
from .front import held_variables
from .limits import MAX_CHUNK_BYTES, MAX_METADATA_CONTAINERS
from .metadata import DatasetMeta, VariableMeta
from .model import FileBytes, FileModel
from .readahead import AHEAD_STEPS, Pans, ahead_bytes, box_of, next_boxes
from .select import Index, Key, OuterSelection
from .threads import SCRATCH_BYTES, ordered_map, run_as_produced, scratch

DECODE_BATCH_BYTES = 256 * 2**10
"""Decoded bytes of the chunks one task of a read decodes: few hand-offs between
threads for small chunks, yet several tasks per answer for both decode threads."""

FILL_SLAB_BYTES = 8 * 2**20
"""Bytes of a read's result one task fills with the fill value where most of its
chunks are missing (:meth:`ContainerReader._fills`)."""

PIECE_BYTES = 2**20
"""Stored bytes one task of a read from a local source reads (at least one chunk):
large reads, few system calls, yet only a few pieces held while they are decoded."""


P = ParamSpec("P")
R = TypeVar("R")


def _telling_changes(
    method: Callable[Concatenate[ContainerReader, P], R],
) -> Callable[Concatenate[ContainerReader, P], R]:
    """``method`` of a reader, a damage it finds (a checksum mismatch, a file cut
    short) raised as :class:`HurrayChangedError` where the file's header no longer
    reads as at open (:meth:`ContainerReader._raise_if_changed`)."""

    @wraps(method)
    def telling(reader: ContainerReader, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(reader, *args, **kwargs)
        except HurrayFormatError as err:
            reader._raise_if_changed(err)
            raise

    return telling


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
    stored, starts, stops
        Where each stored chunk is in ``chunk_ids`` (missing chunks take no request)
        and its bytes ``[start, stop)``, in the order ``plan`` was made from.
    """

    name: str
    chunk_ids: np.ndarray
    entries: np.ndarray
    plan: ReadPlan
    codec: ChunkCodec
    stored: np.ndarray
    starts: np.ndarray
    stops: np.ndarray

    @cached_property
    def by_request(self) -> list[list[int]]:
        """The stored chunks (their positions in ``stored``) each request holds."""
        request_of = self.plan.request_of
        if len(self.plan.requests) == 1:
            return [list(range(len(request_of)))]
        order = np.argsort(request_of, kind="stable")
        counts = np.bincount(request_of, minlength=len(self.plan.requests))
        return [part.tolist() for part in np.split(order, np.cumsum(counts)[:-1])]


class ContainerReader:
    """Thread-safe, picklable reader of one Hurray file (format 1.3).

    Variables are named by their path: ``"name"`` in the root group, ``"a/b/name"``
    in group ``a/b``.

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
        Chunks are checked anyway from a source that cannot tell another version of
        the file from the one it first read (a server sending no ETag:
        :attr:`~xarray_hurray.io.ByteSource.pins_content`), where only the checksums
        keep a replaced file's chunks out of a read.
    max_chunk_bytes
        Most bytes one decoded chunk may take; reading a variable whose chunks need
        more raises :class:`HurrayFormatError` naming it.
    max_metadata_containers
        Most JSON arrays and objects the metadata may hold; each costs about 100 bytes
        of Python objects and some time to parse, so they are counted before parsing
        and a file with more is refused with :class:`HurrayFormatError` naming this cap.

    Raises
    ------
    HurrayFormatError
        When the header or the metadata is missing, truncated, corrupt or of a
        version this reader does not read: a later one, or a draft from before the
        first release (1.0 to 1.2), which no release reads.

    Reads raise :class:`HurrayChangedError`, naming what changed, where the file
    changed after it was opened: where an answer's size, ETag or Last-Modified is
    not its first read's (the source's check), and where a read finds damage and a
    second read of the header shows another one.
    """

    def __init__(
        self,
        source: ByteSource,
        policy: MergePolicy | None = None,
        verify_checksums: bool = True,
        max_chunk_bytes: int = MAX_CHUNK_BYTES,
        max_metadata_containers: int = MAX_METADATA_CONTAINERS,
    ) -> None:
        self.source = source
        self.policy = policy or source.default_policy()
        self.verify_checksums = verify_checksums
        self.max_chunk_bytes = max_chunk_bytes
        self.model = FileModel(FileBytes.open(source, self.policy), max_metadata_containers)
        """The file as parsed: header, metadata and the index of each variable."""
        self._codecs: dict[str, ChunkCodec] = {}
        self._held: dict[str, np.ndarray] = {}
        """The variables read whole once, decoded, by path (:meth:`hold`)."""
        self._held_bytes: list[tuple[int, bytes]] = [(0, self.model.data.head)]
        """Bytes of the file already fetched, as ``(offset, bytes)``: the head, and
        while :meth:`hold` decodes, what it fetched."""
        self._pans = Pans()
        """The box each variable's last read took, while reads come one at a time (a
        pan's step)."""
        self._ahead: dict[str, tuple[Fetched, Fetched]] = {}
        """Chunk bytes of each variable read ahead of a pan by its last two waves (each
        a tuple of ``(offset, bytes)``)."""

    @cached_property
    def holdable(self) -> frozenset[str]:
        """The variables held once read whole, and read from the head where their
        chunks lie there: index coordinates and bounds (:func:`~.front.held_variables`)."""
        return frozenset(held_variables(self.metadata))

    @_telling_changes
    def hold(self, paths: Iterable[str]) -> None:
        """Read the variables ``paths`` of :attr:`holdable` not held yet, and hold
        them: all their index entries first, then all their chunks in one wave of
        requests merged under the reader's policy (chunks inside the head take none).
        Other paths are left alone."""
        todo = [p for p in dict.fromkeys(paths) if p in self.holdable and p not in self._held]
        fetches = [self._fetch(p, np.arange(self.variable(p).chunk_count)) for p in todo]
        starts = np.concatenate([np.zeros(0, np.int64), *(f.starts for f in fetches)])
        stops = np.concatenate([np.zeros(0, np.int64), *(f.stops for f in fetches)])
        outside = ~self._inside_held(starts, stops)
        plan = plan_reads(starts[outside], stops[outside], self.policy)
        fetched = self.source.read_ranges(plan.requests) if len(plan.requests) else []
        got = [(int(r[0]), blob) for r, blob in zip(plan.requests, fetched, strict=True)]
        self._held_bytes.extend(got)
        try:
            for path in todo:
                self._whole(path)
        finally:
            # decoded, the bytes are no longer needed
            del self._held_bytes[len(self._held_bytes) - len(got) :]

    def _whole(self, path: str) -> np.ndarray:
        """Every value of the held variable ``path``, read once (read-only)."""
        found = self._held.get(path)
        if found is None:
            found = self._read(path, None)
            found.flags.writeable = False
            self._held[path] = found  # two threads may both read it: the same values
        return found

    def _fetched_for(self, name: str | None) -> list[tuple[int, bytes]]:
        """The bytes already fetched that reads of ``name`` may be cut from: the head
        (for a variable of :attr:`holdable`, or None: any), and what was read ahead."""
        head = self._held_bytes if name is None or name in self.holdable else []
        last, this = self._ahead.get(name or "", ((), ()))
        return [*head, *last, *this]

    def _inside_held(
        self, starts: np.ndarray, stops: np.ndarray, name: str | None = None
    ) -> np.ndarray:
        """Which ranges ``[starts[k], stops[k])`` lie inside bytes already fetched
        (for reads of ``name``, see :meth:`_fetched_for`)."""
        inside = np.zeros(len(starts), dtype=bool)
        for offset, blob in self._fetched_for(name):
            inside |= (starts >= offset) & (stops <= offset + len(blob))
        return inside

    def _fetched(self, start: int, stop: int, name: str | None = None) -> bytes | None:
        """Bytes ``[start, stop)`` cut from bytes already fetched (for reads of
        ``name``, see :meth:`_fetched_for`), None where they are not all there."""
        for offset, blob in self._fetched_for(name):
            if offset <= start and stop <= offset + len(blob):
                return blob[start - offset : stop - offset]
        return None

    def _range(self, name: str, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)`` of chunks of ``name``: for a variable of
        :attr:`holdable`, from bytes already fetched where they are there; else one
        request."""
        found = self._fetched(start, stop, name)
        return self.source.read(start, stop) if found is None else found

    def _answers(
        self, name: str, requests: np.ndarray, ahead: np.ndarray | None = None
    ) -> Iterator[tuple[int, Bytes]]:
        """``(request, bytes)`` for each of ``requests`` of chunks of ``name``, as they
        come: those inside bytes already fetched first (:meth:`_fetched_for`); the
        others sent together to the source, with the requests ``ahead`` of a pan when
        any goes out (merged with the read's own where the policy merges them; their
        answers kept for the reads to come)."""
        if not len(requests):
            return
        inside = self._inside_held(requests[:, 0], requests[:, 1], name)
        for k in np.flatnonzero(inside).tolist():
            start, stop = requests[k].tolist()
            found = self._fetched(start, stop, name)
            if found is None:  # let go of meanwhile (by another thread's hold)
                inside[k] = False
            else:
                yield k, found
        rest = np.flatnonzero(~inside)
        if not len(rest):
            return
        if ahead is None or not len(ahead):
            for k, blob in self.source.read_ranges_as_completed(requests[rest]):
                yield int(rest[k]), blob
            return
        ranges = np.concatenate([requests[rest], ahead]).astype(np.int64)
        plan = plan_reads(ranges[:, 0], ranges[:, 1], self.policy)
        members: list[list[int]] = [[] for _ in plan.requests]
        for k, request in enumerate(plan.request_of.tolist()):
            members[request].append(k)
        got: list[tuple[int, bytes]] = []
        for request, blob in self.source.read_ranges_as_completed(plan.requests):
            start = int(plan.requests[request][0])
            view = memoryview(blob)
            for k in members[request]:
                if k < len(rest):
                    lo, hi = int(ranges[k][0]) - start, int(ranges[k][1]) - start
                    yield int(rest[k]), blob if (lo, hi) == (0, len(blob)) else view[lo:hi]
            if members[request][-1] >= len(rest):  # ahead ranges come after the read's
                got.append((start, blob))
        # this wave's bytes ahead, and the last wave's, which the pan may still use
        self._ahead[name] = (self._ahead.get(name, ((), ()))[1], tuple(got))

    def _index_in_head(self, name: str) -> bool:
        """Whether the whole index of ``name`` came with the open's first read, so that
        the entries of chunks ahead of a pan cost no request before the read's own."""
        end = len(self.model.data.head)
        return all(offset + length <= end for offset, length in self.index_parts(name))

    def _read_ahead(
        self, name: str, key: Sequence[Key] | None, chunk_ids: np.ndarray, alone: bool
    ) -> np.ndarray:
        """The requests that fetch ahead of a pan whose step is ``key`` (a read of the
        chunks ``chunk_ids``): the stored chunks of the boxes to come, not read here nor
        already fetched, in the order of the boxes, as many as
        :func:`~.readahead.ahead_bytes` allows; no request where ``key`` is no step of a
        pan (or the read is not ``alone``, see :class:`~.readahead.Pans`), or where
        finding the chunks ahead would need index pages not read yet (a request of
        its own)."""
        var = self.variable(name)
        box = box_of(key, var.shape)
        none = np.zeros((0, 2), np.int64)
        if box is None or not alone:
            return none
        last = self._pans.step(name, box)
        budget = ahead_bytes(self.policy)
        if self.source.local or budget <= 0 or not self._index_in_head(name):
            return none
        ids: list[np.ndarray] = []
        for ahead in next_boxes(last, box, var.shape, AHEAD_STEPS):
            keys = tuple(slice(a, b) for a, b in ahead)
            ids.append(OuterSelection.build(keys, var.shape, var.chunks).chunk_ids())
        if not ids:
            return none
        order = np.concatenate(ids)
        _, first = np.unique(order, return_index=True)
        chosen = order[np.sort(first)]
        chosen = chosen[~np.isin(chosen, chunk_ids)]
        entries = self.entries(name, chosen)
        entries = entries[self.model.chunk_index(name).stored(entries)]
        starts = entries["offset"].astype(np.int64)
        stops = starts + entries["size"].astype(np.int64)
        keep = ~self._inside_held(starts, stops, name)
        starts, stops = starts[keep], stops[keep]
        within = np.cumsum(stops - starts) <= budget
        if not within.any():
            return none
        return plan_reads(starts[within], stops[within], self.policy).requests

    @property
    def header(self) -> Slot:
        """The active slot of the file's header."""
        return self.model.header

    @property
    def metadata(self) -> DatasetMeta:
        """The description of the file's groups and variables."""
        return self.model.metadata

    @property
    def version(self) -> tuple[int, int]:
        """The format version of the file."""
        return self.model.version

    def variable(self, path: str) -> VariableMeta:
        """The description of the variable at ``path``."""
        return self.metadata.variable(path)

    def index(self, path: str) -> np.ndarray:
        """The checked entries of every chunk of ``path``, by row-major chunk index
        (fetched once, then held); a missing chunk has size 0."""
        return self.model.chunk_index(path).every_entry()

    def entries(self, path: str, chunk_ids: np.ndarray) -> np.ndarray:
        """The checked entries of chunks ``chunk_ids`` (row-major flat indices) of
        ``path``.  Only the index pages holding them are read (merged into few
        requests) and kept for later reads."""
        chunk_ids = np.asarray(chunk_ids, dtype=np.int64).reshape(-1)
        return self.model.chunk_index(path).entries(chunk_ids)

    def stored_chunks(self, path: str) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The placement positions, chunks (row-major flat indices) and checked entries
        of the stored chunks of ``path``, in placement order, a few index pages at a
        time: what a variable stores, read without anything per chunk of its grid."""
        return self.model.chunk_index(path).stored_chunks()

    def index_parts(self, path: str) -> list[tuple[int, int]]:
        """The byte ranges ``(offset, length)`` of the index structures of ``path``:
        its page table and its stored pages."""
        return self.model.chunk_index(path).parts()

    def root_entry(self, path: str) -> np.void:
        """The root's reference to the page table of ``path`` as stored: offset and
        checksum."""
        return self.model.chunk_index(path).root_entry()

    def page_table(self, path: str) -> np.ndarray:
        """The checked page table of ``path``: a reference per index page, as stored
        (zero for an absent page)."""
        return self.model.chunk_index(path).page_table()

    def iter_chunks(
        self, name: str, chunk_ids: np.ndarray, entries: np.ndarray | None = None
    ) -> Iterator[np.ndarray]:
        """Decoded full chunks ``chunk_ids`` (row-major flat indices) of ``name``, in turn;
        ``entries`` are their index entries when the caller has them already.

        All requests are planned and fetched first; chunks are then checked and
        decoded in parallel on a shared thread pool, a little ahead of the caller.
        """
        fetch = self._fetch(name, chunk_ids, entries)
        yield from self._decoded(fetch, self.source.read_ranges(fetch.plan.requests))

    def _fetch(
        self, name: str, chunk_ids: np.ndarray, entries: np.ndarray | None = None
    ) -> ChunkFetch:
        """The merged requests that fetch chunks ``chunk_ids`` of ``name`` (its index
        pages under them are read first, once, unless their ``entries`` are given;
        missing chunks take no request)."""
        if entries is None:
            entries = self.entries(name, chunk_ids)
        stored = np.flatnonzero(self.model.chunk_index(name).stored(entries))
        starts = entries["offset"][stored].astype(np.int64)
        stops = starts + entries["size"][stored].astype(np.int64)
        plan = plan_reads(starts, stops, self.policy)
        return ChunkFetch(name, chunk_ids, entries, plan, self._codec(name), stored, starts, stops)

    def _codec(self, name: str) -> ChunkCodec:
        """The codec of variable ``name``, made at its first read (its codec chain
        and layout are parsed once, not by every read of a dask task)."""
        codec = self._codecs.get(name)
        if codec is None:
            try:
                codec = ChunkCodec(self.variable(name), self.max_chunk_bytes)
            except ValueError as err:
                raise HurrayFormatError(str(err)) from None
            self._codecs[name] = codec  # two threads may both make it: the same codec
        return codec

    def _decoded(self, fetch: ChunkFetch, blobs: Sequence[bytes]) -> Iterator[np.ndarray]:
        """The chunks of ``fetch``, checked and decoded from the answers ``blobs`` to its
        requests, in order; a missing chunk is :meth:`_fill_chunk`."""
        pieces: list[tuple[int, Bytes] | None] = [None] * len(fetch.entries)
        for request, blob in enumerate(blobs):
            chunks = fetch.by_request[request]
            for k, data in zip(chunks, self._chunk_bytes(fetch, request, blob), strict=True):
                pieces[int(fetch.stored[k])] = (k, data)
        fill = self._fill_chunk(fetch.codec)

        def decode(piece: tuple[int, Bytes] | None) -> np.ndarray:
            return fill if piece is None else self._decode(fetch, *piece)

        yield from ordered_map(decode, pieces)

    @staticmethod
    def _fill_value(codec: ChunkCodec) -> np.ndarray:
        """The element a missing chunk holds, in native byte order as decoded
        chunks are: a 0-d array."""
        var = codec.variable
        return np.array(var.fill, dtype=parse_element_type(var.dtype).newbyteorder("="))

    @classmethod
    def _fill_chunk(cls, codec: ChunkCodec) -> np.ndarray:
        """What a missing chunk reads as: the fill value broadcast to the chunk's
        shape (no memory per missing chunk, and read-only, so that a caller cannot
        change the fill of every other missing chunk)."""
        return np.broadcast_to(cls._fill_value(codec), codec.variable.chunks)

    def _chunk_bytes(self, fetch: ChunkFetch, request: int, blob: Bytes) -> list[Bytes]:
        """The bytes of the stored chunks of ``fetch`` that request ``request`` holds
        (``fetch.by_request``), cut from ``blob``, its answer, which must be whole."""
        req_start, req_stop = fetch.plan.requests[request].tolist()
        return self._cut(fetch, fetch.by_request[request], req_start, req_stop, blob)

    def _cut(
        self, fetch: ChunkFetch, chunks: Sequence[int], start: int, stop: int, blob: Bytes
    ) -> list[Bytes]:
        """The bytes of the stored ``chunks`` of ``fetch`` (positions in ``fetch.stored``),
        views into ``blob``, the bytes ``[start, stop)`` of the file, which must be whole."""
        self._check_whole(start, stop, blob)
        # views, not slices: a slice of bytes would copy every chunk once more
        view = memoryview(blob)
        out: list[Bytes] = []
        for k in chunks:
            lo, hi = int(fetch.starts[k]) - start, int(fetch.stops[k]) - start
            # a chunk that is a whole request is used as it came
            out.append(blob if (lo, hi) == (0, len(blob)) else view[lo:hi])
        return out

    def _check_whole(self, start: int, stop: int, blob: Bytes) -> None:
        """Raise unless ``blob``, read as the bytes ``[start, stop)`` of the file, holds
        all of them (a file cut short, or changed since it was opened)."""
        if len(blob) != stop - start:
            raise HurrayFormatError(
                f"truncated file {self.source.name}: bytes [{start}, {stop}) "
                f"returned {len(blob)} bytes"
            )

    def _pieces(self, fetch: ChunkFetch) -> Iterator[tuple[list[int], int, int]]:
        """The reads of ``fetch`` from a local source, in placement order: its requests
        cut between chunks into pieces of about :data:`PIECE_BYTES`, each as ``(chunks,
        start, stop)`` (positions in ``fetch.stored``, bytes ``[start, stop)``)."""
        for chunks in fetch.by_request:
            # by offset: the request's chunks come in the selection's order
            chunks = sorted(chunks, key=lambda k: int(fetch.starts[k]))
            run: list[int] = []
            start = stop = 0
            for k in chunks:
                lo, hi = int(fetch.starts[k]), int(fetch.stops[k])
                # a cut only where no chunk overlaps the next (equal chunks may share bytes)
                if run and lo >= stop and hi - start > PIECE_BYTES:
                    yield run, start, stop
                    run = []
                if not run:
                    start, stop = lo, hi
                run.append(k)
                stop = max(stop, hi)
            if run:
                yield run, start, stop

    def _decode(
        self,
        fetch: ChunkFetch,
        k: int,
        data: Bytes,
        into: np.ndarray | None = None,
        index: tuple[Index, ...] | None = None,
    ) -> np.ndarray:
        """Stored chunk ``k`` of ``fetch``, checked and decoded from its bytes ``data``
        (see :meth:`_checked_decode`), or its elements ``index``."""
        row = int(fetch.stored[k])
        expected = int(fetch.entries["crc32c"][row])
        return self._checked_decode(
            fetch.codec, data, expected, lambda: self._chunk_name(fetch, row), into, index
        )

    @staticmethod
    def _chunk_name(fetch: ChunkFetch, row: int) -> str:
        """How messages name chunk ``row`` of ``fetch``."""
        return f"chunk {int(fetch.chunk_ids.reshape(-1)[row])} of variable {fetch.name!r}"

    def _checked_decode(
        self,
        codec: ChunkCodec,
        data: Bytes,
        expected: int,
        what: Callable[[], str],
        into: np.ndarray | None = None,
        index: tuple[Index, ...] | None = None,
    ) -> np.ndarray:
        """A chunk checked against the CRC-32C ``expected`` of its bytes ``data`` and
        decoded by ``codec`` (its decompressed bytes in ``into`` where they fit: see
        :meth:`ChunkCodec.decode`), or only its elements ``index``
        (:meth:`ChunkCodec.decode_part`); ``what()`` names it in messages, made only
        for a damaged chunk."""
        checked = self.verify_checksums or not self.source.pins_content
        if checked and crc32c(data) != expected:
            verify(data, expected, what(), placed=True)
        try:
            if index is not None:
                return codec.decode_part(data, index, into)
            return codec.decode(data, into)
        except (ValueError, RuntimeError) as err:
            raise HurrayFormatError(f"cannot decode {what()}: {err}") from err

    @_telling_changes
    def read(self, name: str, key: Sequence[Key] | None = None) -> np.ndarray:
        """Outer selection ``key`` (one int, slice or integer array per axis) of ``name``.

        Only the chunks the selection touches are fetched.  From a local source they
        are read a piece at a time by the threads that decode them
        (:meth:`_pieces`); from others all requests go out at once and each answer
        is decoded as it arrives.  A selection that is one whole stored chunk is
        that chunk as decoded, with no copy into an array of the selection.  A
        variable of :attr:`holdable` read whole once is held, and read from there
        after.
        """
        if name in self._held or (name in self.holdable and self._whole_key(name, key)):
            return self._from_held(name, key)
        with self._pans.reading() as alone:
            return self._read(name, key, alone)

    def _whole_key(self, name: str, key: Sequence[Key] | None) -> bool:
        """Whether ``key`` selects every element of ``name`` in order."""
        if key is None:
            return True
        shape = self.variable(name).shape
        return len(key) == len(shape) and all(
            isinstance(k, slice) and k.indices(n) == (0, n, 1)
            for k, n in zip(key, shape, strict=True)
        )

    def _from_held(self, name: str, key: Sequence[Key] | None) -> np.ndarray:
        """Outer selection ``key`` of the holdable variable ``name`` (read whole
        first, if it is not held yet), an array of the caller's own."""
        whole = self._whole(name)
        key = tuple(slice(None) for _ in whole.shape) if key is None else tuple(key)
        # the whole variable as one chunk: the selection's machinery maps the key
        selection = OuterSelection.build(key, whole.shape, tuple(max(n, 1) for n in whole.shape))
        out = np.empty(selection.out_shape, dtype=whole.dtype)
        if out.size:
            out_index, in_index = selection.piece(0)
            out[out_index] = whole[in_index]
        return out.reshape(selection.result_shape)

    def _read(self, name: str, key: Sequence[Key] | None, alone: bool = False) -> np.ndarray:
        """:meth:`read`, never from held values; a read ``alone`` may be a step of a pan
        (see :class:`~.readahead.Pans`) and read ahead of it."""
        chunk_id = self._one_chunk(name, key)
        if chunk_id is not None:
            found = self._read_chunk(name, chunk_id, key, alone)
            if found is not None:
                return found
        selection, out = self._selection(name, key)
        if out.size:
            fetch, rows = self._plan(name, selection)
            if self.source.local:
                parts: Iterable[Part] = [
                    partial(self._read_piece, fetch, *piece) for piece in self._pieces(fetch)
                ]
            else:
                ahead = self._read_ahead(name, key, fetch.chunk_ids, alone)
                parts = self._answered(fetch, self._answers(name, fetch.plan.requests, ahead))
            self._fill(out, selection, fetch, rows, parts)
        return out.reshape(selection.result_shape)

    async def read_async(self, name: str, key: Sequence[Key] | None = None) -> np.ndarray:
        """:meth:`read` as a coroutine, so that reads awaited together overlap.

        The chunk bytes come from the source's :meth:`~ByteSource.read_ranges_async`;
        the first read of a variable's index and the decoding run in a thread, so the
        event loop is never blocked.  A held variable (:attr:`holdable`) is read as
        :meth:`read` reads it.
        """
        import asyncio

        try:
            if name in self._held or (name in self.holdable and self._whole_key(name, key)):
                return await asyncio.to_thread(self._from_held, name, key)
            selection, out = self._selection(name, key)
            # awaited reads overlap: they read nothing ahead, and no read beside them does
            with self._pans.reading():
                if out.size:
                    fetch, rows = await asyncio.to_thread(self._plan, name, selection)
                    blobs = await self.source.read_ranges_async(fetch.plan.requests)
                    parts = self._answered(fetch, enumerate(blobs))
                    await asyncio.to_thread(self._fill, out, selection, fetch, rows, parts)
            return out.reshape(selection.result_shape)
        except HurrayFormatError as err:
            await asyncio.to_thread(self._raise_if_changed, err)
            raise

    def _raise_if_changed(self, err: HurrayFormatError) -> None:
        """Raise :class:`HurrayChangedError` from ``err`` (damage a read found) where
        the file's header no longer reads as at open: the damage is then another
        file's bytes read where the first one's were, not damage.  One request of
        the header's bytes, whose answer the source also compares with its first
        read's size, ETag and Last-Modified (raising the error itself where they
        differ); where it cannot be read, ``err`` stands."""
        size = self.model.header_size
        try:
            now = self.source.read(0, size)
        except HurrayChangedError:
            raise
        except OSError:
            return
        if now == self.model.data.head[:size]:
            return
        was = self.model.header.generation
        try:
            found: int | None = unpack_header(now, None).generation
        except HurrayFormatError:
            found = None
        if found is None:
            what = "its header changed"
        elif found != was:
            what = f"its header's generation {was} became {found}"
        else:
            what = f"its header changed, at generation {was}: another file in its place"
        raise changed(self.source.name, what) from err

    def _plan(self, name: str, selection: OuterSelection) -> tuple[ChunkFetch, np.ndarray | None]:
        """The fetch of the chunks of ``selection`` of ``name``, and the row of each of
        its chunks among the selection's (None: the same rows).

        Two ways, whichever reads less index: the chunks of the selection, through the
        pages holding them (20 bytes of entry per chunk); or every stored chunk of the
        variable, through its pages, keeping those inside the selection.
        The second is taken when the pages the page table references take fewer bytes
        than the selection's entries would: a large selection of a grid of mostly
        missing chunks then costs its stored chunks, never a step per chunk of it.
        """
        touched = math.prod(selection.chunk_counts)
        index = self.model.chunk_index(name)
        if index.listing_bytes() < touched * INDEX_ENTRY.itemsize:
            ids, entries, rows = [], [], []
            for _, chunk_ids, stored in index.stored_chunks():
                at = selection.rows_of(chunk_ids)
                inside = at >= 0
                ids.append(chunk_ids[inside])
                entries.append(stored[inside])
                rows.append(at[inside])
            if not ids:
                empty = np.empty(0, dtype=np.int64)
                ids, entries, rows = [empty], [np.empty(0, INDEX_ENTRY)], [empty]
            fetch = self._fetch(name, np.concatenate(ids), np.concatenate(entries))
            return fetch, np.concatenate(rows)
        return self._fetch(name, selection.chunk_ids()), None

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

    def _one_chunk(self, name: str, key: Sequence[Key] | None) -> int | None:
        """The row-major id of the whole stored chunk that ``key`` selects, when it is
        slices of unit step covering exactly one full chunk (what a Dask task of
        ``chunks={}`` asks for); None for any other key."""
        if key is None:
            return None
        var = self.variable(name)
        if len(key) != len(var.shape) or not var.shape:
            return None
        chunk_id = 0
        for k, n, c, count in zip(key, var.shape, var.chunks, var.grid_shape, strict=True):
            if not isinstance(k, slice) or k.step not in (None, 1):
                return None
            start, stop = k.start or 0, n if k.stop is None else k.stop
            if not (isinstance(start, int) and isinstance(stop, int)):
                return None
            if start < 0 or start % c or stop != start + c or stop > n:
                return None
            chunk_id = chunk_id * count + start // c
        return chunk_id

    def _read_chunk(
        self, name: str, chunk_id: int, key: Sequence[Key] | None, alone: bool
    ) -> np.ndarray | None:
        """Stored chunk ``chunk_id`` of ``name``, which ``key`` selects whole, as decoded
        (writable, owned by the caller), with one read of its bytes and no selection
        mapped onto the grid, the chunks ahead of a pan (:meth:`_read_ahead`) fetched
        in the same wave; None where the chunk is missing or its codec has no fixed
        decoded size (then :meth:`read` plans the selection)."""
        codec = self._codec(name)
        if codec.raw_bytes is None:
            return None
        found = self.model.chunk_index(name).entry(chunk_id)
        if found is None:  # missing
            return None
        start, size, expected = found
        ahead = self._read_ahead(name, key, np.array([chunk_id]), alone)
        if len(ahead):
            requests = np.array([[start, start + size]], dtype=np.int64)
            # every answer taken, so that those ahead are kept for the next reads
            data = dict(self._answers(name, requests, ahead))[0]
        else:
            data = self._range(name, start, start + size)
        self._check_whole(start, start + size, data)
        # decompressed into an array of its own, which a row-major chunk is a view of
        into = np.empty(codec.raw_bytes, dtype=np.uint8)
        chunk = self._checked_decode(
            codec, data, expected, lambda: f"chunk {chunk_id} of variable {name!r}", into
        )
        chunk = chunk.reshape(codec.variable.chunks)
        native = parse_element_type(codec.variable.dtype).newbyteorder("=")
        if chunk.flags.writeable and chunk.dtype == native:
            return chunk
        return np.array(chunk, dtype=native)

    def _read_piece(
        self, fetch: ChunkFetch, chunks: list[int], start: int, stop: int
    ) -> tuple[list[int], list[Bytes]]:
        """Stored ``chunks`` of ``fetch`` and their bytes, read as the one range
        ``[start, stop)`` (a piece of :meth:`_pieces`)."""
        return chunks, self._cut(fetch, chunks, start, stop, self._range(fetch.name, start, stop))

    def _answered(self, fetch: ChunkFetch, answers: Iterable[tuple[int, Bytes]]) -> Iterator[Part]:
        """The chunks of each answer ``(request, bytes)`` to the requests of ``fetch``,
        as it arrives, in batches of about :data:`DECODE_BATCH_BYTES` decoded."""
        batch = max(DECODE_BATCH_BYTES // fetch.codec.max_decoded, 1)
        for request, blob in answers:
            chunks = fetch.by_request[request]
            blobs = self._chunk_bytes(fetch, request, blob)
            for b in range(0, len(chunks), batch):
                yield partial(_given, chunks[b : b + batch], blobs[b : b + batch])

    def _fill(
        self,
        out: np.ndarray,
        selection: OuterSelection,
        fetch: ChunkFetch,
        rows: np.ndarray | None,
        parts: Iterable[Part],
    ) -> None:
        """Copy the selected elements of the chunks of ``fetch`` into ``out``, each part
        (:meth:`_answered`, :meth:`_read_piece`) checked, decoded and placed by a task
        of the decode pool, run as soon as it is known, while later answers are
        still on their way.  ``rows`` gives the row of each chunk of ``fetch`` among
        the selection's (None: the same); the selection's chunks ``fetch`` does not
        store are missing, their places filled by tasks of the same pool
        (:meth:`_fills`).  A damaged chunk raises once all are done, the first of
        them in ``selection``'s order (as the order of arrival varies)."""
        row_of = fetch.stored if rows is None else rows[fetch.stored]
        raw_bytes = fetch.codec.raw_bytes
        batch = max(DECODE_BATCH_BYTES // fetch.codec.max_decoded, 1)
        touched = len(fetch.chunk_ids) if rows is None else math.prod(selection.chunk_counts)
        fills = self._fills(out, selection, row_of, touched, fetch.codec, batch)

        def place(part: Part) -> Failure | None:
            chunks, blobs = part()
            # decompressed into this thread's buffer, then placed: the layout's copy
            # (a chunk too large for the buffer a thread keeps is decoded into one
            # of its own, made only where it is decoded whole)
            kept = raw_bytes is not None and raw_bytes <= SCRATCH_BYTES
            buffer = scratch(raw_bytes) if kept and raw_bytes is not None else None
            for k, data in zip(chunks, blobs, strict=True):
                out_index, in_index = selection.piece(int(row_of[k]))
                try:
                    out[out_index] = self._decode(fetch, k, data, buffer, in_index)
                except HurrayFormatError as err:
                    return k, err
            return None

        def tasks() -> Iterator[Callable[[], Failure | None]]:
            yield from fills  # first: they need nothing from the source
            for part in parts:
                yield partial(place, part)

        # a read of one batch is decoded here, without handing it to a thread
        one = len(parts) == 1 if isinstance(parts, list) else len(fetch.stored) <= batch
        if one and len(fills) <= 1:
            results = [task() for task in tasks()]
        else:
            results = run_as_produced(tasks())
        failed = [result for result in results if result is not None]
        if failed:
            raise min(failed, key=lambda kf: int(row_of[kf[0]]))[1]

    def _fills(
        self,
        out: np.ndarray,
        selection: OuterSelection,
        stored_rows: np.ndarray,
        touched: int,
        codec: ChunkCodec,
        batch: int,
    ) -> list[Callable[[], Failure | None]]:
        """The tasks that fill the places of the missing chunks of a read into ``out``
        with the fill value: the rows of ``selection``'s ``touched`` chunks not in
        ``stored_rows``, ``batch`` chunks a task, to run beside the decoding.  Where
        more chunks are missing than stored (a sparse grid), a step per missing chunk
        would cost more than filling all of ``out``: that is done here and now, in
        slabs on the decode pool, and no task is left (the stored chunks are then
        placed over it)."""
        missing_count = touched - len(stored_rows)
        if not missing_count:
            return []
        fill = self._fill_value(codec)
        if missing_count > len(stored_rows):
            flat = out.reshape(-1)  # a view: ``out`` is a new contiguous array
            step = max(FILL_SLAB_BYTES // max(out.itemsize, 1), 1)

            def fill_slab(start: int) -> None:
                flat[start : start + step] = fill

            run_as_produced(partial(fill_slab, start) for start in range(0, flat.size, step))
            return []
        present = np.zeros(touched, dtype=bool)
        present[stored_rows] = True
        missing = np.flatnonzero(~present).tolist()

        def fill_rows(rows: list[int]) -> Failure | None:
            for row in rows:
                out[selection.piece(row)[0]] = fill
            return None

        return [partial(fill_rows, missing[b : b + batch]) for b in range(0, len(missing), batch)]

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_codecs"] = {}  # made again where the reader goes
        state["_held"] = {}  # read again where needed, not shipped to every task
        state["_held_bytes"] = state["_held_bytes"][:1]
        state["_ahead"] = {}
        return state


Failure = tuple[int, Exception]
"""A damaged chunk of a read (its position in ``ChunkFetch.stored``) and its error."""

Fetched = tuple[tuple[int, bytes], ...]
"""Bytes already fetched, as ``(offset, bytes)``."""

Part = Callable[[], tuple[list[int], list[Bytes]]]
"""Some stored chunks of a read and their bytes (positions in ``ChunkFetch.stored``),
got by calling it: cut from an answer already in, or read from the source."""


def _given(chunks: list[int], blobs: list[Bytes]) -> tuple[list[int], list[Bytes]]:
    """The part of chunks ``chunks`` whose bytes ``blobs`` are already in."""
    return chunks, blobs
