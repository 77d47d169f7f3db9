"""Element types of the format and the bytes of a buffer of elements.

Fixed-size types are stored little-endian, one after another.  The ``string`` type
(variable-length UTF-8) stores a buffer of ``n`` strings as ``n`` uint32 byte lengths
followed by the concatenated UTF-8 bytes.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import HurrayTypeError, HurrayValueError

FIXED_TYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
"""Numeric element types, named as numpy names them."""

STRING = "string"
"""Variable-length UTF-8 strings."""

_TEXT = re.compile(r"([SU])([1-9][0-9]*)")


def parse_element_type(name: str) -> np.dtype:
    """The numpy dtype of element type ``name`` (object for ``string``).

    Raises
    ------
    ValueError
        For an unknown type name.
    """
    if name in FIXED_TYPES:
        return np.dtype(name).newbyteorder("<")
    if name == STRING:
        return np.dtype(object)
    match = _TEXT.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        raise HurrayValueError(
            f"unknown element type {name!r}; expected one of {', '.join(FIXED_TYPES)}, "
            "'S<n>', 'U<n>' or 'string'"
        )
    return np.dtype(f"<{match.group(1)}{match.group(2)}")


def element_type(dtype: np.dtype) -> str:
    """The element type name that stores ``dtype``.

    Raises
    ------
    TypeError
        For dtypes the format cannot store (datetimes must be CF-encoded first).
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "biufc" and dtype.name in FIXED_TYPES:
        return dtype.name
    if dtype.kind in "SU" and dtype.itemsize > 0:
        return f"{dtype.kind}{dtype.itemsize // (4 if dtype.kind == 'U' else 1)}"
    if dtype.kind in "OT":
        return STRING
    raise HurrayTypeError(
        f"dtype {dtype} cannot be stored; supported are {', '.join(FIXED_TYPES)}, "
        "fixed-width bytes and unicode, and str"
    )


def pad_value(name: str) -> object:
    """The value written into padding elements, whose stored bytes are zero: the
    number zero, or the empty text for ``string``, ``S<n>`` and ``U<n>`` (numpy
    writes the number zero into a buffer of text as the character "0")."""
    return "" if name == STRING or name[0] in "SU" else 0


def to_bytes(buffer: np.ndarray, name: str) -> np.ndarray:
    """The bytes of a 1-D buffer of elements, as an array codecs accept.

    Numeric buffers keep their dtype (so that shuffling codecs see the item size);
    text is viewed as bytes.
    """
    if name == STRING:
        items = buffer.tolist()
        try:
            encoded = [item.encode("utf-8") for item in items]
        except UnicodeEncodeError as err:
            raise HurrayValueError(
                f"a string variable holds text that is not valid Unicode (a lone "
                f"surrogate): {err.object[max(err.start - 20, 0) : err.end + 20]!r}",
                value=err.object,
            ) from err
        except AttributeError as err:
            bad = next(item for item in items if not isinstance(item, str))
            raise HurrayTypeError(
                f"a string variable holds an element that is not str: {bad!r} of type "
                f"{type(bad).__name__} (the string type has no missing value)",
                value=bad,
            ) from err
        lengths = np.fromiter(map(len, encoded), dtype="<u4", count=len(encoded))
        return np.frombuffer(lengths.tobytes() + b"".join(encoded), dtype=np.uint8)
    array = np.ascontiguousarray(buffer, dtype=parse_element_type(name))
    if array.dtype.kind == "U":
        check_code_points(array.view("<u4"))
    # bool, bytes and text go out as their raw bytes (a view: no copy); numbers keep
    # their dtype so the codecs see the element size (blosc's shuffle uses it)
    return array.view(np.uint8) if array.dtype.kind in "bSU" else array


def check_code_points(points: np.ndarray) -> None:
    """Check that UTF-32 ``points`` are Unicode scalar values: at most 0x10FFFF and no
    surrogate (numpy stores such text, but using it fails later, far from the file).

    Raises
    ------
    ValueError
        Naming the first bad code point.
    """
    bad = (points > 0x10FFFF) | ((points >= 0xD800) & (points <= 0xDFFF))
    if bad.any():
        point = int(points[np.flatnonzero(bad)[0]])
        raise HurrayValueError(f"text holds {point:#x}, which is not a Unicode scalar value")


