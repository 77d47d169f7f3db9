"""The ``numcodecs.hurray`` bytes-to-bytes codec for Zarr v3: :class:`HurrayNumcodec` in a
Zarr v3 codec chain, after zarr's ``bytes`` serializer.

Metadata::

    {"name": "numcodecs.hurray",
     "configuration": {"layout": ..., "shape": [...], "dtype": "<f4", "endian": "little"}}

It turns the row-major bytes of a chunk (as ``bytes`` with the same byte order writes
them) into the stored bytes of :class:`HurrayCodec` and back, so the chain
``bytes -> numcodecs.hurray -> compressors`` stores exactly what ``hurray -> compressors``
stores.  It exists for tools that keep only bytes-to-bytes codecs when they convert
Zarr v3 metadata to Zarr v2 (VirtualiZarr's kerchunk writer drops every array-to-bytes
codec): as a bytes-to-bytes codec it carries over, and its ``codec_config`` is the
configuration of the numcodecs codec ``hurray``, which Zarr v2 readers use as a filter.
The name follows zarr-python's convention for numcodecs codecs in Zarr v3 metadata.
It cannot read part of a chunk: prefer :class:`HurrayCodec` where the choice is free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from zarr.abc.codec import BytesBytesCodec

from ..errors import HurrayValueError
from .numcodecs_codec import HurrayNumcodec
from .stored_chunk import fit_layout

if TYPE_CHECKING:
    from typing import Self

    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer

CODEC_NAME = "numcodecs.hurray"


@dataclass(frozen=True)
class HurrayPermuteCodec(BytesBytesCodec):
    """Reorder the row-major bytes of a chunk into a Hurray layout's stored bytes.

    Parameters
    ----------
    codec
        The numcodecs codec that knows the layout, chunk shape, data type and byte order.
    """

    is_fixed_size = True

    codec: HurrayNumcodec

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Build the codec from its ``{"name": "numcodecs.hurray", ...}`` metadata."""
        if data.get("name") != CODEC_NAME:
            raise HurrayValueError(
                f"expected codec metadata named {CODEC_NAME!r}, got {data!r}", value=data
            )
        return cls(HurrayNumcodec.from_config(dict(data.get("configuration") or {})))

    def to_dict(self) -> dict[str, Any]:
        """The codec's Zarr v3 metadata."""
        config = self.codec.get_config()
        del config["id"]
        return {"name": CODEC_NAME, "configuration": config}

    @property
    def codec_config(self) -> dict[str, Any]:
        """The numcodecs configuration (``{"id": "hurray", ...}``), for Zarr v2 metadata."""
        return self.codec.get_config()

    def _decode_sync(self, chunk_data: Buffer, chunk_spec: ArraySpec) -> Buffer:
        chunk = self.codec.decode(chunk_data.as_numpy_array())
        return chunk_spec.prototype.buffer.from_array_like(
            np.ascontiguousarray(chunk).reshape(-1).view(np.uint8)
        )

    def _encode_sync(self, chunk_data: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        stored = self.codec.encode(chunk_data.as_numpy_array())
        return chunk_spec.prototype.buffer.from_array_like(stored)

    async def _decode_single(self, chunk_data: Buffer, chunk_spec: ArraySpec) -> Buffer:
        return self._decode_sync(chunk_data, chunk_spec)

    async def _encode_single(self, chunk_data: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        return self._encode_sync(chunk_data, chunk_spec)

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        """Bytes of the stored chunk: the layout's buffer, padding included."""
        codec = self.codec
        return fit_layout(codec.layout, codec.shape).buffer_size(codec.shape) * codec.dtype.itemsize
