"""The description of a dataset and its variables, as stored in the JSON metadata."""

from __future__ import annotations

import contextlib
import gc
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, cast

import numpy as np

from ..errors import (
    HurrayFormatError,
    HurrayKeyError,
    HurrayTypeError,
    HurrayValueError,
    in_context,
)
from ..layout import (
    LAYOUT_NAMES,
    Layout,
    LayoutError,
    chunk_placement,
    layout_from_config,
    placement_chunks,
    placement_positions,
)
from .attrs import AttributeBudget, attribute_nbytes, check_attrs, decode_attrs, encode_attrs
from .codecs import parse_codecs
from .elements import STRING, element_from_bytes, parse_element_type
from .limits import (
    ATTRIBUTE_ALLOWANCE,
    ATTRIBUTE_EXPANSION,
    MAX_CHUNK_BYTES,
    MAX_CODECS,
    MAX_LENGTH,
    MAX_METADATA_BYTES,
    MAX_METADATA_CONTAINERS,
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


def check_node_name(name: Any, what: str) -> str:
    """``name`` if it can name a variable or a group: :func:`check_name`,
    and no ``/``, which separates the parts of a path.

    Raises
    ------
    TypeError, ValueError
        Naming ``what`` and the problem.
    """
    checked = check_name(name, what)
    if "/" in checked:
        raise HurrayValueError(
            f"{what} {name!r} contains '/', which separates groups in a path; "
            "rename it or put it in a group"
        )
    return checked


def dots_only(name: str) -> bool:
    """Whether ``name`` is made of periods alone (``"."``, ``".."``, ...): in a path,
    the group itself or its parent to Zarr, file systems and URLs."""
    return bool(name) and not name.strip(".")


def check_new_node_name(name: Any, what: str) -> str:
    """``name`` if a writer may give it to a group: :func:`check_node_name`, and not
    :func:`dots_only`, which Zarr refuses as the name of a node and a path reads as
    another group.  (Readers accept such names, which earlier writers wrote: see
    docs/spec/container.md.  A variable may have such a name: it names no group, and
    only the Zarr views of a file, which leave it out, cannot hold it.)

    Raises
    ------
    TypeError, ValueError
        Naming ``what`` and the problem.
    """
    checked = check_node_name(name, what)
    if dots_only(checked):
        raise HurrayValueError(
            f"{what} is {name!r}, periods alone, which a path reads as the group itself "
            "or its parent (Zarr refuses such names too); rename it",
            value=name,
        )
    return checked


_HEX = re.compile(r"(?:[0-9a-f]{2})*")


DIRECT_PLACEMENT = 64
"""Chunks placed along the curve one by one, at most one in this many of the grid's
over a variable's life (counted across calls: a Dask task per chunk asks for one at
a time); past that, the whole placement order is computed once and kept."""

TALLIED_GRID = 2**22
"""The largest grid whose placement tables (8 bytes per chunk each) the tally of
chunks placed one by one may make: reads of a few chunks at a time from a larger
grid (a mostly missing one may have 2**40) never allocate a step per chunk of it;
a single call asking for more than one chunk in :data:`DIRECT_PLACEMENT` still
makes them, as its caller asked for that many."""


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
    fill_value: bytes | None = None
    """Stored bytes of the element that missing chunks hold; None: the zero element
    (the empty string)."""

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
        check_attrs(self.attrs)
        if self.fill_value is not None:
            if not isinstance(self.fill_value, bytes):
                raise HurrayTypeError(f"fill_value must be bytes, got {self.fill_value!r}")
            element_from_bytes(self.fill_value, self.dtype)
        set_field = object.__setattr__
        set_field(self, "dims", tuple(self.dims))
        set_field(self, "shape", shape)
        set_field(self, "chunks", chunks)
        set_field(self, "codecs", parse_codecs(list(self.codecs)))
        set_field(self, "chunk_axes", axes)

    def __getstate__(self) -> dict[str, Any]:
        # the cached chunk order and its tally (see _tables_pay) are worked out again
        # where needed, not shipped to dask tasks
        skip = ("placement", "position", "_placed")
        return {k: v for k, v in self.__dict__.items() if k not in skip}

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """Number of chunks along each axis."""
        return tuple(math.ceil(n / c) for n, c in zip(self.shape, self.chunks, strict=True))

    @property
    def chunk_count(self) -> int:
        """Number of chunks; every chunk is stored, padded to the full chunk shape."""
        return math.prod(self.grid_shape)

    @cached_property
    def placement(self) -> np.ndarray:
        """Row-major flat chunk indices in the order their bytes follow in the file."""
        return chunk_placement(self.grid_shape, self.chunk_order, self.chunk_axes)

    @cached_property
    def position(self) -> np.ndarray:
        """The placement position of each chunk, by row-major flat chunk index (the
        inverse of :attr:`placement`)."""
        inverse = np.empty(self.chunk_count, dtype=np.int64)
        inverse[self.placement] = np.arange(self.chunk_count, dtype=np.int64)
        return inverse

    def positions(self, chunk_ids: np.ndarray) -> np.ndarray:
        """The placement positions of chunks ``chunk_ids`` (row-major flat indices).

        A few chunks (a region read) are placed along the curve directly, in memory
        growing with them alone; many, or a variable whose :attr:`position` is
        already computed, are looked up there (8 bytes per chunk of the grid)."""
        ids = np.asarray(chunk_ids, dtype=np.int64).reshape(-1)
        if "position" in self.__dict__ or self._tables_pay(len(ids)):
            positions: np.ndarray = self.position[ids]
            return positions
        return placement_positions(self.grid_shape, self.chunk_order, self.chunk_axes, ids)

    def chunk_ids(self, positions: np.ndarray) -> np.ndarray:
        """The chunks (row-major flat indices) at placement ``positions``: the inverse
        of :meth:`positions`, with the same choice between the curve (a few) and
        :attr:`placement` (many, or already computed)."""
        places = np.asarray(positions, dtype=np.int64).reshape(-1)
        if "placement" in self.__dict__ or self._tables_pay(len(places)):
            ids: np.ndarray = self.placement[places]
            return ids
        return placement_chunks(self.grid_shape, self.chunk_order, self.chunk_axes, places)

    def _tables_pay(self, count: int) -> bool:
        """Whether placing ``count`` more chunks brings those placed directly so far
        past one in :data:`DIRECT_PLACEMENT` of the grid, so that the tables are
        worth computing (counted for grids of at most :data:`TALLIED_GRID` chunks).
        A race between threads can only lose a few counts."""
        if count * DIRECT_PLACEMENT > self.chunk_count:
            return True
        if self.chunk_count > TALLIED_GRID:
            return False
        placed = int(self.__dict__.get("_placed", 0)) + count
        # a tally beside the cached tables, not a field: it takes no part in equality
        self.__dict__["_placed"] = placed
        return placed * DIRECT_PLACEMENT > self.chunk_count

    @property
    def fill_bytes(self) -> bytes:
        """Stored bytes of the element missing chunks hold."""
        if self.fill_value is not None:
            return self.fill_value
        # zero bytes: the number zero, false, the empty text (for ``string`` too)
        return bytes(0 if self.dtype == STRING else parse_element_type(self.dtype).itemsize)

    @property
    def fill(self) -> Any:
        """The element missing chunks hold: a numpy scalar, or a str."""
        return element_from_bytes(self.fill_bytes, self.dtype)

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
            "fill_value": self.fill_bytes.hex(),
        }

    @classmethod
    def from_json(
        cls, obj: Mapping[str, Any], budget: AttributeBudget | None = None
    ) -> VariableMeta:
        """Parse the JSON object of one variable; its numpy attributes spend
        ``budget``.

        Raises
        ------
        ValueError, TypeError, KeyError, LayoutError
            For missing, extra or invalid fields.
        """
        expected = {"name", "dims", "shape", "dtype", "chunks", "layout", "codecs"}
        expected |= {"chunk_order", "attrs", "fill_value"}
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
        fill = obj["fill_value"]  # hexadecimal text, never null
        if not isinstance(fill, str) or not _HEX.fullmatch(fill):
            raise HurrayValueError(f"fill_value must be lowercase hexadecimal bytes, got {fill!r}")
        check_node_name(obj["name"], "the variable name")
        return cls(
            name=obj["name"],
            dims=obj["dims"],
            shape=obj["shape"],
            dtype=obj["dtype"],
            chunks=obj["chunks"],
            layout=layout_from_config(obj["layout"]),
            codecs=tuple(codecs),
            chunk_order=order["curve"],
            chunk_axes=cast("tuple[int, ...]", order["axes"]),  # checked on construction
            attrs=decode_attrs(obj["attrs"], budget),
            fill_value=bytes.fromhex(fill),
        )