def from_bytes(data: bytes | bytearray | memoryview, name: str, count: int) -> np.ndarray:
    """The 1-D buffer of ``count`` elements held by ``data`` (a view of it for
    fixed-size types).

    Raises
    ------
    ValueError
        When ``data`` does not hold exactly ``count`` elements, or holds a ``bool``
        byte other than 0 or 1.
    """
    if name != STRING:
        dtype = parse_element_type(name)
        if len(data) != count * dtype.itemsize:
            raise HurrayValueError(
                f"{count} elements of {name} need {count * dtype.itemsize} bytes, got {len(data)}"
            )
        if dtype.kind == "b" and count and np.frombuffer(data, dtype=np.uint8).max() > 1:
            raise HurrayValueError("a bool element is a byte other than 0 or 1")
        if dtype.kind == "U":
            check_code_points(np.frombuffer(data, dtype="<u4"))
        return np.frombuffer(data, dtype=dtype)
    if len(data) < 4 * count:
        raise HurrayValueError(
            f"{count} strings need {4 * count} bytes of lengths, got {len(data)}"
        )
    data = bytes(data)  # the strings are decoded from slices of bytes
    lengths = np.frombuffer(data, dtype="<u4", count=count).astype(np.int64)
    ends = 4 * count + np.cumsum(lengths)
    total = int(ends[-1]) if count else 0
    if total != len(data):
        raise HurrayValueError(
            f"string lengths add up to {total} bytes, the buffer holds {len(data)}"
        )
    starts = ends - lengths
    out = np.empty(count, dtype=object)
    out[:] = [
        data[s:e].decode("utf-8") for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
    ]
    return out


def element_bytes(value: object, name: str) -> bytes:
    """The stored bytes of one element ``value`` of type ``name`` (for ``string``, its
    UTF-8 bytes): how a file records a variable's fill value.

    Raises
    ------
    ValueError, TypeError
        When ``value`` is not one element of the type (a lone surrogate, a number out
        of range, text too long for ``S<n>``/``U<n>``).
    """
    if name == STRING:
        if not isinstance(value, str):
            raise HurrayTypeError(
                f"the fill value of a string variable must be a str, got {value!r}"
            )
        return value.encode("utf-8")
    dtype = parse_element_type(name)
    array = np.asarray(value)
    if array.shape != ():
        raise HurrayValueError(f"a fill value is one element, got {value!r}")
    if dtype.kind in "SU" and array.dtype.kind in "SU" and array.dtype.itemsize > dtype.itemsize:
        raise HurrayValueError(f"fill value {value!r} does not fit element type {name}")
    converted = array.astype(dtype)
    if dtype.kind in "iu" and array.dtype.kind in "iuf" and converted != array:
        raise HurrayValueError(f"fill value {value!r} does not fit element type {name}")
    return converted.tobytes()


def element_from_bytes(data: bytes, name: str) -> object:
    """The element whose stored bytes are ``data``: a numpy scalar, or a str.

    Raises
    ------
    ValueError
        For bytes that are not one element of the type: the wrong length, a ``bool``
        byte other than 0 or 1, text that is not valid UTF-8 or code points that are
        not Unicode scalar values.
    """
    if name == STRING:
        return data.decode("utf-8")
    dtype = parse_element_type(name)
    if len(data) != dtype.itemsize:
        raise HurrayValueError(f"an element of {name} has {dtype.itemsize} bytes, got {len(data)}")
    if dtype.kind == "b" and data[0] > 1:
        raise HurrayValueError("a bool element is a byte other than 0 or 1")
    if dtype.kind == "U":
        points = np.frombuffer(data, dtype="<u4")
        if np.any((points > 0x10FFFF) | ((points >= 0xD800) & (points <= 0xDFFF))):
            raise HurrayValueError("a U element holds a code point that is not a Unicode scalar")
    return np.frombuffer(data, dtype=dtype)[0]
