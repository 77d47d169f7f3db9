"""The description of a dataset and its variables, as stored in the JSON metadata."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import HurrayFormatError, HurrayTypeError, HurrayValueError, in_context
from ..layout import LAYOUT_NAMES, Layout, LayoutError, chunk_placement, layout_from_config
from .attrs import AttributeBudget, attribute_nbytes, decode_attrs, encode_attrs
from .codecs import parse_codecs
from .elements import STRING, parse_element_type
from .format import INDEX_ENTRY
from .limits import (
    ATTRIBUTE_ALLOWANCE,
    ATTRIBUTE_EXPANSION,
    MAX_CHUNK_BYTES,
    MAX_CODECS,
    MAX_CONTAINERS,
    MAX_LENGTH,
    MAX_METADATA_BYTES,
    MAX_NESTING,
    MAX_RANK,
)


def _int_tuple(values: Sequence[int], what: str, minimum: int) -> tuple[int, ...]:
    if not isinstance(values, list | tuple) or not all(
        isinstance(v, int | np.integer) and not isinstance(v, bool) and minimum <= v <= MAX_LENGTH
        for v in values
    ):
        raise HurrayValueError(
            f"{what} must be a list of integers from {minimum} to {MAX_LENGTH}, got {values!r}"
        )
    if len(values) > MAX_RANK:
        raise HurrayValueError(
            f"{what} has {len(values)} entries; at most {MAX_RANK} axes are allowed"
        )
    return tuple(int(v) for v in values)


def check_name(name: Any, what: str) -> str:
    """``name`` if it can name a variable or dimension: a non-empty string that UTF-8
    can encode (no lone surrogates).

    Raises
    ------
    TypeError, ValueError
        Naming ``what`` and the problem.
    """
    if not isinstance(name, str):
        raise HurrayTypeError(
            f"{what} must be a string, got {name!r} of type {type(name).__name__}"
        )
    if not name:
        raise HurrayValueError(f"{what} must not be empty")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as err:
        raise HurrayValueError(
            f"{what} {name!r} is not valid Unicode text (lone surrogate)", value=name
        ) from err
    return name


@dataclass(frozen=True)
class VariableMeta:
    """One variable: its dimensions, element type, chunk grid, layout and codecs.

    Every field is validated on construction; a :class:`ValueError` names the
    variable and the field.
    """

    name: str
    dims: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: str
    chunks: tuple[int, ...]
    layout: Layout
    codecs: tuple[dict[str, Any], ...] = ()
    chunk_order: str = "hilbert"
    chunk_axes: tuple[int, ...] | None = None
    attrs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            self._validate()
        except (ValueError, TypeError) as err:
            raise in_context(err, f"variable {self.name!r}") from err

    def _validate(self) -> None:
        check_name(self.name, "the variable name")
        shape = _int_tuple(self.shape, "shape", 0)
        if not isinstance(self.dims, list | tuple):
            raise HurrayValueError(f"dims must be a list of strings, got {self.dims!r}")
        for dim in self.dims:
            check_name(dim, "a dimension name")
        if len(set(self.dims)) != len(self.dims) or len(self.dims) != len(shape):
            raise HurrayValueError(
                f"dims {list(self.dims)} must be distinct, one per axis of {shape}"
            )
        dtype = parse_element_type(self.dtype)
        chunks = _int_tuple(self.chunks, "chunks", 1)
        if len(chunks) != len(shape):
            raise HurrayValueError(f"chunks {chunks} must have one entry per axis of shape {shape}")
        if not isinstance(self.layout, Layout):
            raise HurrayTypeError(f"layout must be a Layout, got {self.layout!r}")
        self.layout.validate(chunks)
        itemsize = 4 if self.dtype == STRING else dtype.itemsize
        if self.layout.buffer_size(chunks) * itemsize > MAX_CHUNK_BYTES:
            raise HurrayValueError(
                f"a chunk of shape {chunks} and layout {self.layout.to_config()} holds more "
                f"than {MAX_CHUNK_BYTES} bytes, the largest chunk allowed"
            )
        if not isinstance(self.codecs, list | tuple) or len(self.codecs) > MAX_CODECS:
            raise HurrayValueError(f"codecs must be a list of at most {MAX_CODECS} codecs")
        if self.chunk_order not in LAYOUT_NAMES:
            raise HurrayValueError(
                f"chunk order {self.chunk_order!r} is not one of {', '.join(LAYOUT_NAMES)}"
            )
        axes = tuple(range(len(shape))) if self.chunk_axes is None else self.chunk_axes
        axes = _int_tuple(axes, "chunk axes", 0)
        if len(set(axes)) != len(axes) or any(a >= len(shape) for a in axes):
            raise HurrayValueError(f"chunk axes {list(axes)} must be distinct axes of {shape}")
        if not isinstance(self.attrs, dict):
            raise HurrayTypeError(f"attrs must be a dict, got {type(self.attrs).__name__}")
        encode_attrs(self.attrs)
        set_field = object.__setattr__
        set_field(self, "dims", tuple(self.dims))
        set_field(self, "shape", shape)
        set_field(self, "chunks", chunks)
        set_field(self, "codecs", parse_codecs(list(self.codecs)))
        set_field(self, "chunk_axes", axes)

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Number of chunks along each axis."""
        return tuple(math.ceil(n / c) for n, c in zip(self.shape, self.chunks, strict=True))

    @property
    def chunk_count(self) -> int:
        """Number of chunks; every chunk is stored, padded to the full chunk shape."""
        return math.prod(self.grid_shape)

    @property
    def index_length(self) -> int:
        """Bytes of this variable's chunk index: the entries and their crc32c."""
        return self.chunk_count * INDEX_ENTRY.itemsize + 4

    @cached_property
    def placement(self) -> np.ndarray:
        """Row-major flat chunk indices in the order their bytes follow in the file."""
        return chunk_placement(self.grid_shape, self.chunk_order, self.chunk_axes)

    def to_json(self) -> dict[str, Any]:
        """The JSON object describing this variable."""
        return {
            "name": self.name,
            "dims": list(self.dims),
            "shape": list(self.shape),
            "dtype": self.dtype,
            "chunks": list(self.chunks),
            "layout": self.layout.to_config(),
            "codecs": [dict(c) for c in self.codecs],
            "chunk_order": {"curve": self.chunk_order, "axes": list(self.chunk_axes or ())},
            "attrs": encode_attrs(self.attrs),
        }

    @classmethod
    def from_json(
        cls, obj: Mapping[str, Any], budget: AttributeBudget | None = None
    ) -> VariableMeta:
        """Parse the JSON object of one variable; its numpy attributes spend ``budget``.

        Raises
        ------
        ValueError, TypeError, KeyError, LayoutError
            For missing, extra or invalid fields.
        """
        expected = {"name", "dims", "shape", "dtype", "chunks", "layout", "codecs"}
        expected |= {"chunk_order", "attrs"}
        if not isinstance(obj, Mapping) or set(obj) != expected:
            got = sorted(obj) if isinstance(obj, Mapping) else obj
            raise HurrayValueError(
                f"a variable needs exactly the keys {sorted(expected)}, got {got}"
            )
        order = obj["chunk_order"]
        if not isinstance(order, Mapping) or set(order) != {"curve", "axes"}:
            raise HurrayValueError(f"chunk_order needs the keys curve and axes, got {order!r}")
        if not isinstance(order["axes"], list):
            raise HurrayValueError(
                f"chunk_order axes must be a list of axes, got {order['axes']!r}"
            )
        codecs = obj["codecs"]
        if not isinstance(codecs, list) or not all(isinstance(c, Mapping) for c in codecs):
            raise HurrayValueError(f"codecs must be a list of objects, got {codecs!r}")
        if not isinstance(obj["attrs"], Mapping):
            raise HurrayValueError(f"attrs must be an object, got {obj['attrs']!r}")
        return cls(
            name=obj["name"],
            dims=obj["dims"],
            shape=obj["shape"],
            dtype=obj["dtype"],
            chunks=obj["chunks"],
            layout=layout_from_config(obj["layout"]),
            codecs=tuple(codecs),
            chunk_order=order["curve"],
            chunk_axes=order["axes"],
            attrs=decode_attrs(obj["attrs"], budget),
        )


