"""Reading a Hurray file: one request for the head, then, per read, the index pages
under the selection and merged range requests for the chunks it touches.

:class:`ContainerReader` is the reader's face; its parts each hold one idea:

- :mod:`.model`: the file as parsed (header, metadata, index pages);
- :mod:`.fetched`: the bytes fetched already that reads cut chunks from (the head,
  and what was read ahead of a pan);
- :mod:`.read_plan`: which chunks a selection needs, which requests go out, and what
  is read ahead (:mod:`.readahead` tells a pan's steps);
- :mod:`.read_paths`: one path per kind of source (local pieces, remote waves), and a
  read as steps that :meth:`~ContainerReader.read` runs blocking and
  :meth:`~ContainerReader.read_async` awaits;
- :mod:`.decode`: the bytes checked, decoded and placed on the decode pool.

What every open reads is read once: the chunks of index coordinates and bounds
that lie in the open's first read (a new file places them right after the head, see
:mod:`.front`) are cut from its bytes, and such a variable, once read whole, is
held decoded, so that xarray asking for a coordinate again makes no request;
:meth:`ContainerReader.hold` reads several of them in one wave."""

from __future__ import annotations

# asyncio is imported in the functions that await: a reader that never awaits skips
# its import (25 ms of a cold process)
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property, partial, wraps
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from ..errors import HurrayChangedError, HurrayFormatError
from ..io import ByteSource, MergePolicy, plan_reads
from ..io.remote import changed
from .chunk import ChunkCodec
from .decode import ChunkDecoder
from .elements import parse_element_type
from .fetched import ByteCache, Fetched, Spans
from .format import Slot, unpack_header
from .front import held_variables
from .limits import MAX_CHUNK_BYTES, MAX_METADATA_CONTAINERS
from .metadata import DatasetMeta, VariableMeta
from .model import FileBytes, FileModel
from .read_paths import Steps, local_parts, remote_answers, run, run_async
from .read_plan import (
    Answers,
    ChunkFetch,
    Wave,
    ahead_chunks,
    ahead_requests,
    one_chunk,
    plan_selection,
    whole_key,
)
from .readahead import Pans, ahead_bytes, box_of
from .select import Key, OuterSelection

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
        self.max_chunk_bytes = max_chunk_bytes
        self.model = FileModel(FileBytes.open(source, self.policy), max_metadata_containers)
        """The file as parsed: header, metadata and the index of each variable."""
        self.decoder = ChunkDecoder(source, verify_checksums)
        """Checks and decodes the chunks."""
        self._codecs: dict[str, ChunkCodec] = {}
        self._held: dict[str, np.ndarray] = {}
        """The variables read whole once, decoded, by path (:meth:`hold`)."""
        self._cache = ByteCache(self.model.data.head)
        """The bytes fetched already: the head, and what pans read ahead."""
        self._pans = Pans()
        """The box each variable's last read took, while reads come one at a time (a
        pan's step)."""

    @property
    def verify_checksums(self) -> bool:
        """Whether the crc32c of every chunk is checked before it is decoded."""
        return self.decoder.verify_checksums

    @cached_property
    def holdable(self) -> frozenset[str]:
        """The variables held once read whole, and read from the head where their
        chunks lie there: index coordinates and bounds (:func:`~.front.held_variables`)."""
        return frozenset(held_variables(self.metadata))

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
        yield from self.decoder.decoded(fetch, self.source.read_ranges(fetch.plan.requests))

    @_telling_changes
    def read(self, name: str, key: Sequence[Key] | None = None) -> np.ndarray:
        """Outer selection ``key`` (one int, slice or integer array per axis) of ``name``.

        Only the chunks the selection touches are fetched.  From a local source they
        are read a piece at a time by the threads that decode them; from others all
        requests go out at once, with those ahead of a pan (:mod:`.readahead`), and
        each answer is decoded as it arrives (:mod:`.read_paths`).  A selection that
        is one whole stored chunk is that chunk as decoded, with no copy into an
        array of the selection.  A variable of :attr:`holdable` read whole once is
        held, and read from there after.
        """
        if self._from_whole(name, key):
            return self._from_held(name, key, self._whole(name))
        with self._pans.reading() as alone:
            return run(self._steps(name, key, alone), self.source)

    async def read_async(self, name: str, key: Sequence[Key] | None = None) -> np.ndarray:
        """:meth:`read` as a coroutine, so that reads awaited together overlap.

        The same read as :meth:`read` (held variables, a whole chunk as decoded, the
        pieces of a local file, readahead on a pan, the checks for a changed file),
        its bytes awaited from the source's
        :meth:`~xarray_hurray.io.ByteSource.read_ranges_async`; planning, index pages
        and decoding run in a thread, so the event loop is never blocked.  Reads
        awaited one after another are the steps of a pan as blocking ones are; reads
        awaited together overlap, and read nothing ahead (:class:`~.readahead.Pans`).
        """
        import asyncio

        try:
            if self._from_whole(name, key):
                whole = self._held.get(name)
                if whole is None:
                    found = await run_async(self._steps(name, None), self.source)
                    whole = self._keep_held(name, found)
                return await asyncio.to_thread(self._from_held, name, key, whole)
            with self._pans.reading() as alone:
                return await run_async(self._steps(name, key, alone), self.source)
        except HurrayFormatError as err:
            await asyncio.to_thread(self._raise_if_changed, err)
            raise

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
        outside = ~self._cache.spans("", head=True).inside(starts, stops)
        plan = plan_reads(starts[outside], stops[outside], self.policy)
        fetched = self.source.read_ranges(plan.requests) if len(plan.requests) else []
        # the wave's bytes are for the reads of this hold alone, let go of once decoded
        got: Fetched = tuple(
            (int(r[0]), blob) for r, blob in zip(plan.requests, fetched, strict=True)
        )
        for path in todo:
            self._whole(path, got)

    def _from_whole(self, name: str, key: Sequence[Key] | None) -> bool:
        """Whether a read of ``key`` of ``name`` is cut from the variable held whole:
        it is held, or it is :attr:`holdable` and ``key`` selects all of it."""
        return name in self._held or (name in self.holdable and whole_key(self.variable(name), key))

    def _whole(self, path: str, fetched: Fetched = ()) -> np.ndarray:
        """Every value of the held variable ``path``, read once (read-only); its chunks
        cut from ``fetched`` where they lie there."""
        found = self._held.get(path)
        if found is None:
            found = self._keep_held(
                path, run(self._steps(path, None, fetched=fetched), self.source)
            )
        return found

    def _keep_held(self, path: str, values: np.ndarray) -> np.ndarray:
        """Hold ``values``, every value of ``path``, read-only; the values held."""
        values.flags.writeable = False
        # two threads may both read it: the same values
        return self._held.setdefault(path, values)

    def _from_held(self, name: str, key: Sequence[Key] | None, whole: np.ndarray) -> np.ndarray:
        """Outer selection ``key`` of the held variable ``name``, whose values are
        ``whole``, as an array of the caller's own."""
        key = tuple(slice(None) for _ in whole.shape) if key is None else tuple(key)
        # the whole variable as one chunk: the selection's machinery maps the key
        selection = OuterSelection.build(key, whole.shape, tuple(max(n, 1) for n in whole.shape))
        out = np.empty(selection.out_shape, dtype=whole.dtype)
        if out.size:
            out_index, in_index = selection.piece(0)
            out[out_index] = whole[in_index]
        return out.reshape(selection.result_shape)

    def _steps(
        self, name: str, key: Sequence[Key] | None, alone: bool = False, fetched: Fetched = ()
    ) -> Steps[np.ndarray]:
        """:meth:`read` of ``key`` of ``name`` as steps (:mod:`.read_paths`), never from
        held values; chunks are cut from ``fetched`` where they lie there.  A read
        ``alone`` may be a step of a pan (see :class:`~.readahead.Pans`) and read
        ahead of it."""
        var = self.variable(name)
        spans = self._cache.spans(name, head=name in self.holdable)
        if fetched:
            spans = spans.joined(fetched)
        chunk_id = one_chunk(var, key)
        entry = None
        if chunk_id is not None and self._codec(name).raw_bytes is not None:
            entry = self.model.chunk_index(name).entry(chunk_id)
        if chunk_id is not None and entry is not None:
            # one whole stored chunk: one request of its bytes, no selection mapped
            start, size, _ = entry
            ahead = self._ahead(name, key, np.array([chunk_id]), alone, spans)
            requests = np.array([[start, start + size]], dtype=np.int64)
            if len(ahead):
                answers = yield from self._answers(name, requests, spans, ahead)
                data = dict(answers)[0]  # every answer taken: those ahead are kept
            else:
                # a dask task's read: its one request, without a wave's machinery
                found = spans.cut(start, start + size)
                data = dict((yield requests))[0] if found is None else found
            return self.decoder.whole_chunk(name, self._codec(name), chunk_id, entry, data)
        selection, out = self._selection(name, key)
        if out.size:
            fetch, rows = plan_selection(
                self.model.chunk_index(name), self._codec(name), selection, self.policy
            )
            if self.source.local:
                parts = local_parts(self.source, self.decoder, fetch, spans)
                self.decoder.fill(out, selection, fetch, rows, parts)
            else:
                ahead = self._ahead(name, key, fetch.chunk_ids, alone, spans)
                answers = yield from self._answers(name, fetch.plan.requests, spans, ahead)
                self.decoder.fill(
                    out, selection, fetch, rows, self.decoder.answered(fetch, answers)
                )
        return out.reshape(selection.result_shape)

    def _answers(
        self, name: str, requests: np.ndarray, spans: Spans, ahead: np.ndarray
    ) -> Steps[Answers]:
        """The answers to ``requests`` of chunks of ``name`` (:func:`~.read_paths.remote_answers`),
        those ``ahead`` of a pan kept in the reader's cache."""
        wave = Wave.of(requests, spans, ahead, self.policy)
        return remote_answers(wave, partial(self._cache.keep_ahead, name))

    def _index_in_head(self, name: str) -> bool:
        """Whether the whole index of ``name`` came with the open's first read, so that
        the entries of chunks ahead of a pan cost no request before the read's own."""
        end = len(self.model.data.head)
        return all(offset + length <= end for offset, length in self.index_parts(name))

    def _ahead(
        self, name: str, key: Sequence[Key] | None, chunk_ids: np.ndarray, alone: bool, spans: Spans
    ) -> np.ndarray:
        """The requests that fetch ahead of a pan whose step is ``key`` (a read of the
        chunks ``chunk_ids``): the stored chunks of the boxes to come, not read here nor
        in ``spans``, in the order of the boxes, as many as
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
        chosen = ahead_chunks(var, last, box, chunk_ids)
        if not len(chosen):
            return none
        entries = self.entries(name, chosen)
        entries = entries[self.model.chunk_index(name).stored(entries)]
        starts = entries["offset"].astype(np.int64)
        stops = starts + entries["size"].astype(np.int64)
        return ahead_requests(starts, stops, spans, budget, self.policy)

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

    def _fetch(
        self, name: str, chunk_ids: np.ndarray, entries: np.ndarray | None = None
    ) -> ChunkFetch:
        """The merged requests that fetch chunks ``chunk_ids`` of ``name`` (its index
        pages under them are read first, once, unless their ``entries`` are given;
        missing chunks take no request)."""
        if entries is None:
            entries = self.entries(name, chunk_ids)
        index = self.model.chunk_index(name)
        return ChunkFetch.of(index, self._codec(name), chunk_ids, entries, self.policy)

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

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_codecs"] = {}  # made again where the reader goes
        state["_held"] = {}  # read again where needed, not shipped to every task
        return state
