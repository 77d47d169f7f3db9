"""One chunk to its stored bytes and back: padding, layout, element bytes, codecs."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import HurrayValueError, in_context
from .bounded import decoded_pieces
from .checksum import Bytes, chunk_crcs
from .codecs import CodecChain
from .elements import STRING, from_bytes, pad_value, parse_element_type, to_bytes
from .limits import MAX_CHUNK_BYTES
from .metadata import VariableMeta
from .select import Index
from .threads import ordered_map, scratch

SMALL_CHUNK_ELEMENTS = 1 << 12
"""Chunks of at most this many numbers are split and permuted for a whole block at
once (:meth:`ChunkCodec.encode_chunks`); larger ones one at a time, where the
layout's own (compiled) permutation pays off and no copy of the block is made."""

PART_DECODE_BYTES = 16 * 2**20
"""Decoded size from which a chunk that a read takes a small box of is decoded a
piece at a time, keeping only the box (:meth:`ChunkCodec.decode_part`); smaller
chunks are decoded whole, which their permutation kernels and buffers serve best."""

DECODE_PIECE_BYTES = 4 * 2**20
"""Decoded bytes held at a time while a chunk is decoded a piece at a time."""

TASK_BYTES = 1 << 21
"""Raw bytes of the chunks that one task of :meth:`ChunkCodec.encode_chunks` encodes
(at least one chunk), and so of a run the writer stores with one call: few enough
tasks that handing them out and writing their runs costs little next to the work
(256 KiB, one 256² float32 chunk per task, wrote a 256 MiB field 20-25% slower),
enough to keep every thread busy on a large block.  At most two tasks per thread
are in flight (:func:`~xarray_hurray.container.threads.ordered_map`)."""


