"""Layout descriptors: how the elements of one chunk are ordered in its buffer.

Three layouts, each a frozen dataclass; the specification registers each under a
one-byte tag (``docs/spec/data-model.md``), which files do not store:

========  ==========  =====================================================
tag       name        buffer order
========  ==========  =====================================================
``0x00``  row-major   C order, the last axis fastest
``0x30``  morton      Morton code with per-dimension ``morton_bits`` (ADR-005)
``0x40``  hilbert     Skilling's Hilbert index (the format's Hilbert layout)
========  ==========  =====================================================
"""

from __future__ import annotations

import math
import operator
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from ..errors import LayoutError
from . import tiles
from .bits import interleaved_bitmap
from .cache import ByteLRU
from .hilbert import check_curve, hilbert_encode
from .morton import morton_encode, parse_morton_bits
from .ranges import curve_box_runs, parse_box, row_major_box_runs

PERMUTATION_CACHE = ByteLRU(max_bytes=256 * 2**20)
"""Cached element permutations of all layouts, bounded to 256 MiB."""


def parse_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """Return ``shape`` as a tuple of non-negative ints or raise a :class:`LayoutError`."""
    try:
        # operator.index, not int: a side of 2.5 is refused, not cut to 2
        parsed = tuple(operator.index(n) for n in shape)
    except (TypeError, ValueError) as err:
        raise LayoutError(
            f"shape must be a sequence of integers, got {shape!r}", value=shape
        ) from err
    if any(n < 0 for n in parsed):
        raise LayoutError(f"shape must be non-negative, got {parsed}", value=shape)
    return parsed


GATHER_BLOCK = 1 << 18
"""Elements gathered per ``numpy.take`` call: keeps the index cast in cache."""


