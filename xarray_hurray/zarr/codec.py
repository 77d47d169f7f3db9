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
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from zarr.abc.codec import ArrayBytesCodec, ArrayBytesCodecPartialDecodeMixin
from zarr.abc.store import RangeByteRequest

from ..errors import HurrayTypeError, HurrayValueError, in_context
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
    through :meth:`_decode_partial_single` (or :meth:`_decode_partial_sync` on zarr's
    synchronous ``FusedCodecPipeline``), which fetches only the byte runs that hold
    the region.
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
            raise HurrayValueError(f"expected codec metadata named 'hurray', got {data!r}")
        config = dict(data.get("configuration") or {})
        unknown = set(config) - {"layout", "endian"}
        if unknown:
            raise HurrayValueError(f"unknown hurray codec configuration keys {sorted(unknown)}")
        if "layout" not in config:
            raise HurrayValueError("hurray codec configuration needs a 'layout'")
        # endian may be left out, as for zarr's own "bytes" codec: little-endian, as
        # HurrayCodec(...) defaults to (and dropped again for one-byte types)
        return cls(config["layout"], endian=config.get("endian", "little"))

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
            raise HurrayValueError("the hurray codec needs 'endian' for multi-byte data types")
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
            raise HurrayTypeError(
                f"the hurray codec needs a regular chunk grid, got {type(chunk_grid).__name__}"
            )
        try:
            self.layout_for(chunk_shape)
        except LayoutError as err:
            # zarr gives a codec no array name: the shapes let the caller find it
            context = f"the hurray codec of an array of shape {tuple(shape)} and chunks"
            raise in_context(err, f"{context} {tuple(chunk_shape)}") from err

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
        # numpy's stubs and zarr's NDArrayLike protocol disagree on details; an ndarray is one
        return chunk_spec.prototype.nd_buffer.from_ndarray_like(cast(Any, array))

    async def _encode_single(self, chunk_array: NDBuffer, chunk_spec: ArraySpec) -> Buffer | None:
        return self._encode_sync(chunk_array, chunk_spec)

    async def _decode_single(self, chunk_data: Buffer, chunk_spec: ArraySpec) -> NDBuffer:
        return self._decode_sync(chunk_data, chunk_spec)

    async def _decode_partial_single(
        self, byte_getter: ByteGetter, selection: Any, chunk_spec: ArraySpec
    ) -> NDBuffer | None:
        """Read ``selection`` of one chunk, fetching only the byte runs that hold it."""
        plan = BoxRead(self, selection, chunk_spec)
        prototype = chunk_spec.prototype
        parts = await asyncio.gather(
            *(byte_getter.get(prototype=prototype, byte_range=r) for r in plan.requests)
        )
        return plan.values(parts)

    def _decode_partial_sync(
        self, byte_getter: Any, selection: Any, chunk_spec: ArraySpec
    ) -> NDBuffer | None:
        """:meth:`_decode_partial_single` for zarr's synchronous (fused) codec pipeline,
        which reads through ``byte_getter.get_sync``."""
        plan = BoxRead(self, selection, chunk_spec)
        prototype = chunk_spec.prototype
        return plan.values(
            [byte_getter.get_sync(prototype=prototype, byte_range=r) for r in plan.requests]
        )

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: ArraySpec) -> int:
        """Bytes of an encoded chunk: the layout's buffer, padding included."""
        # max(..., 1): a chunk with a zero-length side has no elements to divide by
        itemsize = input_byte_length // max(math.prod(chunk_spec.shape), 1)
        return self.layout_for(chunk_spec.shape).buffer_size(chunk_spec.shape) * itemsize