@dataclass(frozen=True)
class DatasetMeta:
    """A dataset: its attributes and its variables, in file order."""

    attrs: dict[str, Any]
    variables: tuple[VariableMeta, ...]

    def __post_init__(self) -> None:
        names = [v.name for v in self.variables]
        if len(set(names)) != len(names):
            raise HurrayValueError(f"variable names must be unique, got {names}")
        sizes: dict[str, int] = {}
        for var in self.variables:
            for dim, size in zip(var.dims, var.shape, strict=True):
                if sizes.setdefault(dim, size) != size:
                    raise HurrayValueError(
                        f"dimension {dim!r} has length {sizes[dim]} and, in variable "
                        f"{var.name!r}, {size}"
                    )

    def variable(self, name: str) -> VariableMeta:
        """The variable called ``name``; :class:`KeyError` if there is none."""
        for var in self.variables:
            if var.name == name:
                return var
        raise KeyError(f"no variable {name!r}; the file holds {[v.name for v in self.variables]}")

    @property
    def index_length(self) -> int:
        """Bytes of the index region: every variable's index, in variable order."""
        return sum(v.index_length for v in self.variables)

    def index_offsets(self, index_offset: int) -> dict[str, int]:
        """Absolute offset of each variable's index, given where the index region starts."""
        offsets = np.cumsum([index_offset] + [v.index_length for v in self.variables])
        return {v.name: int(o) for v, o in zip(self.variables, offsets, strict=False)}

    def to_bytes(self) -> bytes:
        """The metadata as compact UTF-8 JSON, checked against every limit a reader
        enforces (:mod:`.limits`), so that whatever is written can be read.

        Raises
        ------
        ValueError
            When an attribute holds text that UTF-8 cannot encode (a lone surrogate), or
            the metadata breaks a limit.
        """
        obj = {
            "attrs": encode_attrs(self.attrs),
            "variables": [v.to_json() for v in self.variables],
        }
        check_structure(obj)
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        try:
            data = text.encode()
        except UnicodeEncodeError as err:
            bad = text[max(err.start - 40, 0) : err.end + 10]
            raise HurrayValueError(
                f"the metadata holds text that is not valid Unicode (lone surrogate) near {bad!r}"
            ) from err
        if len(data) > MAX_METADATA_BYTES:
            raise HurrayValueError(
                f"the metadata takes {len(data)} bytes, more than the {MAX_METADATA_BYTES} allowed"
            )
        every_attrs = [self.attrs, *(v.attrs for v in self.variables)]
        typed = sum(attribute_nbytes(value) for attrs in every_attrs for value in attrs.values())
        budget = attribute_budget(len(data))
        if typed > budget.left:
            raise HurrayValueError(
                f"numpy attributes take {typed} bytes, more than a reader accepts from "
                f"{len(data)} bytes of metadata ({budget.left}); store wide text "
                "attributes as str"
            )
        return data


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        keys = [k for k, _ in pairs]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        raise HurrayValueError(f"an object repeats the keys {repeated}")
    return obj


