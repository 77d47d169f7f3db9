"""Attribute values in the JSON metadata.

JSON strings, booleans, integers, finite floats, null and lists of these are stored
as they are (tuples become lists).  numpy scalars and arrays are stored as an object
``{"dtype": <element type>, "shape": [...], "data": [...]}`` whose ``data`` lists the
elements in C order; non-finite floats are written ``"NaN"``, ``"Infinity"`` and
``"-Infinity"``, and complex numbers as ``[real, imag]`` pairs.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import HurrayTypeError, HurrayValueError
from .elements import element_type, parse_element_type
from .limits import MAX_RANK

_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

_PLAIN = {str, int, bool, type(None)}
"""Types of attribute items stored as they are (exactly these: ``np.str_`` and
``np.float64`` derive from ``str`` and ``float`` but are stored as numpy values)."""


def float_to_json(value: float) -> float | str:
    """``value``, or the format's string for it when it is not finite (strict JSON has no NaN)."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _float_from_json(value: float | str) -> float:
    return _NON_FINITE[value] if isinstance(value, str) else float(value)


def _item_to_json(item: Any, kind: str) -> Any:
    if kind == "f":
        return float_to_json(float(item))
    if kind == "c":
        return [float_to_json(item.real), float_to_json(item.imag)]
    return item


def _item_from_json(item: Any, kind: str) -> Any:
    if kind == "f":
        return _float_from_json(item)
    if kind == "c":
        return complex(_float_from_json(item[0]), _float_from_json(item[1]))
    return item


def encode_attr(value: Any, name: str = "") -> Any:
    """The JSON value storing attribute ``value``.

    Raises
    ------
    TypeError
        Naming the attribute, for values that have no representation (mappings, bytes,
        datetimes, objects).
    """
    if isinstance(value, np.generic | np.ndarray) and value.dtype.kind in "biufcU":
        array = np.asarray(value)
        items = array.ravel()
        if array.dtype.kind in "biuU" or (array.dtype.kind == "f" and np.isfinite(items).all()):
            data = items.tolist()  # JSON holds these items as they are: no call per item
        else:
            data = [_item_to_json(item, array.dtype.kind) for item in items.tolist()]
        return {"dtype": element_type(array.dtype), "shape": list(array.shape), "data": data}
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else encode_attr(np.float64(value), name)
    if isinstance(value, list | tuple):
        # lists of plain items (millions of them, perhaps) are checked at C speed and
        # not copied: the JSON value is only serialised
        types = set(map(type, value))
        if types <= _PLAIN or (types == {float} and all(map(math.isfinite, value))):
            return value if isinstance(value, list) else list(value)
        # only items that are not plain (or empty lists) need a call
        return [
            item
            if type(item) in _PLAIN or (type(item) is list and not item)
            else encode_attr(item, name)
            for item in value
        ]
    if isinstance(value, np.generic | np.ndarray):
        raise HurrayTypeError(
            f"attribute {name!r} is a numpy value of dtype {value.dtype}, which cannot be "
            "stored: numpy attributes hold bool, integer, float, complex or str ('U') "
            "elements; convert it (.astype(str), or .tolist() for a list)"
        )
    if isinstance(value, Mapping):
        raise HurrayTypeError(
            f"attribute {name!r} is a mapping, which the format does not store (a JSON "
            "object among the attributes stands for a numpy array); store json.dumps(value) "
            "as a string, or one attribute per key"
        )
    if isinstance(value, bytes):
        raise HurrayTypeError(
            f"attribute {name!r} is bytes, which cannot be stored; decode it to str"
        )
    raise HurrayTypeError(
        f"attribute {name!r} has a value of type {type(value).__name__} that cannot be "
        "stored; use str, numbers, booleans, numpy numbers or arrays, or lists of these"
    )


class AttributeBudget:
    """How many bytes the numpy attributes of one metadata may still decode to.

    A typed attribute's size comes from its element type as well as its items: one
    short item of type ``U536870911`` is 2 GiB.  Reading, the budget is a multiple
    of the metadata's own bytes (:data:`~.limits.ATTRIBUTE_EXPANSION`, plus
    :data:`~.limits.ATTRIBUTE_ALLOWANCE`), checked before any array is allocated.
    """

    def __init__(self, nbytes: int) -> None:
        self.left = nbytes

    def take(self, nbytes: int, dtype: str) -> None:
        """Spend ``nbytes`` on an attribute of element type ``dtype``.

        Raises
        ------
        ValueError
            When the budget does not hold them.
        """
        if nbytes > self.left:
            raise HurrayValueError(
                f"a numpy attribute of element type {dtype} needs {nbytes} bytes, more than "
                f"the metadata's size allows ({max(self.left, 0)} bytes left)"
            )
        self.left -= nbytes


