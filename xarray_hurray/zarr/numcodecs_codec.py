"""The ``hurray`` codec for numcodecs users and Zarr v2 arrays.

It writes the same bytes as :class:`xarray_hurray.zarr.HurrayCodec` for the same
layout and byte order.  A numcodecs codec sees bare buffers, so its configuration
also holds the chunk ``shape`` and in-memory ``dtype``::

    {"id": "hurray", "layout": "hilbert", "shape": [32, 32], "dtype": "<f4",
     "endian": "little"}

In a Zarr v2 array use it as the only filter (``filters=[HurrayNumcodec(...)]``)
with the array's chunk shape and data type; a compressor may follow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray, ndarray_copy

from ..errors import HurrayValueError
from ..layout import Layout
from ..layout.descriptors import parse_shape
from .stored_chunk import (
    Endian,
    check_fixed_size,
    decode_chunk,
    encode_chunk,
    fit_layout,
    layout_config,
    parse_endian,
    parse_layout,
)


class HurrayNumcodec(Codec):  # type: ignore[misc]  # numcodecs ships no types: Codec is Any
    """Reorder a chunk into a Hilbert, Morton or row-major layout, as stored bytes.

    Parameters
    ----------
    layout
        ``"hilbert"``, ``"morton"``, ``"row-major"`` or ``"auto"`` (fitted to
        ``shape``), or an explicit layout or layout descriptor.
    shape
        The chunk shape; every encoded buffer holds one chunk of this shape.
    dtype
        The in-memory data type of the chunk.
    endian
        Byte order of stored multi-byte elements; checked, then dropped for one-byte types.
    """

    codec_id = "hurray"

    def __init__(
        self,
        layout: str | Layout | Mapping[str, Any],
        shape: Sequence[int],
        dtype: str | np.dtype,
        endian: Endian | None = "little",
    ) -> None:
        self.layout = parse_layout(layout)
        self.shape = parse_shape(shape)
        self.dtype = check_fixed_size(np.dtype(dtype))
        endian = parse_endian(endian)
        self.endian = endian if self.dtype.byteorder != "|" else None
        if self.endian is None and self.dtype.byteorder != "|":
            raise HurrayValueError(
                f"the hurray codec needs 'endian' for the multi-byte type {self.dtype}"
            )
        fit_layout(self.layout, self.shape)

    def encode(self, buf: Any) -> np.ndarray:
        """The stored bytes of one chunk given as an array or a buffer of its elements."""
        data = ensure_contiguous_ndarray(buf).reshape(-1).view(np.uint8).view(self.dtype)
        if data.size != np.prod(self.shape, dtype=np.int64):
            raise HurrayValueError(
                f"hurray codec expected a chunk of shape {self.shape} ({self.dtype}), "
                f"got {data.size} elements"
            )
        return encode_chunk(data.reshape(self.shape), self.layout, self.endian)

    def decode(self, buf: Any, out: Any = None) -> np.ndarray:
        """The chunk, in row-major order and the in-memory data type, from stored bytes."""
        data = ensure_contiguous_ndarray(buf).reshape(-1).view(np.uint8)
        chunk = decode_chunk(data, self.layout, self.shape, self.dtype, self.endian)
        return ndarray_copy(chunk, out) if out is not None else chunk

    def get_config(self) -> dict[str, Any]:
        """The codec's JSON configuration, with ``id``."""
        config: dict[str, Any] = {
            "id": self.codec_id,
            "layout": layout_config(self.layout),
            "shape": list(self.shape),
            "dtype": self.dtype.str,
        }
        if self.endian is not None:
            config["endian"] = self.endian
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> HurrayNumcodec:
        """Rebuild the codec from :meth:`get_config`."""
        config = dict(config)
        config.pop("id", None)
        unknown = set(config) - {"layout", "shape", "dtype", "endian"}
        if unknown:
            raise HurrayValueError(f"unknown hurray codec configuration keys {sorted(unknown)}")
        missing = [key for key in ("layout", "shape", "dtype") if key not in config]
        if missing:
            raise HurrayValueError(
                f"hurray codec configuration needs {', '.join(map(repr, missing))}"
            )
        return cls(
            config["layout"],
            config["shape"],
            config["dtype"],
            endian=config.get("endian", "little"),
        )

    def __repr__(self) -> str:
        return (
            f"HurrayNumcodec(layout={layout_config(self.layout)!r}, shape={self.shape}, "
            f"dtype={self.dtype.str!r}, endian={self.endian!r})"
        )
