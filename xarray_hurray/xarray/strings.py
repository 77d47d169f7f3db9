"""Text variables at the xarray layer: missing strings, bytes and character arrays.

The format's ``string`` and ``S<n>`` element types have no missing value, so a
missing element (``None``, ``NaN`` or ``pd.NA`` in an object array, the NA of a
``StringDType``) is written as a fill value that no real element of the variable
equals, recorded as the variable's ``_FillValue`` attribute as CF does.  Reading
with ``mask_and_scale=True`` (the default) turns it back into a missing value
(``NaN``), so missing strings come back where they were, and nothing else does.

Object arrays of ``bytes`` are stored as fixed-width ``S<n>``.  ``encoding["dtype"]
= "S1"`` asks for netCDF-style character arrays (one more dimension, text encoded
as ``_Encoding``, UTF-8 by default), as xarray's netCDF backends write them.

Attributes have no bytes type, so the ``_FillValue`` and ``missing_value`` of an
``S<n>`` variable are stored as the text of their UTF-8 bytes and turned back into
bytes on reading (:func:`decode_fill_bytes`).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from xarray.coding.common import SerializationWarning
from xarray.coding.strings import (
    CharacterArrayCoder,
    EncodedStringCoder,
    check_vlen_dtype,
    create_vlen_dtype,
    ensure_fixed_length_bytes,
)

from ..errors import HurrayTypeError, HurrayValueError
from .cf_checks import encoding_misfit
from .compat import ensure_dtype_not_object

FILL_ATTRS = ("_FillValue", "missing_value")
"""Attributes holding an element value, as bytes for an ``S<n>`` variable."""

STORABLE_OBJECTS = (str, bytes, int, float, complex, np.generic)
"""The Python objects an object array may hold to be written (``bool`` is an
``int``): text, bytes and numbers, which xarray turns into a type the format stores."""


def _is_dask_array(data: Any) -> bool:
    """Whether ``data`` is a dask array, without importing dask: the backend reads
    through this module, and no dask array exists before ``dask.array`` is imported."""
    dask_array = sys.modules.get("dask.array")
    return dask_array is not None and isinstance(data, dask_array.Array)


def _is_text(var: xr.Variable) -> bool:
    """Whether ``var`` holds Python objects or ``StringDType`` text (not ``S``/``U``)."""
    return var.dtype.kind in "OT"


def _as_objects(var: xr.Variable, name: Hashable) -> xr.Variable:
    """``var`` with ``StringDType`` text as objects (NA elements kept as missing), and
    dask object arrays of unknown element type loaded, as xarray's backends load them
    to find a type that can be stored."""
    data = var.data
    if var.dtype.kind == "O" and not _is_dask_array(data):
        return var
    if var.dtype.kind == "T":
        # StringDType's own encoder would replace NA by "": keep NA as a missing object
        dtype = create_vlen_dtype(str)
        data = data.astype(dtype) if _is_dask_array(data) else np.asarray(data, dtype)
    elif _is_dask_array(data) and check_vlen_dtype(var.dtype) is None:
        warnings.warn(
            f"variable {name!r} has data in the form of a dask array with dtype=object: it "
            "is loaded to find the type of its elements; astype(str) or astype(bytes) "
            "before writing avoids it",
            SerializationWarning,
            stacklevel=4,
        )
        data = data.compute()
    return var.copy(data=data, deep=False)


def _missing(value: Any) -> bool:
    """Whether the element ``value`` of an object array is missing (None, NaN, NA)."""
    return bool(pd.api.types.is_scalar(value) and pd.isna(value))


def _check_objects(data: np.ndarray, name: Hashable) -> None:
    """Refuse an object array holding elements no stored type holds (mappings, lists,
    other objects), naming the variable and the first such element: xarray's
    inference of a type fails on them with words that name neither, or not at all.

    Raises
    ------
    TypeError
        Naming the variable and the element's type.
    """
    for value in data.ravel().tolist():
        if not isinstance(value, STORABLE_OBJECTS) and not _missing(value):
            shown = repr(value)
            shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
            raise HurrayTypeError(
                f"variable {name!r} holds Python objects of type {type(value).__name__} "
                f"({shown}), which no stored type holds: an object array is stored as "
                "text, bytes or numbers; convert its elements (json.dumps for mappings "
                "and lists) or drop the variable",
                value=type(value).__name__,
            )


def _present_values(data: np.ndarray, name: Hashable) -> set[Any]:
    """The elements of ``data`` that are not missing (checked first: see
    :func:`_check_objects`)."""
    _check_objects(data, name)
    flat = data.ravel()
    return set(flat[~pd.isnull(flat)].tolist())


def _absent_value(present: Iterable[Any], text: bool) -> str | bytes:
    """The shortest of ``""``, ``"\\x01"``, ``"\\x01\\x01"``, ... (bytes when not
    ``text``) that is not in ``present``: a fill value no element equals."""
    values = set(present)

    def candidate(count: int) -> str | bytes:
        return "\x01" * count if text else b"\x01" * count

    count = 0
    while candidate(count) in values:
        count += 1
    return candidate(count)


def check_fill_value(var: xr.Variable, name: Hashable, explicit: bool) -> xr.Variable:
    """``var``, ready for xarray's CF encoding: text as objects, and a text
    ``_FillValue`` that a real element equals (it would read back as missing) refused
    when the caller gave it, or dropped when it was carried from the file the variable
    was read from (a new one is chosen).  Dask arrays are not searched.

    Raises
    ------
    ValueError
        Naming the variable and the colliding value.
    """
    if not _is_text(var):
        return var
    var = _as_objects(var, name)
    fill = var.encoding.get("_FillValue", var.attrs.get("_FillValue"))
    if not isinstance(fill, str | bytes) or _is_dask_array(var.data):
        return var
    if fill not in _present_values(np.asarray(var.data), name):
        return var
    if explicit or "_FillValue" in var.attrs:
        raise HurrayValueError(
            f"variable {name!r}: _FillValue {fill!r} is also the value of some elements, "
            "which would read back as missing; choose a _FillValue no element equals, or "
            "give none and one is chosen"
        )
    var = var.copy(deep=False)
    var.encoding = {k: v for k, v in var.encoding.items() if k != "_FillValue"}
    return var


def _fill_block(block: np.ndarray, name: Hashable, fill: str | bytes | None) -> np.ndarray:
    """``block`` with its missing elements set to ``fill``; refused when there is none."""
    missing = pd.isnull(block)
    if not missing.any():
        return block
    if fill is None:
        raise HurrayValueError(
            f"variable {name!r} holds missing strings (None, NaN or NA) in a dask array; "
            f"give encoding={{{name!r}: {{'_FillValue': <a string no element equals>}}}} "
            "or load() the variable so that a fill value can be chosen"
        )
    block = block.copy()
    block[missing] = fill
    return block


def _fill_missing(var: xr.Variable, name: Hashable) -> xr.Variable:
    """``var`` with its missing elements replaced by a fill value recorded as
    ``_FillValue``: the one given, or else one no element equals.  A dask array
    without a given fill value is refused, chunk by chunk, if it holds one."""
    given = var.attrs.get("_FillValue")
    given = given if isinstance(given, str | bytes) else None
    if _is_dask_array(var.data):
        import dask.array as da

        data = da.map_blocks(_fill_block, var.data, name, given, dtype=var.dtype)
        return var.copy(data=data, deep=False)
    data = np.asarray(var.data)
    missing = pd.isnull(data)
    if not missing.any():
        return var
    present = _present_values(data, name)
    text = all(isinstance(v, str) for v in present)
    if not present or not (text or all(isinstance(v, bytes) for v in present)):
        # nothing but missing values, numbers, or a mixture: xarray finds their type
        # (floats hold NaN)
        return var
    fill = given if isinstance(given, str if text else bytes) else _absent_value(present, text)
    attrs = {**var.attrs, "_FillValue": fill}
    return xr.Variable(var.dims, _fill_block(data, name, fill), attrs, var.encoding)


def _fill_bytes_as_text(var: xr.Variable, name: Hashable) -> xr.Variable:
    if var.dtype.kind != "S" or not any(isinstance(var.attrs.get(k), bytes) for k in FILL_ATTRS):
        return var
    attrs = dict(var.attrs)
    for key in FILL_ATTRS:
        value = attrs.get(key)
        if isinstance(value, bytes):
            try:
                attrs[key] = value.decode("utf-8")
            except UnicodeDecodeError:
                raise HurrayValueError(
                    f"variable {name!r}: {key} {value!r} is not UTF-8 text, which the "
                    "attribute of a bytes variable is stored as"
                ) from None
    return xr.Variable(var.dims, var.data, attrs, var.encoding)


def encode_text(var: xr.Variable, name: Hashable) -> xr.Variable:
    """The stored form of a CF-encoded variable whose elements may be text.

    Missing strings are filled as the module describes; object arrays become the
    ``string`` (vlen str) or ``S<n>`` (bytes) element type; ``encoding["dtype"] ==
    "S1"`` gives a character array; bytes fill values become text.

    Raises
    ------
    ValueError, TypeError, NotImplementedError
        Naming the variable, for elements of no text type (mappings, lists and other
        objects in an object array: a ``TypeError``), a ``_FillValue`` with
        character arrays of unicode text (as xarray's netCDF backends), or an
        ``_Encoding`` attribute on a variable that does not hold bytes.
    """
    as_chars = var.encoding.get("dtype") == "S1" and (_is_text(var) or var.dtype.kind in "SU")
    if var.dtype.kind == "O" and not _is_dask_array(var.data):
        _check_objects(np.asarray(var.data), name)
    if _is_text(var):
        var = _fill_missing(var, name)
    var = ensure_dtype_not_object(var, name=name)
    var = EncodedStringCoder(allows_unicode=True).encode(var, name=name)
    if as_chars:
        var = CharacterArrayCoder().encode(var, name=name)
    var = ensure_fixed_length_bytes(var)
    misfit = encoding_misfit(var.dtype.kind)
    if "_Encoding" in var.attrs and misfit is not None:
        # a reader would refuse it (see cf_checks)
        raise HurrayValueError(
            f"variable {name!r}: attribute '_Encoding' names the encoding of bytes, but "
            f"the variable holds {misfit}; drop the attribute"
        )
    return _fill_bytes_as_text(var, name)


def decode_fill_bytes(dtype: np.dtype, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of a stored variable of ``dtype``, with the text fill values of
    an ``S<n>`` variable as the bytes they were written from."""
    out = dict(attrs)
    if dtype.kind == "S":
        for key in FILL_ATTRS:
            if isinstance(out.get(key), str):
                out[key] = out[key].encode("utf-8")
    return out