@dataclass(frozen=True)
class DatasetMeta:
    """A dataset, or a group of a tree of them: its attributes, its variables in file
    order and its child groups.  The root group has the name ``""``."""

    attrs: dict[str, Any]
    variables: tuple[VariableMeta, ...]
    groups: tuple[DatasetMeta, ...] = ()
    name: str = ""

    def __post_init__(self) -> None:
        for group in self.groups:
            if not isinstance(group, DatasetMeta):
                raise HurrayTypeError(f"a group must be a DatasetMeta, got {group!r}")
            check_node_name(group.name, "a group name")
        names = [v.name for v in self.variables] + [g.name for g in self.groups]
        if len(set(names)) != len(names):
            where = f" in group {self.name!r}" if self.name else ""
            raise HurrayValueError(f"variable and group names must be unique{where}, got {names}")
        sizes: dict[str, int] = {}
        for var in self.variables:
            for dim, size in zip(var.dims, var.shape, strict=True):
                if sizes.setdefault(dim, size) != size:
                    raise HurrayValueError(
                        f"dimension {dim!r} has length {sizes[dim]} and, in variable "
                        f"{var.name!r}, {size}"
                    )

    def __getstate__(self) -> dict[str, Any]:
        # the lookup tables are rebuilt where needed, not shipped to dask tasks
        return {k: v for k, v in self.__dict__.items() if k != "_paths"}

    @cached_property
    def _paths(self) -> tuple[dict[str, DatasetMeta], dict[str, VariableMeta]]:
        """Every group and every variable of the tree by its path, so that finding one
        does not walk the tree (a file of 32,000 groups looks each of them up)."""
        variables: dict[str, VariableMeta] = {}
        for path, var in self.all_variables():
            variables.setdefault(path, var)
        return dict(self.walk()), variables

    def variable(self, path: str) -> VariableMeta:
        """The variable at ``path`` (``"a/b/name"``, or the name of a variable of this
        group); :class:`KeyError` if there is none."""
        found = self._paths[1].get("/".join(filter(None, path.split("/"))))
        if found is None:
            raise HurrayKeyError(f"no variable {path!r}; the file holds {list(self._paths[1])}")
        return found

    def group(self, path: str) -> DatasetMeta:
        """The group at ``path`` (``"a/b"``; ``""`` or ``"/"`` for this one).

        Raises
        ------
        KeyError
            Naming the path and the groups there are.
        """
        found = self._paths[0].get("/".join(filter(None, path.split("/"))))
        if found is None:
            held = ["/" + p for p in self._paths[0]]
            raise HurrayKeyError(f"no group {path!r}; the file holds the groups {held}")
        return found

    def walk(self, prefix: str = "") -> Iterator[tuple[str, DatasetMeta]]:
        """This group and every group below it, depth first, with their paths
        (``""`` for this one, ``"a"``, ``"a/b"``, ...)."""
        yield prefix, self
        for child in self.groups:
            yield from child.walk(f"{prefix}/{child.name}" if prefix else child.name)

    def all_variables(self) -> list[tuple[str, VariableMeta]]:
        """Every variable of the tree with its path, in variable number order: each
        group's own variables, then its child groups, depth first."""
        return [
            (f"{path}/{var.name}" if path else var.name, var)
            for path, group in self.walk()
            for var in group.variables
        ]

    def to_json(self) -> dict[str, Any]:
        """The JSON object of this group; the root group has no name."""
        obj: dict[str, Any] = {"name": self.name} if self.name else {}
        obj["attrs"] = encode_attrs(self.attrs)
        obj["variables"] = [v.to_json() for v in self.variables]
        obj["groups"] = [g.to_json() for g in self.groups]
        return obj

    def to_bytes(self) -> bytes:
        """The metadata as compact UTF-8 JSON, checked against every
        limit a reader enforces (:mod:`.limits`), so that whatever is written can be read.

        Raises
        ------
        ValueError
            When an attribute holds text that UTF-8 cannot encode (a lone surrogate), or
            the metadata breaks a limit.
        """
        with collector_paused():
            data = _utf8_json(self.to_json())
        if len(data) > MAX_METADATA_BYTES:
            raise HurrayValueError(
                f"the metadata takes {len(data)} bytes, more than the {MAX_METADATA_BYTES} allowed"
            )
        try:  # the check a reader makes, on the bytes it will read, with its default
            check_json_brackets(
                data,
                remedy="readers refuse such a file by default; store long lists of lists "
                "as numpy attributes or as one string",
            )
        except HurrayFormatError as err:
            raise HurrayValueError(str(err)) from None
        every_attrs = [group.attrs for _, group in self.walk()]
        every_attrs += [var.attrs for _, var in self.all_variables()]
        typed = sum(attribute_nbytes(value) for attrs in every_attrs for value in attrs.values())
        budget = attribute_budget(len(data))
        if typed > budget.left:
            raise HurrayValueError(
                f"numpy attributes take {typed} bytes, more than a reader accepts from "
                f"{len(data)} bytes of metadata ({budget.left}); store wide text "
                "attributes as str"
            )
        return data


