"""The stored bytes of one chunk, shared by the Zarr v3 codec and the numcodecs codec.

A chunk is stored as its layout's buffer of elements (see :mod:`xarray_hurray.layout`),
each element in a fixed byte order; padding elements of a Morton buffer are zero bytes.
numpy and the layout core only: no zarr.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

import numpy as np

from ..errors import HurrayTypeError, HurrayValueError
from ..layout import LAYOUT_NAMES, Layout, LayoutError, layout_for_shape, layout_from_config

Endian = Literal["little", "big"]
LAYOUT_KINDS = ("auto", *LAYOUT_NAMES)
FIXED_SIZE_KINDS = "biufcmM"
"""numpy kinds with one fixed-size value per element: bool, integers, floats, complex, times."""


def parse_layout(layout: str | Layout | Mapping[str, Any]) -> str | Layout:
    """A layout kind or a :class:`Layout`, from a kind, a layout or a descriptor mapping.

    Raises
    ------
    LayoutError
        For an unknown kind or an invalid descriptor.
    """
    if isinstance(layout, Layout):
        return layout
    if isinstance(layout, str):
        if layout not in LAYOUT_KINDS:
            raise LayoutError(
                f"unknown hurray layout {layout!r}; expected one of {', '.join(LAYOUT_KINDS)}"
            )
        return layout
    if isinstance(layout, Mapping):
        return layout_from_config(layout)
    raise LayoutError(f"hurray layout must be a kind, a Layout or a descriptor, got {layout!r}")


def layout_config(layout: str | Layout) -> str | dict[str, Any]:
    """The JSON form of a parsed layout: the kind, or the descriptor."""
    return layout if isinstance(layout, str) else layout.to_config()


def parse_endian(endian: str | None) -> Endian | None:
    """Check an ``endian`` setting: ``"little"``, ``"big"`` or ``None``."""
    if endian not in ("little", "big", None):
        raise HurrayValueError(f"hurray endian must be 'little', 'big' or None, got {endian!r}")
    return cast(Endian | None, endian)


def check_fixed_size(dtype: np.dtype) -> np.dtype:
    """Return ``dtype`` if the hurray codecs can store it, else raise a :class:`TypeError`."""
    dtype = np.dtype(dtype)
    if dtype.kind not in FIXED_SIZE_KINDS:
        raise HurrayTypeError(
            f"the hurray codec stores fixed-size numeric, boolean and time data types, not {dtype}"
        )
    return dtype


def stored_dtype(dtype: np.dtype, endian: Endian | None) -> np.dtype:
    """``dtype`` in the byte order ``endian``; one-byte types as they are."""
    dtype = check_fixed_size(dtype)
    if endian is None or dtype.byteorder == "|":
        return dtype
    return dtype.newbyteorder("<" if endian == "little" else ">")


def fit_layout(layout: str | Layout, chunk_shape: Sequence[int]) -> Layout:
    """The layout of a chunk of ``chunk_shape``: a kind fitted to it, or a layout checked."""
    if isinstance(layout, Layout):
        layout.validate(chunk_shape)
        return layout
    return layout_for_shape(layout, chunk_shape)


def encode_chunk(array: np.ndarray, layout: str | Layout, endian: Endian | None) -> np.ndarray:
    """The stored bytes of the chunk ``array``, as a 1-D ``uint8`` array."""
    array = np.asarray(array)
    buffer = fit_layout(layout, array.shape).encode(array, 0)
    return buffer.astype(stored_dtype(array.dtype, endian), copy=False).view(np.uint8)


def decode_chunk(
    data: np.ndarray,
    layout: str | Layout,
    shape: Sequence[int],
    dtype: np.dtype,
    endian: Endian | None,
) -> np.ndarray:
    """The chunk of ``shape`` and in-memory ``dtype`` held by the stored bytes ``data``.

    Raises
    ------
    LayoutError
        If ``data`` does not hold exactly the bytes of such a chunk.
    """
    fitted = fit_layout(layout, shape)
    stored = stored_dtype(dtype, endian)
    # a view, not a copy: the stored bytes are read in place, whatever their buffer's dtype
    raw = np.asarray(data).reshape(-1).view(np.uint8)
    expected = fitted.buffer_size(shape) * stored.itemsize
    if raw.size != expected:
        raise LayoutError(
            f"stored {fitted.name} chunk of shape {tuple(shape)} must hold {expected} bytes, "
            f"got {raw.size}"
        )
    return fitted.decode(raw.view(stored), shape).astype(dtype, copy=False)
