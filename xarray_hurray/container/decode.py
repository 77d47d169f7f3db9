"""Turning the bytes of a read into its values: each chunk's bytes checked whole and
against its checksum, decoded, and its selected elements placed into the result, on
the decode pool (:mod:`.threads`) while later bytes are still on their way; the
places of missing chunks filled with the fill value beside them.

How the bytes came (cut from an answer of a remote source, read a piece at a time
from a local file, or fetched before) is told by the :data:`Part` s a read hands over;
:class:`ChunkDecoder` does the same with all of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial

import numpy as np

from ..errors import HurrayFormatError
from ..io import ByteSource
from .checksum import Bytes, crc32c, verify
from .chunk import ChunkCodec
from .elements import parse_element_type
from .read_plan import Answers, ChunkFetch
from .select import Index, OuterSelection
from .threads import SCRATCH_BYTES, ordered_map, run_as_produced, scratch

DECODE_BATCH_BYTES = 256 * 2**10
"""Decoded bytes of the chunks one task of a read decodes: few hand-offs between
threads for small chunks, yet several tasks per answer for both decode threads."""

FILL_SLAB_BYTES = 8 * 2**20
"""Bytes of a read's result one task fills with the fill value where most of its
chunks are missing (:func:`fills`)."""


Failure = tuple[int, Exception]
"""A damaged chunk of a read (its position in ``ChunkFetch.stored``) and its error."""

Part = Callable[[], tuple[list[int], list[Bytes]]]
"""Some stored chunks of a read and their bytes (positions in ``ChunkFetch.stored``),
got by calling it: cut from an answer already in, or read from the source."""


def fill_value(codec: ChunkCodec) -> np.ndarray:
    """The element a missing chunk holds, in native byte order as decoded chunks
    are: a 0-d array."""
    var = codec.variable
    return np.array(var.fill, dtype=parse_element_type(var.dtype).newbyteorder("="))


def fill_chunk(codec: ChunkCodec) -> np.ndarray:
    """What a missing chunk reads as: the fill value broadcast to the chunk's shape
    (no memory per missing chunk, and read-only, so that a caller cannot change the
    fill of every other missing chunk)."""
    return np.broadcast_to(fill_value(codec), codec.variable.chunks)


def fills(
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
    fill = fill_value(codec)
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


def batch_of(codec: ChunkCodec) -> int:
    """Chunks of ``codec`` one task decodes: about :data:`DECODE_BATCH_BYTES`."""
    return max(DECODE_BATCH_BYTES // codec.max_decoded, 1)


def _chunk_name(fetch: ChunkFetch, row: int) -> str:
    """How messages name chunk ``row`` of ``fetch`` (made only for a damaged chunk)."""
    return f"chunk {int(fetch.chunk_ids.reshape(-1)[row])} of variable {fetch.name!r}"


def _given(chunks: list[int], blobs: list[Bytes]) -> tuple[list[int], list[Bytes]]:
    """The part of chunks ``chunks`` whose bytes ``blobs`` are already in."""
    return chunks, blobs


class ChunkDecoder:
    """Checks and decodes the chunks of the file of ``source``.

    Parameters
    ----------
    source
        Where the bytes come from: named in messages, and asked whether it pins the
        file's content.
    verify_checksums
        Check every chunk's CRC-32C (chunks from a source that does not pin its
        content are checked anyway: see :class:`~.reader.ContainerReader`).
    """

    def __init__(self, source: ByteSource, verify_checksums: bool) -> None:
        self.source = source
        self.verify_checksums = verify_checksums

    def check_whole(self, start: int, stop: int, blob: Bytes) -> None:
        """Raise unless ``blob``, read as the bytes ``[start, stop)`` of the file, holds
        all of them (a file cut short, or changed since it was opened)."""
        if len(blob) != stop - start:
            raise HurrayFormatError(
                f"truncated file {self.source.name}: bytes [{start}, {stop}) "
                f"returned {len(blob)} bytes"
            )

    def cut(
        self, fetch: ChunkFetch, chunks: Sequence[int], start: int, stop: int, blob: Bytes
    ) -> list[Bytes]:
        """The bytes of the stored ``chunks`` of ``fetch`` (positions in ``fetch.stored``),
        views into ``blob``, the bytes ``[start, stop)`` of the file, which must be whole."""
        self.check_whole(start, stop, blob)
        # views, not slices: a slice of bytes would copy every chunk once more
        view = memoryview(blob)
        out: list[Bytes] = []
        for k in chunks:
            lo, hi = int(fetch.starts[k]) - start, int(fetch.stops[k]) - start
            # a chunk that is a whole request is used as it came
            out.append(blob if (lo, hi) == (0, len(blob)) else view[lo:hi])
        return out

    def chunk_bytes(self, fetch: ChunkFetch, request: int, blob: Bytes) -> list[Bytes]:
        """The bytes of the stored chunks of ``fetch`` that request ``request`` holds
        (``fetch.by_request``), cut from ``blob``, its answer, which must be whole."""
        req_start, req_stop = fetch.plan.requests[request].tolist()
        return self.cut(fetch, fetch.by_request[request], req_start, req_stop, blob)

    def checked_decode(
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

    def decode(
        self,
        fetch: ChunkFetch,
        k: int,
        data: Bytes,
        into: np.ndarray | None = None,
        index: tuple[Index, ...] | None = None,
    ) -> np.ndarray:
        """Stored chunk ``k`` of ``fetch``, checked and decoded from its bytes ``data``
        (see :meth:`checked_decode`), or its elements ``index``."""
        row = int(fetch.stored[k])
        expected = int(fetch.entries["crc32c"][row])
        return self.checked_decode(
            fetch.codec, data, expected, lambda: _chunk_name(fetch, row), into, index
        )

    def whole_chunk(
        self,
        name: str,
        codec: ChunkCodec,
        chunk_id: int,
        entry: tuple[int, int, int],
        data: Bytes,
    ) -> np.ndarray:
        """Stored chunk ``chunk_id`` of variable ``name`` (its index entry ``entry``),
        decoded from its bytes ``data``, writable and owned by the caller:
        decompressed into an array of its own, which a row-major chunk is a view of.
        ``codec`` must have a fixed decoded size (:attr:`ChunkCodec.raw_bytes`)."""
        start, size, expected = entry
        self.check_whole(start, start + size, data)
        into = np.empty(codec.raw_bytes or 0, dtype=np.uint8)
        chunk = self.checked_decode(
            codec, data, expected, lambda: f"chunk {chunk_id} of variable {name!r}", into
        )
        chunk = chunk.reshape(codec.variable.chunks)
        native = parse_element_type(codec.variable.dtype).newbyteorder("=")
        if chunk.flags.writeable and chunk.dtype == native:
            return chunk
        return np.array(chunk, dtype=native)

    def answered(self, fetch: ChunkFetch, answers: Answers) -> Iterator[Part]:
        """The chunks of each answer ``(request, bytes)`` to the requests of ``fetch``,
        as it arrives, in batches of about :data:`DECODE_BATCH_BYTES` decoded."""
        batch = batch_of(fetch.codec)
        for request, blob in answers:
            chunks = fetch.by_request[request]
            blobs = self.chunk_bytes(fetch, request, blob)
            for b in range(0, len(chunks), batch):
                yield partial(_given, chunks[b : b + batch], blobs[b : b + batch])

    def decoded(self, fetch: ChunkFetch, blobs: Sequence[bytes]) -> Iterator[np.ndarray]:
        """The chunks of ``fetch``, checked and decoded from the answers ``blobs`` to its
        requests, in order; a missing chunk is :func:`fill_chunk`."""
        pieces: list[tuple[int, Bytes] | None] = [None] * len(fetch.entries)
        for request, blob in enumerate(blobs):
            chunks = fetch.by_request[request]
            for k, data in zip(chunks, self.chunk_bytes(fetch, request, blob), strict=True):
                pieces[int(fetch.stored[k])] = (k, data)
        fill = fill_chunk(fetch.codec)

        def decode(piece: tuple[int, Bytes] | None) -> np.ndarray:
            return fill if piece is None else self.decode(fetch, *piece)

        yield from ordered_map(decode, pieces)

    def fill(
        self,
        out: np.ndarray,
        selection: OuterSelection,
        fetch: ChunkFetch,
        rows: np.ndarray | None,
        parts: Iterable[Part],
    ) -> None:
        """Copy the selected elements of the chunks of ``fetch`` into ``out``, each part
        checked, decoded and placed by a task of the decode pool, run as soon as it
        is known, while later answers are still on their way.  ``rows`` gives the
        row of each chunk of ``fetch`` among the selection's (None: the same); the
        selection's chunks ``fetch`` does not store are missing, their places filled
        by tasks of the same pool (:func:`fills`).  A damaged chunk raises once all
        are done, the first of them in ``selection``'s order (as the order of arrival
        varies)."""
        row_of = fetch.stored if rows is None else rows[fetch.stored]
        raw_bytes = fetch.codec.raw_bytes
        batch = batch_of(fetch.codec)
        touched = len(fetch.chunk_ids) if rows is None else math.prod(selection.chunk_counts)
        filling = fills(out, selection, row_of, touched, fetch.codec, batch)

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
                    out[out_index] = self.decode(fetch, k, data, buffer, in_index)
                except HurrayFormatError as err:
                    return k, err
            return None

        def tasks() -> Iterator[Callable[[], Failure | None]]:
            yield from filling  # first: they need nothing from the source
            for part in parts:
                yield partial(place, part)

        # a read of one batch is decoded here, without handing it to a thread
        one = len(parts) == 1 if isinstance(parts, list) else len(fetch.stored) <= batch
        if one and len(filling) <= 1:
            results = [task() for task in tasks()]
        else:
            results = run_as_produced(tasks())
        failed = [result for result in results if result is not None]
        if failed:
            raise min(failed, key=lambda kf: int(row_of[kf[0]]))[1]
