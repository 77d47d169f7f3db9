"""The ``hurray`` array-to-bytes codec for Zarr v3.

Metadata::

    {"name": "hurray",
     "configuration": {"layout": <kind or descriptor>, "endian": "little" | "big"}}

``layout`` is either a layout kind (``"hilbert"``, ``"morton"``, ``"row-major"``
or ``"auto"``), fitted to each chunk shape by :func:`layout_for_shape`, or a full
layout descriptor as written by :meth:`Layout.to_config`.  ``endian`` is absent for
one-byte data types.  A chunk is stored as the layout's buffer of elements, each in
the given byte order; padding elements of a Morton buffer are zero bytes.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from zarr.abc.codec import ArrayBytesCodec, ArrayBytesCodecPartialDecodeMixin
from zarr.abc.store import RangeByteRequest

from ..layout import Layout, LayoutError
from .selection import selection_box
from .stored_chunk import (
    Endian,
    check_fixed_size,
    decode_chunk,
    encode_chunk,
    fit_layout,
    layout_config,
    parse_endian,
    parse_layout,
    stored_dtype,
)

if TYPE_CHECKING:
    from typing import Self

    from zarr.abc.store import ByteGetter
    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer, NDBuffer


@dataclass(frozen=True)
class HurrayCodec(ArrayBytesCodec, ArrayBytesCodecPartialDecodeMixin):
    """Serialise each chunk in a Hilbert, Morton or row-major element order.

    Parameters
    ----------
    layout
        ``"hilbert"``, ``"morton"``, ``"row-major"`` or ``"auto"`` (fitted to the chunk
        shape), or an explicit :class:`~xarray_hurray.layout.Layout` or its descriptor.
    endian
        Byte order of multi-byte elements.  Dropped for one-byte data types.

    Notes
    -----
    When this codec is the array's only codec, zarr reads a region of a chunk
    through :meth:`_decode_partial_single`, which fetches only the byte runs that
    hold the region.
    """

    is_fixed_size = True

    layout: str | Layout
    endian: Endian | None

    def __init__(
        self, layout: str | Layout | Mapping[str, Any] = "auto", *, endian: Endian | None = "little"
    ) -> None:
        object.__setattr__(self, "layout", parse_layout(layout))
        object.__setattr__(self, "endian", parse_endian(endian))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Build the codec from its ``{"name": "hurray", "configuration": ...}`` metadata."""
        if data.get("name") != "hurray":
            raise ValueError(f"expected codec metadata named 'hurray', got {data!r}")
        config = dict(data.get("configuration") or {})
        unknown = set(config) - {"layout", "endian"}
        if unknown:
            raise ValueError(f"unknown hurray codec configuration keys {sorted(unknown)}")
        if "layout" not in config:
            raise ValueError("hurray codec configuration needs a 'layout'")
        return cls(config["layout"], endian=config.get("endian"))

    def to_dict(self) -> dict[str, Any]:
        """The codec's metadata."""
        config: dict[str, Any] = {"layout": layout_config(self.layout)}
        if self.endian is not None:
            config["endian"] = self.endian
        return {"name": "hurray", "configuration": config}

    def evolve_from_array_spec(self, array_spec: ArraySpec) -> Self:
        """Drop the byte order for one-byte data types; require it for the others."""
        has_order = stored_dtype(array_spec.dtype.to_native_dtype(), "little").byteorder != "|"
        if not has_order and self.endian is not None:
            return replace(self, endian=None)
        if has_order and self.endian is None:
            raise ValueError("the hurray codec needs 'endian' for multi-byte data types")
        return self

    def validate(self, *, shape: tuple[int, ...], dtype: Any, chunk_grid: Any) -> None:
        """Check the data type and that the layout holds the chunk shape, at array creation.

        Raises
        ------
        LayoutError
            If the chunk shape breaks a rule of the layout.
        TypeError
            For a data type without a fixed element size, or a chunk grid that is
            not regular.
        """
        check_fixed_size(dtype.to_native_dtype())
        chunk_shape = getattr(chunk_grid, "chunk_shape", None)
        if chunk_shape is None:
            raise TypeError(
                f"the hurray codec needs a regular chunk grid, got {type(chunk_grid).__name__}"
            )
        self.layout_for(chunk_shape)

    def layout_for(self, chunk_shape: Sequence[int]) -> Layout:
        """The layout of a chunk of ``chunk_shape``, validated against it."""
        return fit_layout(self.layout, chunk_shape)

    def _encode_sync(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        encoded = encode_chunk(chunk_array.as_numpy_array(), self.layout, self.endian)
        return chunk_spec.prototype.buffer.from_array_like(encoded)

    def _decode_sync(self, chunk_data: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        dtype = chunk_spec.dtype.to_native_dtype()
        array = decode_chunk(
            chunk_data.as_numpy_array(), self.layout, chunk_spec.shape, dtype, self.endian
        )
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(array)

    async def _encode_single(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        return self._encode_sync(chunk_array, chunk_spec)

    async def _decode_single(self, chunk_data: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        return self._decode_sync(chunk_data, chunk_spec)

    async def _decode_partial_single(
        self, byte_getter: ByteGetter, selection: Any, chunk_spec: ArraySpec
    ) -> NDBuffer | None:
        """Read ``selection`` of one chunk, fetching only the byte runs that hold it."""
        lo, hi, local = selection_box(selection, chunk_spec.shape)
        if any(lo) or hi != tuple(chunk_spec.shape):
            box = await self._read_box(byte_getter, lo, hi, chunk_spec)
        else:
            chunk_data = await byte_getter.get(prototype=chunk_spec.prototype)
            box = None if chunk_data is None else self._decode_sync(chunk_data, chunk_spec)
        if box is None:
            return None
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(
            np.asarray(box.as_numpy_array()[local])
        )

    async def _read_box(
        self,
        byte_getter: ByteGetter,
        lo: tuple[int, ...],
        hi: tuple[int, ...],
        chunk_spec: ArraySpec,
    ) -> NDBuffer | None:
        """The box ``lo <= x < hi`` of a chunk from its byte runs; None if the chunk is absent."""
        shape = chunk_spec.shape
        dtype = chunk_spec.dtype.to_native_dtype()
        layout = self.layout_for(shape)
        runs = layout.ranges(lo, hi, shape)
        itemsize = dtype.itemsize
        full = layout.buffer_size(shape) * itemsize
        wanted = [(int(a) * itemsize, int(b) * itemsize) for a, b in runs]
        # A stored chunk must hold exactly `full` bytes, as whole-chunk decoding checks.
        # Runs inside a chunk of the wrong size can come back whole, so each read also
        # learns where the chunk ends: a run that ends the chunk is asked for one byte
        # more (which must not exist), else one more request asks for the bytes
        # [full - 1, full + 1), of which exactly the first must exist.
        requests = list(wanted)
        if wanted[-1][1] == full:
            requests[-1] = (wanted[-1][0], full + 1)
        else:
            wanted.append((full - 1, full))
            requests.append((full - 1, full + 1))
        parts = await asyncio.gather(
            *(
                byte_getter.get(
                    prototype=chunk_spec.prototype, byte_range=RangeByteRequest(start, stop)
                )
                for start, stop in requests
            )
        )
        if any(part is None for part in parts):
            return None
        arrays = [part.as_numpy_array() for part in parts]
        for (start, stop), array in zip(wanted, arrays, strict=True):
            if array.size != stop - start:
                raise LayoutError(
                    f"stored {layout.name} chunk of shape {tuple(shape)} must hold {full} "
                    f"bytes, but a region read of its bytes [{start}, {stop}) returned "
                    f"{array.size} bytes"
                )
        data = np.concatenate([np.empty(0, np.uint8), *arrays[: len(runs)]])
        data = data.view(stored_dtype(dtype, self.endian))
        box = tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))
        values = data[runs_offsets(runs, layout.positions(shape).reshape(shape)[box])]
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(values.astype(dtype, copy=False))

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        """Bytes of an encoded chunk: the layout's buffer, padding included."""
        itemsize = input_byte_length // max(math.prod(chunk_spec.shape), 1)
        return self.layout_for(chunk_spec.shape).buffer_size(chunk_spec.shape) * itemsize


def runs_offsets(runs: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Where each buffer position lies in the concatenation of the runs holding it.

    Parameters
    ----------
    runs
        Sorted, disjoint ``[start, stop)`` runs of buffer positions, shape ``(n, 2)``.
    positions
        Buffer positions, each inside one of the runs; any shape.

    Returns
    -------
    numpy.ndarray
        Offsets into the runs laid end to end, shaped like ``positions``.
    """
    lengths = runs[:, 1] - runs[:, 0]
    run_first = np.cumsum(lengths) - lengths
    which = np.searchsorted(runs[:, 0], positions, side="right") - 1
    return run_first[which] + positions - runs[which, 0]