def _reject_constant(name: str) -> None:
    raise HurrayValueError(f"{name} is not a JSON number; non-finite values are written as strings")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise HurrayValueError(f"the number {text} is out of range")
    return value


def check_structure(obj: Any) -> None:
    """Check that ``obj`` nests lists and dicts at most :data:`MAX_NESTING` deep and
    holds at most :data:`MAX_CONTAINERS` of them; one walk without recursion, which
    stops at the first container too many.

    Raises
    ------
    ValueError
        Naming the limit.
    """
    containers, stack = 0, [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        containers += 1
        if depth > MAX_NESTING:
            raise HurrayValueError(f"metadata JSON is nested deeper than {MAX_NESTING} levels")
        if containers > MAX_CONTAINERS:
            raise HurrayValueError(
                f"metadata JSON holds more than {MAX_CONTAINERS} arrays and objects"
            )
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, list | dict))


_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')
"""A JSON string, escapes included."""

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A JSON escape of a UTF-16 surrogate."""

_BRACKET_STEP = np.zeros(256, dtype=np.int8)
_BRACKET_STEP[list(b"[{")] = 1
_BRACKET_STEP[list(b"]}")] = -1


def check_json_brackets(data: bytes, block: int = 2**20) -> None:
    """Check the nesting depth and the number of arrays and objects of the JSON text
    ``data`` before it is parsed, from its brackets outside strings: parsing builds a
    Python object per array (3 million empty lists in 9 MB would take a gigabyte and
    many seconds), so the count must come first.  Runs at numpy speed.

    Raises
    ------
    HurrayFormatError
        Naming the limit.
    """
    outside = _JSON_STRING.sub(b"", data)
    if outside.count(b"[") + outside.count(b"{") > MAX_CONTAINERS:
        raise HurrayFormatError(
            f"metadata JSON holds more than {MAX_CONTAINERS} arrays and objects"
        )
    depth = 0
    for start in range(0, len(outside), block):
        steps = _BRACKET_STEP[
            np.frombuffer(outside, np.uint8, min(block, len(outside) - start), start)
        ]
        levels = depth + np.cumsum(steps, dtype=np.int64)
        if levels.size and levels.max() > MAX_NESTING:
            raise HurrayFormatError(f"metadata JSON is nested deeper than {MAX_NESTING} levels")
        depth = int(levels[-1]) if levels.size else depth


def attribute_budget(metadata_length: int) -> AttributeBudget:
    """What the numpy attributes of ``metadata_length`` bytes of metadata may decode to."""
    return AttributeBudget(ATTRIBUTE_EXPANSION * metadata_length + ATTRIBUTE_ALLOWANCE)


def load_json(data: bytes) -> Any:
    """Parse metadata JSON strictly: no NaN or infinite numbers, no repeated keys, at
    most :data:`MAX_NESTING` levels.

    Raises
    ------
    HurrayFormatError
        Naming what is wrong.
    """
    check_json_brackets(data)
    try:
        obj = json.loads(
            data.decode("utf-8"),
            object_pairs_hook=_unique_keys,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except RecursionError:
        # not chained: the original's traceback is the parser's recursion, a thousand frames
        raise HurrayFormatError("metadata JSON is nested too deeply") from None
    except ValueError as err:
        raise HurrayFormatError(f"metadata is not valid UTF-8 JSON: {err}") from err
    if _SURROGATE_ESCAPE.search(data):
        # JSON escapes can spell lone surrogates, which are not text: UTF-8 cannot
        # encode them (pairs were joined into one character by the parser)
        try:
            json.dumps(obj, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise HurrayFormatError(
                "metadata holds text that is not valid Unicode (an escaped lone surrogate)"
            ) from None
    return obj


def parse_metadata(data: bytes) -> DatasetMeta:
    """Parse and validate the metadata of a file.

    Raises
    ------
    HurrayFormatError
        Naming what is invalid.
    """
    obj = load_json(data)
    budget = attribute_budget(len(data))
    try:
        if not isinstance(obj, dict) or set(obj) != {"attrs", "variables"}:
            raise HurrayValueError("the metadata needs exactly the keys attrs and variables")
        if not isinstance(obj["variables"], list) or not isinstance(obj["attrs"], dict):
            raise HurrayValueError("attrs must be an object and variables a list")
        return DatasetMeta(
            attrs=decode_attrs(obj["attrs"], budget),
            variables=tuple(VariableMeta.from_json(v, budget) for v in obj["variables"]),
        )
    except (ValueError, TypeError, KeyError, OverflowError, LayoutError) as err:
        raise HurrayFormatError(f"invalid metadata: {err}") from err
