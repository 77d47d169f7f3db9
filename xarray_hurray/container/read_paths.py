"""How the bytes of a read come: one path per kind of source, and a read as steps that
either a blocking call or a coroutine runs.

- From a **local** file (:attr:`~xarray_hurray.io.ByteSource.local`), a read's requests
  are cut into pieces of about :data:`PIECE_BYTES`, which the decode threads read
  themselves, in placement order, as they take them (:func:`local_parts`): the reads
  overlap the decoding, on every core, and only the pieces being decoded are held.
- From a **remote** source, all requests of a read go out at once, as one wave
  (:class:`~.read_plan.Wave`) with those ahead of a pan, and each answer is decoded as
  it arrives (:func:`remote_answers`).

A read is written once, as a generator of :data:`Steps`: it yields the requests it
needs sent (an ``(n, 2)`` array of ``[start, stop)`` rows) and is sent their answers,
``(row, bytes)`` in any order; it returns its values.  :func:`run` runs it blocking,
the answers given to the read as they come; :func:`run_async` awaits the answers and
runs the steps between (planning, index pages, decoding) in a thread, so that the
event loop is never blocked.  Both run the same planning, readahead and decoding:
they differ only in how the bytes are awaited.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from functools import partial
from typing import TypeVar, cast

import numpy as np

from ..io import ByteSource
from .checksum import Bytes
from .decode import ChunkDecoder, Part
from .fetched import Fetched, Spans
from .read_plan import Answers, ChunkFetch, Wave

PIECE_BYTES = 2**20
"""Stored bytes one task of a read from a local source reads (at least one chunk):
large reads, few system calls, yet only a few pieces held while they are decoded."""

T = TypeVar("T")

Steps = Generator[np.ndarray, Answers, T]
"""A read as steps: it yields requests, is sent their answers, and returns ``T``."""


def run(steps: Steps[T], source: ByteSource) -> T:
    """Run ``steps`` in this thread, each wave of requests sent to ``source`` at once and
    its answers handed to the read as they arrive."""
    try:
        requests = next(steps)
        while True:
            requests = steps.send(_arriving(source, requests))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def _arriving(source: ByteSource, requests: np.ndarray) -> Answers:
    """The answers of ``source`` to ``requests`` as they arrive; one request is read
    in this thread as every source reads it, without the machinery of many."""
    if len(requests) == 1:
        start, stop = requests[0].tolist()
        return ((0, source.read(start, stop)),)
    return source.read_ranges_as_completed(requests)


async def run_async(steps: Steps[T], source: ByteSource) -> T:
    """Run ``steps`` as a coroutine: each wave of requests awaited from ``source``
    (:meth:`~xarray_hurray.io.ByteSource.read_ranges_async`), the steps between run in
    a thread."""
    import asyncio

    done, value = await asyncio.to_thread(_advance, steps, None)
    while not done:
        blobs = await source.read_ranges_async(cast(np.ndarray, value))
        done, value = await asyncio.to_thread(_advance, steps, enumerate(blobs))
    return cast(T, value)


def _advance(steps: Steps[T], answers: Answers | None) -> tuple[bool, np.ndarray | T]:
    """``steps`` run up to its next wave, ``answers`` sent to the last: ``(False,
    requests)``, or ``(True, result)`` once it is done.  (A :class:`StopIteration`
    cannot leave a thread through an awaited future, so the end is told by value.)"""
    try:
        return False, steps.send(answers)  # type: ignore[arg-type]
    except StopIteration as done:
        return True, done.value


def remote_answers(wave: Wave, keep: Callable[[Fetched], None]) -> Steps[Answers]:
    """The answers ``(request, bytes)`` to the read's requests of ``wave``, as they come:
    those cut from bytes fetched already, then those of its requests sent at once
    (none where all are cut); the bytes it read ahead of a pan go to ``keep``."""
    arrived: Answers = (yield wave.send) if len(wave.send) else ()
    return wave.answers(arrived, keep)


def local_parts(
    source: ByteSource, decoder: ChunkDecoder, fetch: ChunkFetch, spans: Spans
) -> list[Part]:
    """The parts of ``fetch`` from a local ``source``: its pieces
    (:meth:`~.read_plan.ChunkFetch.pieces`), each read (or cut from ``spans``) by the
    decode thread that takes it."""
    return [
        partial(_read_piece, source, decoder, fetch, spans, *piece)
        for piece in fetch.pieces(PIECE_BYTES)
    ]


def _read_piece(
    source: ByteSource,
    decoder: ChunkDecoder,
    fetch: ChunkFetch,
    spans: Spans,
    chunks: list[int],
    start: int,
    stop: int,
) -> tuple[list[int], list[Bytes]]:
    """Stored ``chunks`` of ``fetch`` and their bytes, read as the one range
    ``[start, stop)`` (a piece of :func:`local_parts`)."""
    found = spans.cut(start, stop)
    blob = source.read(start, stop) if found is None else found
    return chunks, decoder.cut(fetch, chunks, start, stop, blob)