class BoxRead:
    """The reads of a selection of one chunk, and the selection from what they return.

    The selection's bounding box is read as the byte runs of the layout that hold it,
    or the whole chunk in one request when the box is the chunk.

    Parameters
    ----------
    codec
        The chunk's codec.
    selection
        The selection inside the chunk, as zarr hands it to codecs.
    chunk_spec
        The chunk's shape, data type and buffer prototype.
    """

    def __init__(self, codec: HurrayCodec, selection: Any, chunk_spec: ArraySpec) -> None:
        self.codec = codec
        self.spec = chunk_spec
        self.shape = tuple(chunk_spec.shape)
        self.lo, self.hi, self.local = selection_box(selection, self.shape)
        self.whole = not any(self.lo) and self.hi == self.shape
        self.requests: list[RangeByteRequest | None] = [None]
        if self.whole:
            return
        dtype = chunk_spec.dtype.to_native_dtype()
        self.layout = codec.layout_for(self.shape)
        self.runs = self.layout.ranges(self.lo, self.hi, self.shape)
        itemsize = dtype.itemsize
        self.full = self.layout.buffer_size(self.shape) * itemsize
        self.wanted = [(int(a) * itemsize, int(b) * itemsize) for a, b in self.runs]
        # A stored chunk must hold exactly `full` bytes, as whole-chunk decoding checks.
        # Runs inside a chunk of the wrong size can come back whole, so each read also
        # learns where the chunk ends: a run that ends the chunk is asked for one byte
        # more (which must not exist), else one more request asks for the bytes
        # [full - 1, full + 1), of which exactly the first must exist.
        ranges = list(self.wanted)
        if self.wanted[-1][1] == self.full:
            ranges[-1] = (self.wanted[-1][0], self.full + 1)
        else:
            self.wanted.append((self.full - 1, self.full))
            ranges.append((self.full - 1, self.full + 1))
        self.requests = [RangeByteRequest(start, stop) for start, stop in ranges]

    def values(self, parts: Sequence[Buffer | None]) -> NDBuffer | None:
        """The selection, from the answers to :attr:`requests` in order; None if the
        chunk is absent.

        Raises
        ------
        LayoutError
            If the stored chunk does not hold exactly the bytes of its layout.
        """
        fetched = [part for part in parts if part is not None]
        if len(fetched) < len(parts):
            return None
        if self.whole:
            box = self.codec._decode_sync(fetched[0], self.spec).as_numpy_array()
        else:
            box = self._box(fetched)
        picked: Any = np.asarray(box[self.local])  # an NDArrayLike, as above
        return self.spec.prototype.nd_buffer.from_ndarray_like(picked)

    def _box(self, parts: Sequence[Buffer]) -> np.ndarray:
        arrays = [part.as_numpy_array() for part in parts]
        for (start, stop), array in zip(self.wanted, arrays, strict=True):
            if array.size != stop - start:
                raise LayoutError(
                    f"stored {self.layout.name} chunk of shape {self.shape} must hold "
                    f"{self.full} bytes, but a region read of its bytes [{start}, {stop}) "
                    f"returned {array.size} bytes"
                )
        dtype = self.spec.dtype.to_native_dtype()
        # the empty start keeps the result uint8 for any answers; [: len(self.runs)]
        # drops the extra answer that only located the chunk's end
        data = np.concatenate([np.empty(0, np.uint8), *arrays[: len(self.runs)]])
        # a view: the bytes become elements of the stored byte order without a copy
        data = data.view(stored_dtype(dtype, self.codec.endian))
        box = tuple(slice(a, b) for a, b in zip(self.lo, self.hi, strict=True))
        positions = self.layout.positions(self.shape).reshape(self.shape)[box]
        out: np.ndarray = data[runs_offsets(self.runs, positions)].astype(dtype, copy=False)
        return out


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
    run_first = np.cumsum(lengths) - lengths  # exclusive prefix sum: where each run lands
    # the last run starting at or before each position is the one holding it
    which = np.searchsorted(runs[:, 0], positions, side="right") - 1
    offsets: np.ndarray = run_first[which] + positions - runs[which, 0]
    return offsets
