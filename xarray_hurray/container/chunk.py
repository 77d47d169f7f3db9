"""One chunk to its stored bytes and back: padding, layout, element bytes, codecs."""

from __future__ import annotations

import numpy as np

from ..errors import HurrayValueError, in_context
from .codecs import CodecChain
from .elements import STRING, from_bytes, pad_value, parse_element_type, to_bytes
from .limits import MAX_CHUNK_BYTES
from .metadata import VariableMeta


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
        raw = np.ascontiguousarray(block, dtype=parse_element_type(var.dtype))
        if raw.size == 0 or raw.dtype.itemsize != itemsize:
            return False
        rows = raw.view(np.uint8).reshape(-1, itemsize)
        return bool((rows == np.frombuffer(self.fill_bytes, dtype=np.uint8)).all())

    def fill_chunks(self, array: np.ndarray) -> np.ndarray | None:
        """For a whole array of the variable, which chunks (by row-major chunk index)
        hold the fill value alone, by the rule of :meth:`is_fill`, found in one pass
        over the array; None where that pass does not apply (text, 16-byte elements),
        and :meth:`is_fill` is asked chunk by chunk instead."""
        var = self.variable
        size = len(self.fill_bytes)
        if var.dtype == STRING or size not in (1, 2, 4, 8) or array.shape != var.shape:
            return None
        words = np.dtype(f"<u{size}")
        values = np.ascontiguousarray(array, dtype=parse_element_type(var.dtype)).view(words)
        equal = values == np.frombuffer(self.fill_bytes, dtype=words)[0]
        grid = var.grid_shape
        if not grid:
            one: np.ndarray = equal.reshape(1)
            return one
        if 0 in grid:
            return np.zeros(0, dtype=bool)
        # elements past the end of the array are padding, which does not count
        padded = np.ones(tuple(g * c for g, c in zip(grid, var.chunks, strict=True)), bool)
        padded[tuple(slice(0, n) for n in var.shape)] = equal
        # each axis split into (chunk number, position in the chunk): reducing over the
        # odd axes leaves one flag per chunk, in row-major chunk order
        blocks = padded.reshape([n for g, c in zip(grid, var.chunks, strict=True) for n in (g, c)])
        return blocks.all(axis=tuple(range(1, 2 * len(grid), 2))).reshape(-1)

    def encode(self, block: np.ndarray) -> bytes:
        """The stored bytes of ``block``, a chunk that may be cut short at the array's edge."""
        var = self.variable
        block = np.asarray(block)
        if block.ndim != len(var.chunks) or any(
            n > c for n, c in zip(block.shape, var.chunks, strict=True)
        ):
            raise HurrayValueError(f"block of shape {block.shape} does not fit chunks {var.chunks}")
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

    def decode(self, data: bytes) -> np.ndarray:
        """The full chunk (padding included) stored as ``data``.

        Raises
        ------
        ValueError
            When the decoded bytes do not hold one chunk, or a codec frame declares
            more bytes than one chunk (decoding stops before allocating them).
        RuntimeError
            When a codec library rejects the bytes.
        """
        raw = self.chain.decode(data, self.max_decoded)
        buffer = from_bytes(raw, self.variable.dtype, self.buffer_size)
        return self.variable.layout.decode(buffer, self.variable.chunks)