def decode_attr(value: Any, budget: AttributeBudget | None = None) -> Any:
    """The attribute value stored as ``value`` by :func:`encode_attr`.

    Raises
    ------
    ValueError
        For a malformed numpy object, or one larger than ``budget`` allows.
    """
    if isinstance(value, list):
        if not {list, dict} & set(map(type, value)):  # JSON has no other containers
            return value  # a list of scalars, checked at C speed
        # only the items that are containers need a call (the others, and empty lists,
        # are themselves); every object, the empty one too, must be a numpy attribute
        return [
            decode_attr(item, budget)
            if isinstance(item, dict) or (type(item) is list and item)
            else item
            for item in value
        ]
    if not isinstance(value, Mapping):
        return value
    if set(value) != {"dtype", "shape", "data"}:
        raise HurrayValueError(
            f"a numpy attribute needs dtype, shape and data, got {sorted(value)}"
        )
    dtype = parse_element_type(value["dtype"])
    if dtype.kind not in "biufcU":
        raise HurrayValueError(f"numpy attributes cannot have element type {value['dtype']!r}")
    shape, data = value["shape"], value["data"]
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_RANK
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
    ):
        raise HurrayValueError(
            f"the shape of a numpy attribute must list at most {MAX_RANK} integers >= 0, "
            f"got {shape!r}"
        )
    if not isinstance(data, list) or len(data) != math.prod(shape):
        raise HurrayValueError(f"a numpy attribute of shape {shape} needs {math.prod(shape)} items")
    if budget is not None:
        budget.take(len(data) * dtype.itemsize, value["dtype"])
    array = _uniform_items(data, dtype)
    if array is None:
        bad = [item for item in data if not _item_fits(item, dtype)]
        if bad:
            raise HurrayValueError(f"item {bad[0]!r} cannot be an element of type {value['dtype']}")
        array = np.array([_item_from_json(item, dtype.kind) for item in data], dtype=dtype)
    array = array.reshape(shape)
    return array[()] if array.ndim == 0 else array


def _uniform_items(data: list[Any], dtype: np.dtype) -> np.ndarray | None:
    """The elements ``data`` stands for, checked and converted at C speed where its
    items are all of the one JSON type that needs no conversion (numbers for numbers,
    booleans, strings for text; millions of them in an attribute take a second, not a
    Python call each); None where they are not, or one of them does not fit (the
    caller then checks item by item and names it)."""
    types = set(map(type, data))  # exact types: bool is not taken for int
    if not data or len(types) != 1:
        return None
    (kind,) = types
    if dtype.kind == "b" and kind is bool:
        return np.array(data, dtype=dtype)
    if dtype.kind in "iu" and kind is int:
        info = np.iinfo(dtype)
        fits = info.min <= min(data) and max(data) <= info.max
        return np.array(data, dtype=dtype) if fits else None
    if dtype.kind == "f" and kind in (float, int):  # floats finite: the parser refuses others
        try:
            values = np.array(data, dtype=np.float64)
        except OverflowError:  # an integer beyond the largest float
            return None
        if kind is int and (np.abs(values) >= sys.float_info.max).any():
            return None  # one may be past the largest float, rounded down to it
        return values.astype(dtype)
    if dtype.kind == "U" and kind is str:
        fits = max(map(len, data)) <= dtype.itemsize // 4
        return np.array(data, dtype=dtype) if fits else None
    return None


def _is_float_item(item: Any) -> bool:
    if isinstance(item, str):
        return item in _NON_FINITE
    if isinstance(item, int) and not isinstance(item, bool):
        return abs(item) <= sys.float_info.max
    return isinstance(item, float)


def _item_fits(item: Any, dtype: np.dtype) -> bool:
    """Whether the JSON ``item`` is a valid element of a numpy attribute of ``dtype``."""
    if dtype.kind == "b":
        return isinstance(item, bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return isinstance(item, int) and not isinstance(item, bool) and info.min <= item <= info.max
    if dtype.kind == "f":
        return _is_float_item(item)
    if dtype.kind == "c":
        return isinstance(item, list) and len(item) == 2 and all(map(_is_float_item, item))
    return isinstance(item, str) and len(item) <= dtype.itemsize // 4


def attribute_nbytes(value: Any) -> int:
    """Bytes the numpy arrays and scalars in attribute ``value`` decode to."""
    if isinstance(value, np.generic | np.ndarray):
        return int(value.nbytes)
    if isinstance(value, list | tuple):
        types = set(map(type, value))  # at C speed: most lists hold only plain items
        if not any(issubclass(t, np.generic | np.ndarray | list | tuple) for t in types):
            return 0
        return sum(
            attribute_nbytes(item)
            for item in value
            if isinstance(item, np.generic | np.ndarray)
            or (isinstance(item, list | tuple) and item)
        )
    return 0


def encode_attrs(attrs: Mapping[Any, Any]) -> dict[str, Any]:
    """Encode a mapping of attributes, whose names must be strings."""
    encoded = {}
    for key, value in attrs.items():
        if not isinstance(key, str):
            raise HurrayTypeError(f"attribute names must be strings, got {key!r}")
        encoded[key] = encode_attr(value, key)
    return encoded


def check_attrs(attrs: Mapping[Any, Any]) -> None:
    """Raise what :func:`encode_attrs` raises, without building the JSON of numpy
    arrays of the types the format stores, which can always be stored (a description
    read from a file is checked so, without an item-by-item pass over each array).

    Raises
    ------
    TypeError
        As :func:`encode_attrs`.
    """
    encode_attrs(
        {
            key: None if isinstance(v, np.generic | np.ndarray) and v.dtype.kind in "biufcU" else v
            for key, v in attrs.items()
        }
    )


def decode_attrs(attrs: Mapping[str, Any], budget: AttributeBudget | None = None) -> dict[str, Any]:
    """Decode a mapping of attributes written by :func:`encode_attrs`, spending ``budget``."""
    return {key: decode_attr(value, budget) for key, value in attrs.items()}