def _utf8_json(obj: Any) -> bytes:
    """``obj`` as compact UTF-8 JSON (its text is freed on return: metadata of many
    megabytes is held once as text and once as bytes only here).

    Raises
    ------
    ValueError
        When ``obj`` holds text that UTF-8 cannot encode (a lone surrogate).
    """
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError as err:
        bad = text[max(err.start - 40, 0) : err.end + 10]
        raise HurrayValueError(
            f"the metadata holds text that is not valid Unicode (lone surrogate) near {bad!r}"
        ) from err


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


_NUMBER_SHAPES = bytes.maketrans(b"123456789E", b"000000000e")
"""Every digit to ``0`` and ``E`` to ``e``: the shape of the numbers of JSON text."""


def may_overflow(data: bytes) -> bool:
    """Whether the JSON text ``data`` may hold a float literal beyond the largest float
    (about 1.8e308): one with an exponent of three digits or more, or 200 digits in a
    row (fewer digits and a smaller exponent stay below 1e300).  Strings may hold such
    text too, which only costs a slower parse.  Found by :meth:`bytes.find` in the
    text's shape, at memory speed (a regular expression took a second for 17 MB)."""
    shape = data.translate(_NUMBER_SHAPES)
    return any(shape.find(part) >= 0 for part in (b"e000", b"e+000", b"0" * 200))