def _grid(shape: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[int, ...]:
    """Chunks along each axis of an array of ``shape`` starting where a chunk starts."""
    return tuple(-(-n // c) for n, c in zip(shape, chunks, strict=True))


def chunk_box(chunk_id: int, grid: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[slice, ...]:
    """The slices of chunk ``chunk_id`` (row-major) of a ``grid`` of ``chunks`` (the
    last ones may reach past the array's end)."""
    corner = np.unravel_index(chunk_id, grid) if grid else ()
    return tuple(slice(int(i) * c, (int(i) + 1) * c) for i, c in zip(corner, chunks, strict=True))


class _ChunkGather:
    """Chunks of an array of numbers gathered as rows: each chunk's elements in
    row-major order, in the variable's element type, chunks cut short by the
    array's end padded with zeros (as :meth:`ChunkCodec.encode` pads them)."""

    def __init__(
        self, array: np.ndarray, grid: tuple[int, ...], chunks: tuple[int, ...], dtype: np.dtype
    ) -> None:
        self.array, self.grid, self.chunks, self.dtype = array, grid, chunks, dtype
        # whole chunks along each axis; the interior they fill, each axis split into
        # (chunk number, position in the chunk), the chunk numbers first: a view
        self.whole = tuple(n // c for n, c in zip(array.shape, chunks, strict=True))
        interior = array[tuple(slice(0, w * c) for w, c in zip(self.whole, chunks, strict=True))]
        ndim = len(chunks)
        split = interior.reshape(
            [n for w, c in zip(self.whole, chunks, strict=True) for n in (w, c)]
        )
        self.view = split.transpose([*range(0, 2 * ndim, 2), *range(1, 2 * ndim, 2)])

    def inside(self, chunk_ids: np.ndarray) -> np.ndarray:
        """Whether each of the chunks ``chunk_ids`` lies whole inside the array (not
        cut short by its end)."""
        coords = np.unravel_index(chunk_ids, self.grid)
        inside = np.ones(len(chunk_ids), dtype=bool)
        for coord, whole in zip(coords, self.whole, strict=True):
            inside &= coord < whole
        return inside

    def rows(self, chunk_ids: np.ndarray) -> np.ndarray:
        """The chunks ``chunk_ids`` (row-major among the array's), one row each."""
        coords = np.unravel_index(chunk_ids, self.grid)
        inside = self.inside(chunk_ids)
        rows = np.zeros((len(chunk_ids), *self.chunks), dtype=self.dtype)
        # numpy's assignment casts unsafely, as encode's conversion (to_bytes) does
        rows[inside] = self.view[tuple(coord[inside] for coord in coords)]
        for k in np.flatnonzero(~inside).tolist():
            piece = self.array[chunk_box(int(chunk_ids[k]), self.grid, self.chunks)]
            rows[k][tuple(slice(0, n) for n in piece.shape)] = piece
        return rows.reshape(len(chunk_ids), -1)


@dataclass(frozen=True)
class EncodedRun:
    """The stored bytes of consecutive chunks of a write, and the CRC-32C of each,
    computed by the thread that compressed them while their bytes are still in its
    cache (``b""`` and 0: a chunk left out, see :meth:`ChunkCodec.encode_many`).

    A sink stores the checksums as given instead of computing them again in the
    writing process, where they would wait for the GIL beside the encoding threads.
    """

    chunks: list[bytes]
    crcs: list[int]

    @classmethod
    def of(cls, chunks: list[bytes]) -> EncodedRun:
        """The run of ``chunks``, their checksums computed here."""
        return cls(chunks, chunk_crcs(chunks))


class ChunkCodec:
    """Encode and decode the chunks of one variable.

    Edge chunks are padded to the full chunk shape with zeros (empty strings), then
    ordered by the variable's layout, turned into bytes and passed through the codecs.


    Parameters
    ----------
    variable
        The variable whose chunks are coded.
    max_chunk_bytes
        Most bytes decoding one chunk may produce (a reader's cap on what a file can
        make it allocate).

    Raises
    ------
    ValueError
        When one decoded chunk of a fixed-size type needs more than ``max_chunk_bytes``.
    """

    def __init__(self, variable: VariableMeta, max_chunk_bytes: int = MAX_CHUNK_BYTES) -> None:
        self.variable = variable
        self.chain = CodecChain(variable.codecs)
        self.buffer_size = variable.layout.buffer_size(variable.chunks)
        itemsize = parse_element_type(variable.dtype).itemsize
        full = MAX_CHUNK_BYTES if variable.dtype == STRING else self.buffer_size * itemsize
        if variable.dtype != STRING and full > max_chunk_bytes:
            raise HurrayValueError(
                f"a chunk of variable {variable.name!r} (chunks {list(variable.chunks)}, "
                f"layout {variable.layout.to_config()}) decodes to {full} bytes, more than "
                f"max_chunk_bytes={max_chunk_bytes}; raise it to read this variable"
            )
        # text has no fixed size per element: its chunks are bounded by the caps alone
        self.max_decoded = min(full, max_chunk_bytes)
        """Most bytes decoding one chunk may produce."""
        self.raw_bytes = None if variable.dtype == STRING else full
        """Bytes of one decoded chunk of a fixed-size type (None for text)."""
        self.fill_bytes = variable.fill_bytes

    def is_fill(self, block: np.ndarray) -> bool:
        """Whether every element of ``block`` (a chunk, possibly cut short at the
        array's edge) is the variable's fill value, byte for byte: ``-0.0`` is not
        ``0.0`` and a NaN of another payload is not the fill NaN, so that leaving the
        chunk out never changes a value read back."""
        var = self.variable
        block = np.asarray(block)
        if var.dtype == STRING:
            fill = self.fill_bytes.decode("utf-8")
            return all(item == fill for item in block.reshape(-1).tolist())
        itemsize = len(self.fill_bytes)
        # no copy where the block already holds the element type, strided or not
        raw = np.asarray(block, dtype=parse_element_type(var.dtype))
        if raw.size == 0 or raw.dtype.itemsize != itemsize:
            return False
        # most chunks are not the fill, and their first element tells, without a pass
        # over the chunk; taken as an array (a 0-d array's item would be a scalar,
        # and a str scalar's bytes are its text's alone)
        first = np.atleast_1d(raw)
        if first[(slice(0, 1),) * first.ndim].tobytes() != self.fill_bytes:
            return False
        if itemsize in (1, 2, 4, 8):
            words = np.dtype(f"<u{itemsize}")
            fill = np.frombuffer(self.fill_bytes, dtype=words)[0]
            return bool((raw.view(words) == fill).all())
        raw = np.ascontiguousarray(raw)
        rows = raw.view(np.uint8).reshape(-1, itemsize)
        return bool((rows == np.frombuffer(self.fill_bytes, dtype=np.uint8)).all())

    def fill_rows(
        self, rows: np.ndarray, gather: _ChunkGather, chunk_ids: np.ndarray
    ) -> list[bool]:
        """Which of the chunks ``chunk_ids``, gathered as ``rows`` by ``gather``, hold
        the fill value alone, by the rule of :meth:`is_fill`: whole chunks compared a
        run at a time, word by word; chunks cut short at the array's edge (whose
        padding does not count) and elements of other sizes by :meth:`is_fill`."""
        size = len(self.fill_bytes)
        inside = gather.inside(chunk_ids)
        if size in (1, 2, 4, 8) and rows.dtype.itemsize == size:
            words = np.dtype(f"<u{size}")
            fill = np.frombuffer(self.fill_bytes, dtype=words)[0]
            values = rows.view(words)
            # only rows whose first element is the fill are compared whole
            flags = values[:, 0] == fill if values.shape[1] else np.ones(len(values), bool)
            maybe = np.flatnonzero(flags)
            if len(maybe):
                flags[maybe] = (values[maybe] == fill).all(axis=1)
        else:
            flags = np.zeros(len(chunk_ids), dtype=bool)
            inside[:] = False
        for k in np.flatnonzero(~inside).tolist():
            box = chunk_box(int(chunk_ids[k]), gather.grid, gather.chunks)
            flags[k] = self.is_fill(gather.array[box])
        return [bool(flag) for flag in flags.tolist()]

    def encode(self, block: np.ndarray) -> bytes:
        """The stored bytes of ``block``, a chunk that may be cut short at the array's edge."""
        var = self.variable
        block = np.asarray(block)
        if block.ndim != len(var.chunks) or any(
            n > c for n, c in zip(block.shape, var.chunks, strict=True)
        ):
            raise HurrayValueError(f"block of shape {block.shape} does not fit chunks {var.chunks}")
        if self._gathers_in_place and block.shape == var.chunks and block.dtype.kind in "biufc":
            # a whole chunk of numbers in row-major order: compressed where it lies
            # when it holds the stored type contiguously; else copied (and cast,
            # unsafely, as to_bytes casts) straight into this thread's buffer, which
            # the codecs read from, instead of into a new array per chunk, whose
            # pages the system would map (and zero) again for every chunk
            dtype = parse_element_type(var.dtype)
            if block.dtype == dtype and block.flags.c_contiguous:
                return self.chain.encode(block)
            nbytes = self.buffer_size * dtype.itemsize
            raw = scratch(nbytes)[:nbytes].view(dtype)
            raw.reshape(var.chunks)[...] = block
            return self.chain.encode(raw)
        fill = pad_value(var.dtype)
        if var.dtype == STRING and block.dtype != object:
            block = block.astype(object)
        if block.shape != var.chunks:
            full = np.full(var.chunks, fill, dtype=block.dtype)
            full[tuple(slice(0, n) for n in block.shape)] = block
            block = full
        try:
            raw = to_bytes(var.layout.encode(block, fill), var.dtype)
        except TypeError as err:
            raise in_context(err, f"variable {var.name!r}") from err
        if raw.nbytes > self.max_decoded:
            raise HurrayValueError(
                f"a chunk of variable {var.name!r} takes {raw.nbytes} bytes, more than the "
                f"{MAX_CHUNK_BYTES} a chunk may hold; use smaller chunks"
            )
        return self.chain.encode(raw)

    def encode_chunks(self, block: np.ndarray, write_empty: bool = False) -> EncodedRun:
        """The stored bytes and checksums of every chunk of ``block``, in row-major
        order among them (see :meth:`encode_many`, which ``block`` is given to)."""
        block = np.asarray(block)
        count = math.prod(_grid(block.shape, self.variable.chunks))
        ids = np.arange(count, dtype=np.int64)
        runs = list(self.encode_many(block, ids, write_empty))
        return EncodedRun(
            [data for run in runs for data in run.chunks], [crc for run in runs for crc in run.crcs]
        )

    def encode_many(
        self,
        array: np.ndarray,
        chunk_ids: np.ndarray,
        write_empty: bool = False,
    ) -> Iterator[EncodedRun]:
        """The stored bytes and checksums of chunks ``chunk_ids`` of ``array``
        (row-major indices among its chunks), in that order, in runs of about
        :data:`TASK_BYTES` of raw chunks, each run encoded by a thread of the decode
        pool.

        ``array`` is the whole variable, or a box of it that starts where a chunk
        starts and ends where one ends or at the variable's end (a dask chunk lined
        up with the chunks).  A chunk of the fill value alone gives ``b""`` (not
        stored: a missing chunk) unless ``write_empty``.  Each chunk's bytes are
        those :meth:`encode` gives it.

        Many small chunks cost little more than their codec calls: small chunks of
        numbers are gathered, tested for the fill and permuted into their layout a
        run at a time.  Every step of a chunk, the fill test included, runs in the
        pool's threads: the calling thread only hands out runs and takes their bytes.
        """
        var = self.variable
        array = np.asarray(array)
        if array.ndim != len(var.chunks):
            raise HurrayValueError(f"block of shape {array.shape} does not fit chunks {var.chunks}")
        grid = _grid(array.shape, var.chunks)
        size = math.prod(var.chunks)
        itemsize = parse_element_type(var.dtype).itemsize
        per_task = max(TASK_BYTES // max(size * itemsize, 1), 1)
        runs = [chunk_ids[start : start + per_task] for start in range(0, len(chunk_ids), per_task)]
        numbers = var.dtype != STRING and parse_element_type(var.dtype).kind in "biufc"
        if (
            not grid
            or size > SMALL_CHUNK_ELEMENTS
            or not numbers
            or array.dtype.kind not in "biufc"
        ):

            def encode_run(ids: np.ndarray) -> EncodedRun:
                out = []
                for chunk_id in ids.tolist():
                    # a 0-d array (no grid) is its one chunk, kept an array: indexed by
                    # an empty tuple it gives its element, which numpy makes a str
                    # array again, dropping the element's trailing NUL characters
                    block = array[chunk_box(chunk_id, grid, var.chunks)] if grid else array
                    out.append(
                        b"" if not write_empty and self.is_fill(block) else self.encode(block)
                    )
                return EncodedRun.of(out)
        else:
            gather = _ChunkGather(array, grid, var.chunks, parse_element_type(var.dtype))

            def encode_run(ids: np.ndarray) -> EncodedRun:
                rows = gather.rows(ids)
                buffers = self._permute_rows(rows)
                codec = self.chain.encode
                if write_empty:
                    return EncodedRun.of([codec(row) for row in buffers])
                flags = self.fill_rows(rows, gather, ids)
                return EncodedRun.of(
                    [b"" if f else codec(row) for f, row in zip(flags, buffers, strict=True)]
                )

        yield from ordered_map(encode_run, runs)

    def _permute_rows(self, rows: np.ndarray) -> np.ndarray:
        """The layout buffers of chunks given as rows (see :class:`_ChunkGather`), the
        padding positions of the layout holding zero, as :meth:`encode` fills them."""
        if self._identity:
            return rows
        sources = self.variable.layout.sources(self.variable.chunks)
        if sources.size != rows.shape[1]:
            # the layout's padding positions take the element one past the end: zero
            rows = np.concatenate([rows, np.zeros((len(rows), 1), rows.dtype)], axis=1)
        return np.take(rows, sources, axis=1)

    @cached_property
    def _gathers_in_place(self) -> bool:
        """Whether :meth:`encode` gathers a whole chunk into the thread's buffer: a
        variable of numbers (not bool, bytes or text, which go out viewed as bytes)
        kept in row-major order, with no padding positions."""
        var = self.variable
        numbers = var.dtype != STRING and parse_element_type(var.dtype).kind in "iufc"
        return numbers and self._identity

    @cached_property
    def _identity(self) -> bool:
        """Whether the layout keeps a chunk's elements in row-major order, with no
        padding (told without building the layout's permutation, which for a chunk
        of 2**29 elements took gigabytes and most of a minute)."""
        return self.variable.layout.is_row_major(self.variable.chunks)

    def decode(self, data: Bytes, scratch: np.ndarray | None = None) -> np.ndarray:
        """The full chunk (padding included) stored as ``data``.

        ``scratch``, a writable byte array of at least :attr:`raw_bytes` (chunks of a
        fixed-size type), takes the decompressed bytes where the codecs can decode
        into it: the chunk returned may then be a view of ``scratch``, to be copied
        before ``scratch`` is used again.

        Raises
        ------
        ValueError
            When the decoded bytes do not hold one chunk, or a codec frame declares
            more bytes than one chunk (decoding stops before allocating them).
        RuntimeError
            When a codec library rejects the bytes.
        """
        into = None
        if scratch is not None and self.raw_bytes is not None:
            into = scratch.data[: self.raw_bytes]
        raw = self.chain.decode(data, self.max_decoded, into)
        buffer = from_bytes(raw, self.variable.dtype, self.buffer_size)
        if self._identity:
            # row-major order: the chunk is its buffer, reshaped (a view, no gather)
            return buffer.reshape(self.variable.chunks)
        if self._small_positions is not None:
            # the layout's permutation, without its checks and dispatch, which cost
            # several times the gather of a small chunk
            return buffer.take(self._small_positions, mode="clip").reshape(self.variable.chunks)
        return self.variable.layout.decode(buffer, self.variable.chunks)

    def decode_part(
        self, data: Bytes, index: tuple[Index, ...], scratch: np.ndarray | None = None
    ) -> np.ndarray:
        """``decode(data, scratch)[index]``: the elements ``index`` (slices of unit
        step, or the arrays of :func:`numpy.ix_`, one per axis) of the chunk stored as
        ``data``.

        A large row-major chunk (at least :data:`PART_DECODE_BYTES`) of which
        ``index`` takes a box of at most a quarter is decoded a piece at a time
        where its codecs allow (:func:`~.bounded.decoded_pieces`), and only the box
        is kept: memory for the box, not the chunk (10 elements of a 2 GiB chunk of
        zeros stored in 200 kB cost those 10 elements, not 2 GiB).  The whole
        stream is still decoded and checked, so that a chunk reads or fails alike,
        whatever part of it is asked for.

        Raises
        ------
        ValueError, RuntimeError
            As :meth:`decode`.
        """
        box = self._part_box(index)
        pieces = None
        if box is not None:
            pieces = decoded_pieces(self.chain.codecs, data, self.max_decoded, DECODE_PIECE_BYTES)
        if box is None or pieces is None:
            return self.decode(data, scratch)[index]
        lo, hi = box
        dtype = parse_element_type(self.variable.dtype)
        # the box's runs of the chunk in bytes, and where each goes in the box
        runs = self.variable.layout.ranges(lo, hi, self.variable.chunks) * dtype.itemsize
        lengths = runs[:, 1] - runs[:, 0]
        places = np.cumsum(lengths) - lengths
        out = np.empty(int(lengths.sum()), dtype=np.uint8)
        at = 0  # bytes of the stream before this piece
        for piece in pieces:
            end = at + len(piece)
            got = np.frombuffer(piece, dtype=np.uint8)
            first = int(np.searchsorted(runs[:, 1], at, side="right"))
            last = int(np.searchsorted(runs[:, 0], end, side="left"))
            for r in range(first, last):
                start, stop = max(int(runs[r, 0]), at), min(int(runs[r, 1]), end)
                place = int(places[r]) + start - int(runs[r, 0])
                out[place : place + stop - start] = got[start - at : stop - at]
            at = end
        if at != self.raw_bytes:
            raise HurrayValueError(
                f"{self.buffer_size} elements of {self.variable.dtype} need "
                f"{self.raw_bytes} bytes, got {at}"
            )
        values = out.view(dtype).reshape([b - a for a, b in zip(lo, hi, strict=True)])
        return values[
            tuple(
                slice(0, k.stop - a) if isinstance(k, slice) else k - a
                for k, a in zip(index, lo, strict=True)
            )
        ]

    def _part_box(self, index: tuple[Index, ...]) -> tuple[list[int], list[int]] | None:
        """The bounding box ``(lo, hi)`` of ``index`` in the chunk where
        :meth:`decode_part` decodes a piece at a time: a row-major chunk of numbers
        of at least :data:`PART_DECODE_BYTES`, of which the box takes at most a
        quarter; else None."""
        if (
            self.raw_bytes is None
            or self.raw_bytes < PART_DECODE_BYTES
            or not self._identity
            or parse_element_type(self.variable.dtype).kind not in "iufc"
        ):
            return None
        lo = [k.start if isinstance(k, slice) else int(k.min()) for k in index]
        hi = [k.stop if isinstance(k, slice) else int(k.max()) + 1 for k in index]
        if 4 * math.prod(b - a for a, b in zip(lo, hi, strict=True)) > self.buffer_size:
            return None
        return lo, hi

    @cached_property
    def _small_positions(self) -> np.ndarray | None:
        """Where each element of a small chunk of numbers (at most
        :data:`SMALL_CHUNK_ELEMENTS`) is in its buffer; None for other chunks."""
        var = self.variable
        if self.buffer_size > SMALL_CHUNK_ELEMENTS or var.dtype == STRING:
            return None
        return var.layout.positions(var.chunks)
