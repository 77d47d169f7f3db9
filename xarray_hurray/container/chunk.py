"""One chunk to its stored bytes and back: padding, layout, element bytes, codecs."""

from __future__ import annotations

import numpy as np

from .codecs import CodecChain
from .elements import STRING, from_bytes, pad_value, to_bytes
from .metadata import VariableMeta


class ChunkCodec:
    """Encode and decode the chunks of one variable.

    Edge chunks are padded to the full chunk shape with zeros (empty strings), then
    ordered by the variable's layout, turned into bytes and passed through the codecs.
    """

    def __init__(self, variable: VariableMeta) -> None:
        self.variable = variable
        self.chain = CodecChain(variable.codecs)
        self.buffer_size = variable.layout.buffer_size(variable.chunks)

    def encode(self, block: np.ndarray) -> bytes:
        """The stored bytes of ``block``, a chunk that may be cut short at the array's edge."""
        var = self.variable
        block = np.asarray(block)
        if block.ndim != len(var.chunks) or any(
            n > c for n, c in zip(block.shape, var.chunks, strict=True)
        ):
            raise ValueError(f"block of shape {block.shape} does not fit chunks {var.chunks}")
        fill = pad_value(var.dtype)
        if var.dtype == STRING and block.dtype != object:
            block = block.astype(object)
        if block.shape != var.chunks:
            full = np.full(var.chunks, fill, dtype=block.dtype)
            full[tuple(slice(0, n) for n in block.shape)] = block
            block = full
        buffer = var.layout.encode(block, fill)
        return self.chain.encode(to_bytes(buffer, var.dtype))

    def decode(self, data: bytes) -> np.ndarray:
        """The full chunk (padding included) stored as ``data``.

        Raises
        ------
        ValueError
            When the decoded bytes do not hold one chunk.
        """
        raw = self.chain.decode(data)
        buffer = from_bytes(raw, self.variable.dtype, self.buffer_size)
        return self.variable.layout.decode(buffer, self.variable.chunks)