_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')
"""A JSON string, escapes included."""

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A JSON escape of a UTF-16 surrogate."""

_BRACKET_STEP = np.zeros(256, dtype=np.int8)
_BRACKET_STEP[list(b"[{")] = 1
_BRACKET_STEP[list(b"]}")] = -1


_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))

_NEVER_ESCAPED = b"0123456789 \t\n\r,:.+-aeEls"
"""Bytes of numbers, separators and literals that no JSON escape sequence begins with
(escapes are a backslash and one of ``"\\/bfnrtu``): deleting them leaves every
string and escape whole, so strings can still be found, in far fewer bytes."""


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a block that builds many containers
    and no reference cycles, such as parsing or building JSON.

    Each list or dict created counts towards the collector's next run, and each run
    scans the young containers again: for metadata of many small arrays (130,000
    empty lists) the collector took about three quarters of the parse.  The previous
    state is restored; a thread that allocates meanwhile is collected later.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check_json_brackets(
    data: bytes,
    max_containers: int = MAX_METADATA_CONTAINERS,
    remedy: str = "raise it to read this file",
    block: int = 2**20,
) -> None:
    """Check the nesting depth and the number of arrays and objects of the JSON text
    ``data`` before it is parsed, from its brackets outside strings: parsing builds a
    Python object per array (3 million empty lists in 9 MB would take a gigabyte and
    many seconds), so the count must come first.  Runs at C and numpy speed.

    Raises
    ------
    HurrayFormatError
        Naming the limit; for the count, ``max_containers`` and then ``remedy``.
    """
    # (an invalid escape could hide brackets after it, which the parser never reaches:
    # it stops at that escape)
    lean = _JSON_STRING.sub(b"", data.translate(None, _NEVER_ESCAPED))
    brackets = lean.translate(None, _NOT_BRACKETS)
    containers = brackets.count(b"[") + brackets.count(b"{")
    if containers > max_containers:
        raise HurrayFormatError(
            f"the metadata holds {containers} JSON arrays and objects, more than "
            f"max_metadata_containers={max_containers}; {remedy}"
        )
    depth = 0
    for start in range(0, len(brackets), block):  # blocks: "]" alone are not counted
        steps = _BRACKET_STEP[
            np.frombuffer(brackets, np.uint8, min(block, len(brackets) - start), start)
        ]
        levels = depth + np.cumsum(steps, dtype=np.int64)
        if levels.max() > MAX_NESTING:
            raise HurrayFormatError(f"metadata JSON is nested deeper than {MAX_NESTING} levels")
        depth = int(levels[-1])


def attribute_budget(metadata_length: int) -> AttributeBudget:
    """What the numpy attributes of ``metadata_length`` bytes of metadata may decode to."""
    return AttributeBudget(ATTRIBUTE_EXPANSION * metadata_length + ATTRIBUTE_ALLOWANCE)


def load_json(data: bytes, max_containers: int = MAX_METADATA_CONTAINERS) -> Any:
    """Parse metadata JSON strictly: no NaN or infinite numbers, no repeated keys, at
    most :data:`MAX_NESTING` levels and ``max_containers`` arrays and objects.

    Raises
    ------
    HurrayFormatError
        Naming what is wrong.
    """
    check_json_brackets(data, max_containers)
    # floats are parsed by the parser's own C code unless one might not be finite:
    # a call per float took most of the parse of a numpy attribute of millions
    finite = _finite_float if may_overflow(data) else float
    try:
        obj = json.loads(
            data.decode("utf-8"),
            object_pairs_hook=_unique_keys,
            parse_constant=_reject_constant,
            parse_float=finite,
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


def _group_from_json(obj: Any, root: bool, budget: AttributeBudget) -> DatasetMeta:
    """The group described by JSON object ``obj`` (the root group when ``root``), its
    numpy attributes spending ``budget``."""
    keys = {"attrs", "variables", "groups"} | (set() if root else {"name"})
    if not isinstance(obj, dict) or set(obj) != keys:
        what = "the metadata" if root else "a group"
        raise HurrayValueError(f"{what} needs exactly the keys {', '.join(sorted(keys))}")
    groups = obj["groups"]
    if not isinstance(obj["variables"], list) or not isinstance(obj["attrs"], dict):
        raise HurrayValueError("attrs must be an object and variables a list")
    if not isinstance(groups, list):
        raise HurrayValueError(f"groups must be a list, got {groups!r}")
    return DatasetMeta(
        attrs=decode_attrs(obj["attrs"], budget),
        variables=tuple(VariableMeta.from_json(v, budget) for v in obj["variables"]),
        groups=tuple(_group_from_json(g, False, budget) for g in groups),
        name="" if root else check_node_name(obj["name"], "a group name"),
    )


def parse_metadata(data: bytes, max_containers: int = MAX_METADATA_CONTAINERS) -> DatasetMeta:
    """Parse and validate the metadata of a file, which may hold at most
    ``max_containers`` JSON arrays and objects.

    Raises
    ------
    HurrayFormatError
        Naming what is invalid.
    """
    budget = attribute_budget(len(data))
    with collector_paused():
        obj = load_json(data, max_containers)
        try:
            return _group_from_json(obj, True, budget)
        except (ValueError, TypeError, KeyError, OverflowError, LayoutError) as err:
            raise HurrayFormatError(f"invalid metadata: {err}") from err
