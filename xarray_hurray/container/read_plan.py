"""Planning a read: which chunks a selection needs, which of their bytes are fetched
already, which requests go to the source, and what is read ahead of a pan.

Nothing here reads the file: the functions work on index entries, a selection and the
bytes fetched already (:class:`~.fetched.Spans`), except :func:`plan_selection`, which
asks the variable's :class:`~.model.ChunkIndex` for the entries it needs (the index
pages under them, read once by the model).  The reader (:mod:`.reader`) runs a plan
against its source, blocking or awaited, and decodes what comes back
(:mod:`.decode`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..io import MergePolicy, ReadPlan, plan_reads
from .checksum import Bytes
from .chunk import ChunkCodec
from .fetched import Fetched, Spans
from .format import INDEX_ENTRY
from .metadata import VariableMeta
from .model import ChunkIndex
from .readahead import AHEAD_STEPS, Box, next_boxes
from .select import Key, OuterSelection


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

    @classmethod
    def of(
        cls,
        index: ChunkIndex,
        codec: ChunkCodec,
        chunk_ids: np.ndarray,
        entries: np.ndarray,
        policy: MergePolicy,
    ) -> ChunkFetch:
        """The fetch of chunks ``chunk_ids`` of the variable of ``index``, whose index
        entries are ``entries``, in requests merged under ``policy`` (missing chunks
        take none)."""
        stored = np.flatnonzero(index.stored(entries))
        starts = entries["offset"][stored].astype(np.int64)
        stops = starts + entries["size"][stored].astype(np.int64)
        plan = plan_reads(starts, stops, policy)
        return cls(index.path, chunk_ids, entries, plan, codec, stored, starts, stops)

    @cached_property
    def by_request(self) -> list[list[int]]:
        """The stored chunks (their positions in ``stored``) each request holds."""
        request_of = self.plan.request_of
        if len(self.plan.requests) == 1:
            return [list(range(len(request_of)))]
        order = np.argsort(request_of, kind="stable")
        counts = np.bincount(request_of, minlength=len(self.plan.requests))
        return [part.tolist() for part in np.split(order, np.cumsum(counts)[:-1])]

    def pieces(self, piece_bytes: int) -> Iterator[tuple[list[int], int, int]]:
        """The reads of this fetch from a local source, in placement order: its
        requests cut between chunks into pieces of about ``piece_bytes``, each as
        ``(chunks, start, stop)`` (positions in ``stored``, bytes ``[start, stop)``)."""
        for chunks in self.by_request:
            # by offset: the request's chunks come in the selection's order
            chunks = sorted(chunks, key=lambda k: int(self.starts[k]))
            run: list[int] = []
            start = stop = 0
            for k in chunks:
                lo, hi = int(self.starts[k]), int(self.stops[k])
                # a cut only where no chunk overlaps the next (equal chunks may share bytes)
                if run and lo >= stop and hi - start > piece_bytes:
                    yield run, start, stop
                    run = []
                if not run:
                    start, stop = lo, hi
                run.append(k)
                stop = max(stop, hi)
            if run:
                yield run, start, stop


def plan_selection(
    index: ChunkIndex, codec: ChunkCodec, selection: OuterSelection, policy: MergePolicy
) -> tuple[ChunkFetch, np.ndarray | None]:
    """The fetch of the chunks of ``selection`` of the variable of ``index``, and the row
    of each of its chunks among the selection's (None: the same rows).

    Two ways, whichever reads less index: the chunks of the selection, through the
    pages holding them (20 bytes of entry per chunk); or every stored chunk of the
    variable, through its pages, keeping those inside the selection.
    The second is taken when the pages the page table references take fewer bytes
    than the selection's entries would: a large selection of a grid of mostly
    missing chunks then costs its stored chunks, never a step per chunk of it.
    """
    touched = math.prod(selection.chunk_counts)
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
        fetch = ChunkFetch.of(index, codec, np.concatenate(ids), np.concatenate(entries), policy)
        return fetch, np.concatenate(rows)
    chunk_ids = selection.chunk_ids()
    return ChunkFetch.of(index, codec, chunk_ids, index.entries(chunk_ids), policy), None


def one_chunk(var: VariableMeta, key: Sequence[Key] | None) -> int | None:
    """The row-major id of the chunk of ``var`` that ``key`` selects whole, when it is
    slices of unit step covering exactly one full chunk (what a Dask task of
    ``chunks={}`` asks for); None for any other key."""
    if key is None or len(key) != len(var.shape) or not var.shape:
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


def whole_key(var: VariableMeta, key: Sequence[Key] | None) -> bool:
    """Whether ``key`` selects every element of ``var`` in order."""
    if key is None:
        return True
    return len(key) == len(var.shape) and all(
        isinstance(k, slice) and k.indices(n) == (0, n, 1)
        for k, n in zip(key, var.shape, strict=True)
    )


def ahead_chunks(var: VariableMeta, last: Box | None, box: Box, read: np.ndarray) -> np.ndarray:
    """The chunks of ``var`` ahead of a pan whose step from box ``last`` is ``box`` (a
    read of the chunks ``read``): those of the boxes to come
    (:func:`~.readahead.next_boxes`), each once, in the order of the boxes, leaving out
    ``read``.  None where ``box`` is no step of a pan."""
    ids = [
        OuterSelection.build(
            tuple(slice(a, b) for a, b in ahead), var.shape, var.chunks
        ).chunk_ids()
        for ahead in next_boxes(last, box, var.shape, AHEAD_STEPS)
    ]
    if not ids:
        return np.zeros(0, np.int64)
    order = np.concatenate(ids)
    _, first = np.unique(order, return_index=True)
    chosen = order[np.sort(first)]
    return chosen[~np.isin(chosen, read)]


def ahead_requests(
    starts: np.ndarray, stops: np.ndarray, spans: Spans, budget: int, policy: MergePolicy
) -> np.ndarray:
    """The requests that fetch the chunks ahead of a pan, whose bytes are ``[starts[k],
    stops[k])`` in the order of the boxes to come: those not in ``spans`` already, as
    many as fit in ``budget`` bytes, merged under ``policy``."""
    keep = ~spans.inside(starts, stops)
    starts, stops = starts[keep], stops[keep]
    within = np.cumsum(stops - starts) <= budget
    if not within.any():
        return np.zeros((0, 2), np.int64)
    return plan_reads(starts[within], stops[within], policy).requests


Answers = Iterable[tuple[int, Bytes]]
"""Answers to requests as ``(request, bytes)``, in the order they come."""


@dataclass(frozen=True)
class Wave:
    """The requests of a read and those ahead of a pan, as one wave to the source.

    The read's requests inside bytes fetched already are answered from them
    (``cached``); the others go out (``send``), with those ahead where any goes out,
    merged with the read's own where the policy merges them (``ranges``, the read's
    remaining requests first, then those ahead; ``members``, the ranges each request
    sent holds).

    Parameters
    ----------
    cached
        ``(request, bytes)`` of the read's requests answered from fetched bytes.
    send
        The requests to send, ``(start, stop)`` rows.
    ranges
        The ranges ``send`` serves: the read's remaining requests, then those ahead.
    own
        The read's request of each of the first ``len(own)`` rows of ``ranges`` (None:
        ``ranges`` are the read's requests, in order).
    members
        The rows of ``ranges`` each request of ``send`` holds, in order (None: each
        request is the range of the same row).
    """

    cached: list[tuple[int, Bytes]]
    send: np.ndarray
    ranges: np.ndarray
    own: np.ndarray | None
    members: list[list[int]] | None

    @classmethod
    def of(cls, requests: np.ndarray, spans: Spans, ahead: np.ndarray, policy: MergePolicy) -> Wave:
        """The wave of a read of ``requests`` with the requests ``ahead`` of a pan, bytes
        in ``spans`` cut from them, merged under ``policy``."""
        if not spans.parts and not len(ahead):
            # the common read (a dask task's): every request goes out as it is
            return cls([], requests, requests, None, None)
        cached: list[tuple[int, Bytes]] = []
        rest: list[int] = []
        for k, (start, stop) in enumerate(requests.tolist()):
            found = spans.cut(start, stop)
            if found is None:
                rest.append(k)
            else:
                cached.append((k, found))
        own = np.array(rest, dtype=np.int64)
        if not rest or not len(ahead):
            # nothing goes out, or nothing ahead: the read's own requests as they are
            left = requests[own].reshape(-1, 2).astype(np.int64)
            return cls(cached, left, left, own, None)
        ranges = np.concatenate([requests[own], ahead]).astype(np.int64)
        plan = plan_reads(ranges[:, 0], ranges[:, 1], policy)
        members: list[list[int]] = [[] for _ in plan.requests]
        for k, request in enumerate(plan.request_of.tolist()):
            members[request].append(k)
        return cls(cached, plan.requests, ranges, own, members)

    def answers(
        self, arrived: Answers, keep: Callable[[Fetched], None]
    ) -> Iterator[tuple[int, Bytes]]:
        """``(request, bytes)`` for each of the read's requests: those cached first, then
        those of the answers ``arrived`` to ``send``, as ``(row of send, bytes)`` in
        any order.  Once all have arrived, the answers holding bytes ahead are given
        to ``keep`` (where any were asked for)."""
        yield from self.cached
        own = self.own
        if own is None:
            yield from arrived
            return
        if self.members is None:
            for k, blob in arrived:
                yield int(own[k]), blob
            return
        got: list[tuple[int, Bytes]] = []
        for request, blob in arrived:
            start = int(self.send[request][0])
            view = memoryview(blob)
            for k in self.members[request]:
                if k < len(own):
                    lo, hi = int(self.ranges[k][0]) - start, int(self.ranges[k][1]) - start
                    yield int(own[k]), blob if (lo, hi) == (0, len(blob)) else view[lo:hi]
            if self.members[request][-1] >= len(own):  # ahead ranges come after the read's
                got.append((start, blob))
        keep(tuple(got))