def gather(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[index]`` for a valid ``index``, block by block.

    ``numpy.take`` casts an int32 index to intp before gathering; doing it a block at
    a time keeps that cast in cache (about 1.4x faster on 16 MiB chunks).
    """
    out = np.empty(index.shape, dtype=values.dtype)
    for start in range(0, index.size, GATHER_BLOCK):
        stop = start + GATHER_BLOCK
        # "clip" skips numpy's bounds check (and its buffered copy for out=); the
        # index is a layout's own permutation, never out of range
        np.take(values, index[start:stop], out=out[start:stop], mode="clip")
    return out


def _index_dtype(size: int) -> np.dtype:
    return np.dtype(np.int32) if size < 2**31 else np.dtype(np.int64)


class Layout(ABC):
    """The order of a chunk's elements in its buffer."""

    name: ClassVar[str]

    @abstractmethod
    def validate(self, shape: Sequence[int]) -> tuple[int, ...]:
        """Check that this layout can hold a chunk of ``shape``; return the parsed shape.

        Raises
        ------
        LayoutError
            Naming the violated constraint.
        """

    def buffer_size(self, shape: Sequence[int]) -> int:
        """Number of elements in the buffer of a chunk of ``shape``, padding included."""
        return self._size(self.validate(shape))

    @abstractmethod
    def _size(self, shape: tuple[int, ...]) -> int:
        """:meth:`buffer_size` of a validated shape."""

    @abstractmethod
    def _keys(self, shape: tuple[int, ...]) -> np.ndarray:
        """Buffer position of every element of a chunk, in row-major element order."""

    @abstractmethod
    def _box_runs(self, lo: np.ndarray, hi: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """Merged runs of buffer positions of a validated box."""

    @abstractmethod
    def to_config(self) -> dict[str, Any]:
        """JSON-serialisable description; :func:`layout_from_config` reverses it."""

    def is_row_major(self, shape: Sequence[int]) -> bool:
        """Whether a chunk of ``shape`` keeps its elements in row-major order, with no
        padding: its buffer is the chunk itself.  Told from the layout's rule, in time
        independent of the chunk's size (never by building its permutation)."""
        return self._is_row_major(self.validate(shape))

    @abstractmethod
    def _is_row_major(self, shape: tuple[int, ...]) -> bool:
        """:meth:`is_row_major` of a validated shape."""

    def positions(self, shape: Sequence[int]) -> np.ndarray:
        """Buffer position of each element of a chunk of ``shape``, in row-major order.

        The result is cached (a least-recently-used cache bounded by bytes) and read-only.
        """
        return self._positions(self.validate(shape))

    def _positions(self, shape: tuple[int, ...]) -> np.ndarray:
        return PERMUTATION_CACHE.get(
            (self, shape, "positions"),
            lambda: self._keys(shape).astype(_index_dtype(self._size(shape))),
        )

    def sources(self, shape: Sequence[int]) -> np.ndarray:
        """Row-major element index held at each buffer position (``prod(shape)`` for padding)."""
        return self._sources(self.validate(shape))

    def _sources(self, shape: tuple[int, ...]) -> np.ndarray:
        def build() -> np.ndarray:
            size = self._size(shape)
            # padding positions hold prod(shape), one past the last element: encode
            # appends the fill value there, so one gather fills data and padding
            source = np.full(size, math.prod(shape), dtype=_index_dtype(size + 1))
            source[self._positions(shape)] = np.arange(math.prod(shape), dtype=source.dtype)
            return source

        return PERMUTATION_CACHE.get((self, shape, "sources"), build)

    def _tiles(self, shape: tuple[int, ...], width: int) -> tiles.Tiles | None:
        """The permutation as tiles for the compiled kernels (:mod:`.tiles`), for
        elements of ``width`` bytes; None when they do not apply: no numba, kernels
        not loaded for a small chunk (:func:`.tiles.wanted`; not cached, a later load
        serves it), padding, or runs that are not boxes in few patterns."""
        if not tiles.wanted(math.prod(shape)) or self._size(shape) != math.prod(shape):
            return None

        def build() -> tiles.Tiles:
            return tiles.tiles_for(self._sources(shape), shape, width) or tiles.NO_TILES

        # by width, as bytes may tile otherwise (tiles.tile_sizes, too slow to ask
        # on every call: a microsecond)
        found = PERMUTATION_CACHE.get((self, shape, "tiles", width), build)
        return None if found is tiles.NO_TILES else found

    def encode(self, array: np.ndarray, fill_value: object = 0) -> np.ndarray:
        """The 1-D buffer of ``array`` in this layout; padding holds ``fill_value``."""
        array = np.asarray(array)
        shape = self.validate(array.shape)
        flat = array.reshape(-1)
        if (tiled := self._tiles(shape, array.dtype.itemsize)) is not None:
            out = tiles.gather(flat, tiled)
            if out is not None:
                return out
        sources = self._sources(shape)
        if self._size(shape) != flat.size:
            padded = np.empty(flat.size + 1, dtype=array.dtype)
            padded[:-1] = flat
            padded[-1] = fill_value
            flat = padded
        return gather(flat, sources)

    def decode(self, buffer: np.ndarray, shape: Sequence[int]) -> np.ndarray:
        """The array of ``shape`` held by ``buffer``; padding is never read."""
        shape = self.validate(shape)
        buffer = self._check_buffer(buffer, shape)
        if (tiled := self._tiles(shape, buffer.dtype.itemsize)) is not None:
            out = tiles.scatter(buffer, tiled)
            if out is not None:
                return out.reshape(shape)
        return gather(buffer, self._positions(shape)).reshape(shape)

    def _check_buffer(self, buffer: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """``buffer`` flattened, or a :class:`LayoutError` if its size is wrong."""
        buffer = np.asarray(buffer).reshape(-1)
        if buffer.size != self._size(shape):
            raise LayoutError(
                f"{self.name} buffer for shape {shape} must hold "
                f"{self._size(shape)} elements, got {buffer.size}"
            )
        return buffer

    def ranges(
        self, lo: Sequence[int], hi: Sequence[int], shape: Sequence[int] | None = None
    ) -> np.ndarray:
        """Sorted, merged ``[start, stop)`` runs of buffer positions covering ``lo <= x < hi``.

        Parameters
        ----------
        lo, hi
            Corners of the box; ``hi`` is exclusive.
        shape
            The chunk shape.  Required for the row-major layout; the curve layouts
            know their extent and check ``shape`` against it when given.

        Returns
        -------
        numpy.ndarray
            int64 array of shape ``(n, 2)``; empty for an empty box.
        """
        shape = self.validate(self._default_shape() if shape is None else shape)
        lo_a, hi_a = parse_box(lo, hi, shape)
        return self._box_runs(lo_a, hi_a, shape)

    def _default_shape(self) -> tuple[int, ...]:
        raise LayoutError(f"{self.name} layout needs the chunk shape to compute ranges")


@dataclass(frozen=True)
class RowMajorLayout(Layout):
    """C order: the last axis varies fastest.  Valid for every shape, rank 0 included."""

    name: ClassVar[str] = "row-major"

    def validate(self, shape: Sequence[int]) -> tuple[int, ...]:
        return parse_shape(shape)

    def _size(self, shape: tuple[int, ...]) -> int:
        return math.prod(shape)

    def _keys(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.arange(math.prod(shape))

    def _is_row_major(self, shape: tuple[int, ...]) -> bool:
        return True

    def encode(self, array: np.ndarray, fill_value: object = 0) -> np.ndarray:
        return np.ascontiguousarray(array).reshape(-1)

    def decode(self, buffer: np.ndarray, shape: Sequence[int]) -> np.ndarray:
        shape = self.validate(shape)
        return self._check_buffer(buffer, shape).reshape(shape)

    def _box_runs(self, lo: np.ndarray, hi: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        return row_major_box_runs(lo, hi, shape)

    def to_config(self) -> dict[str, Any]:
        return {"name": self.name}


@dataclass(frozen=True)
class MortonLayout(Layout):
    """Morton (Z-order) with ``morton_bits[k]`` bits for dimension ``k``.

    Dimensions that are not powers of two are padded (ADR-005): the buffer holds
    ``2**sum(morton_bits)`` elements and padding is never read as data.
    """

    morton_bits: tuple[int, ...]
    name: ClassVar[str] = "morton"

    def __post_init__(self) -> None:
        object.__setattr__(self, "morton_bits", parse_morton_bits(self.morton_bits))

    @classmethod
    def for_shape(cls, shape: Sequence[int]) -> MortonLayout:
        """The layout with the fewest bits that holds ``shape`` (what writers should use)."""
        # (n - 1).bit_length() is the least b with 2**b >= n; sides 0 and 1 take 0 bits
        return cls(tuple(max(int(n) - 1, 0).bit_length() for n in parse_shape(shape)))

    def validate(self, shape: Sequence[int]) -> tuple[int, ...]:
        shape = parse_shape(shape)
        if len(shape) != len(self.morton_bits):
            raise LayoutError(
                f"morton rank: shape {shape} has rank {len(shape)} but morton_bits "
                f"{self.morton_bits} has {len(self.morton_bits)} entries"
            )
        for k, (n, bits) in enumerate(zip(shape, self.morton_bits, strict=True)):
            if n > 1 << bits:
                raise LayoutError(
                    f"morton rule: shape[{k}] = {n} exceeds 2**morton_bits[{k}] = {1 << bits}"
                )
        return shape

    def _size(self, shape: tuple[int, ...]) -> int:
        return 1 << sum(self.morton_bits)

    def _keys(self, shape: tuple[int, ...]) -> np.ndarray:
        coords = np.indices(shape, dtype=np.int64).reshape(len(shape), math.prod(shape)).T
        return morton_encode(coords, self.morton_bits)

    def _is_row_major(self, shape: tuple[int, ...]) -> bool:
        # The key of a point is the sum of its coordinate bits moved to the places
        # the bit map gives them, so the keys are the row-major indices exactly when
        # each coordinate bit goes where row-major puts it: bit b of axis d at b plus
        # the bits of the axes after d (and no side is padded).
        if any(n != 1 << b for n, b in zip(shape, self.morton_bits, strict=True)):
            return False
        bitmap = interleaved_bitmap(self.morton_bits)
        return all(
            list(places) == list(range(sum(self.morton_bits[d + 1 :]), sum(self.morton_bits[d:])))
            for d, places in enumerate(bitmap)
        )

    def _box_runs(self, lo: np.ndarray, hi: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        return curve_box_runs(lo, hi, self.morton_bits, self._corner_key)

    def _corner_key(self, corners: np.ndarray, level: int) -> np.ndarray:
        return morton_encode(corners, self.morton_bits)

    def _default_shape(self) -> tuple[int, ...]:
        return tuple(1 << b for b in self.morton_bits)

    def to_config(self) -> dict[str, Any]:
        return {"name": self.name, "morton_bits": list(self.morton_bits)}


@dataclass(frozen=True)
class HilbertLayout(Layout):
    """Skilling's Hilbert curve over a cube of side ``2**order`` in ``rank`` dimensions."""

    rank: int
    order: int
    name: ClassVar[str] = "hilbert"

    def __post_init__(self) -> None:
        if any(
            not isinstance(v, int | np.integer) or isinstance(v, bool)  # JSON true is no integer
            for v in (self.rank, self.order)
        ):
            raise LayoutError(
                f"hilbert_rank and hilbert_order must be integers, got {self.rank!r}, "
                f"{self.order!r}"
            )
        if self.rank < 2:
            raise LayoutError(f"hilbert constraint 3: hilbert_rank must be >= 2, got {self.rank}")
        if self.order <= 0:
            raise LayoutError(f"hilbert constraint 4: hilbert_order must be > 0, got {self.order}")
        check_curve(self.rank, self.order)
        object.__setattr__(self, "rank", int(self.rank))
        object.__setattr__(self, "order", int(self.order))

    @classmethod
    def for_shape(cls, shape: Sequence[int]) -> HilbertLayout:
        """The Hilbert layout of a chunk ``shape``, or a :class:`LayoutError` saying
        what shape would fit (and naming the rule broken) if none fits."""
        shape = parse_shape(shape)
        order = max(shape[0] - 1, 0).bit_length() if shape else 0
        try:
            layout = cls(len(shape), order)
            layout.validate(shape)
        except LayoutError as err:
            example = (64,) * max(len(shape), 2)
            # the rule these chunks break, in the terms of the chunks (the constraint
            # of the descriptor is chained)
            if len(shape) < 2:
                broken = f"they have {len(shape)} dimension{'s' * (len(shape) != 1)}"
            elif len(set(shape)) > 1:
                broken = f"their sides {', '.join(map(str, shape))} differ"
            elif shape[0] < 2:
                broken = "their sides are 1"
            else:
                broken = f"{shape[0]} is not a power of two"
            rule = str(err).split(":")[0]  # "hilbert constraint N", as the spec numbers them
            raise LayoutError(
                f"a hilbert layout cannot hold chunks {shape}: it needs two or more "
                f"dimensions whose sides are all the same power of two, at least 2, such as "
                f"{example}, and {broken}; choose such chunks, or the layout 'auto' (Hilbert "
                f"where it fits, Morton elsewhere) or 'morton' (docs/spec/layouts.md, {rule})",
                value=shape,
            ) from err
        return layout

    def validate(self, shape: Sequence[int]) -> tuple[int, ...]:
        shape = parse_shape(shape)
        if len(shape) != self.rank:
            raise LayoutError(
                f"hilbert constraint 2: hilbert_rank = {self.rank} must equal the tensor "
                f"rank {len(shape)}"
            )
        side = 1 << self.order
        for k, n in enumerate(shape):
            if n != side:
                raise LayoutError(
                    f"hilbert constraint 1: shape[{k}] = {n} is not 2**hilbert_order = {side}"
                )
        return shape

    def _size(self, shape: tuple[int, ...]) -> int:
        return 1 << (self.rank * self.order)

    def _keys(self, shape: tuple[int, ...]) -> np.ndarray:
        coords = np.indices(shape, dtype=np.int64).reshape(len(shape), math.prod(shape)).T
        return hilbert_encode(coords, self.order)

    def _is_row_major(self, shape: tuple[int, ...]) -> bool:
        # never: the curve's consecutive positions are neighbours (rank >= 2, sides
        # >= 2), and row-major's last element of a row and first of the next are not
        return False

    def _box_runs(self, lo: np.ndarray, hi: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        return curve_box_runs(lo, hi, (self.order,) * self.rank, self._corner_key)

    def _corner_key(self, corners: np.ndarray, level: int) -> np.ndarray:
        # The corner's key with its low rank * level bits cleared is the first key of
        # the aligned sub-cube of side 2**level that holds it.  A shift by 64 would
        # overflow uint64: then the sub-cube is the whole curve, starting at key 0.
        low = np.uint64((1 << (self.rank * level)) - 1) if self.rank * level < 64 else None
        keys = hilbert_encode(corners, self.order)
        return keys & ~low if low is not None else np.zeros_like(keys)

    def _default_shape(self) -> tuple[int, ...]:
        return (1 << self.order,) * self.rank

    def to_config(self) -> dict[str, Any]:
        return {"name": self.name, "hilbert_rank": self.rank, "hilbert_order": self.order}


LAYOUT_NAMES = ("row-major", "morton", "hilbert")


def layout_from_config(config: Mapping[str, Any]) -> Layout:
    """Rebuild a layout from :meth:`Layout.to_config`, validating every field.

    Raises
    ------
    LayoutError
        For an unknown name, missing or extra fields, or a descriptor that breaks a rule.
    """
    if not isinstance(config, Mapping) or "name" not in config:
        raise LayoutError(f"a layout descriptor must be a mapping with a 'name', got {config!r}")
    fields = {
        "row-major": set(),
        "morton": {"morton_bits"},
        "hilbert": {"hilbert_rank", "hilbert_order"},
    }
    name = config["name"]
    if name not in fields:
        raise LayoutError(
            f"unknown layout {name!r}; expected one of {', '.join(LAYOUT_NAMES)}", value=name
        )
    given = set(config) - {"name"}
    if given != fields[name]:
        raise LayoutError(
            f"{name} layout descriptor needs fields {sorted(fields[name])}, got {sorted(given)}"
        )
    if name == "row-major":
        return RowMajorLayout()
    if name == "morton":
        bits = config["morton_bits"]
        if not isinstance(bits, list | tuple):
            raise LayoutError(f"morton_bits must be a list of integers, got {bits!r}")
        return MortonLayout(tuple(bits))
    return HilbertLayout(config["hilbert_rank"], config["hilbert_order"])


def default_layout(read_in_part: bool) -> str:
    """The element layout a writer uses when none is asked for.

    A curve inside a chunk only pays where a read takes part of the chunk's bytes:
    uncompressed chunks that the Zarr codec reads in part (``read_in_part``), which get
    ``"auto"``.  Everywhere else a chunk is decoded whole (behind any compressor, and
    in every chunk of a Hurray file, whose reader never reads inside a chunk), and
    ``"row-major"`` stores it as it is: nothing to permute, no compiled code to load,
    and the plain ``bytes`` layout that every Zarr reader decodes.
    """
    return "auto" if read_in_part else "row-major"


def layout_for_shape(kind: str, shape: Sequence[int]) -> Layout:
    """The layout named ``kind`` fitted to a chunk ``shape``.

    ``kind`` is ``"hilbert"``, ``"morton"``, ``"row-major"`` or ``"auto"`` (Hilbert
    where the shape is a cube of power-of-two side and rank >= 2, else Morton, and
    row-major for rank 0).  Fitted layouts are remembered: codecs call this per chunk.
    """
    return _fitted_layout(kind, parse_shape(shape))


@lru_cache(maxsize=1024)
def _fitted_layout(kind: str, shape: tuple[int, ...]) -> Layout:
    if kind == "auto":
        if not shape:
            return RowMajorLayout()
        try:
            return HilbertLayout.for_shape(shape)
        except LayoutError:
            kind = "morton"
    if kind == "hilbert":
        return HilbertLayout.for_shape(shape)
    if kind == "morton":
        return MortonLayout.for_shape(shape)
    if kind == "row-major":
        return RowMajorLayout()
    raise LayoutError(
        f"unknown layout {kind!r}; expected 'auto' or one of {', '.join(LAYOUT_NAMES)}",
        value=kind,
    )
