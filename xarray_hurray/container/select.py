"""Outer (orthogonal) selections mapped onto a chunk grid."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Index = slice | np.ndarray
"""One axis of an index into a chunk or the result."""

Key = int | np.integer | slice | np.ndarray | Sequence[int]
"""The selection along one axis: an integer, a slice or integer positions."""


@dataclass(frozen=True)
class AxisSelection:
    """The part of one axis a selection takes, grouped by chunk.

    Attributes
    ----------
    chunk_ids
        Chunks of this axis the selection touches, ascending.
    out_positions, in_positions
        For each touched chunk: where its selected elements go in the result and
        where they are inside the chunk, as a slice where they are a run.
    size
        Length of the result along this axis.
    keep
        False for an integer key: the axis is dropped from the result.
    """

    chunk_ids: np.ndarray
    out_positions: tuple[Index, ...]
    in_positions: tuple[Index, ...]
    size: int
    keep: bool


def select_axis(key: Key, length: int, chunk: int) -> AxisSelection:
    """Map ``key`` along an axis of ``length`` elements cut in chunks of ``chunk``.

    Raises
    ------
    IndexError
        For positions outside the axis, and for keys that are not an integer, a slice
        or a 1-D array of integers (booleans, floats, arrays of more dimensions).
    """
    if isinstance(key, bool | np.bool_):
        raise IndexError(f"a boolean {key!r} is not a position; use an integer or a slice")
    keep = not isinstance(key, int | np.integer)
    if isinstance(key, slice):
        start, stop, step = key.indices(length)
        if step == 1:
            return _contiguous_axis(start, max(start, stop), chunk)
        positions = np.arange(start, stop, step, dtype=np.int64)
    else:
        array = np.asarray(key)
        # an int past int64 becomes an object array: out of bounds for any real axis
        if array.dtype == object and isinstance(key, int):
            raise IndexError(f"index {key} out of bounds for an axis of length {length}")
        if array.ndim > 1 or (array.size and array.dtype.kind not in "iu"):
            raise IndexError(
                f"an axis takes an integer, a slice or a 1-D array of integer positions, "
                f"got {key!r}; convert boolean masks with numpy.flatnonzero"
            )
        if array.size and not (-length <= array.min() and array.max() < length):
            raise IndexError(f"index {key!r} out of bounds for an axis of length {length}")
        positions = array.astype(np.int64).reshape(-1)
        positions = np.where(positions < 0, positions + length, positions)
    ids, inverse = np.unique(positions // chunk, return_inverse=True)
    # result positions grouped by chunk; stable, so each group keeps the key's order
    # (a repeated or descending key is served as given)
    by_chunk = np.argsort(inverse, kind="stable")
    counts = np.bincount(inverse, minlength=len(ids))
    groups = tuple(np.split(by_chunk, np.cumsum(counts)[:-1])) if len(ids) else ()
    in_positions = tuple(
        _compact(positions[out] - cid * chunk)
        for out, cid in zip(groups, ids.tolist(), strict=True)
    )
    out_positions = tuple(_compact(out) for out in groups)
    return AxisSelection(ids, out_positions, in_positions, len(positions), keep)


def _contiguous_axis(start: int, stop: int, chunk: int) -> AxisSelection:
    """The selection of the run ``[start, stop)``: a slice per touched chunk (none
    when the run is empty, wherever it starts)."""
    ids = np.arange(start // chunk, -(-stop // chunk) if stop > start else 0, dtype=np.int64)
    outs, ins = [], []
    for cid in ids.tolist():
        lo, hi = max(start, cid * chunk), min(stop, (cid + 1) * chunk)
        outs.append(slice(lo - start, hi - start))
        ins.append(slice(lo - cid * chunk, hi - cid * chunk))
    return AxisSelection(ids, tuple(outs), tuple(ins), stop - start, True)


@dataclass(frozen=True)
class OuterSelection:
    """An outer selection of a chunked array: one :class:`AxisSelection` per axis."""

    axes: tuple[AxisSelection, ...]
    grid_shape: tuple[int, ...]

    @classmethod
    def build(
        cls, key: Sequence[Key], shape: Sequence[int], chunks: Sequence[int]
    ) -> OuterSelection:
        """Select ``key`` (one entry per axis) from an array of ``shape`` and ``chunks``."""
        if len(key) != len(shape):
            raise IndexError(f"key {key!r} does not have one entry per axis of {tuple(shape)}")
        axes = tuple(select_axis(k, n, c) for k, n, c in zip(key, shape, chunks, strict=True))
        grid = tuple(-(-n // c) for n, c in zip(shape, chunks, strict=True))
        return cls(axes, grid)

    @property
    def out_shape(self) -> tuple[int, ...]:
        """Shape of the result before integer-keyed axes are dropped."""
        return tuple(axis.size for axis in self.axes)

    @property
    def result_shape(self) -> tuple[int, ...]:
        """Shape of the result."""
        return tuple(axis.size for axis in self.axes if axis.keep)

    def chunk_ids(self) -> np.ndarray:
        """Row-major flat indices of the touched chunks."""
        ids = np.zeros(1, dtype=np.int64)
        # the outer product of the axes' ids, row-major: each axis multiplies in turn
        for axis, count in zip(self.axes, self.grid_shape, strict=True):
            ids = (ids[:, None] * count + axis.chunk_ids[None, :]).reshape(-1)
        return ids

    @property
    def chunk_counts(self) -> tuple[int, ...]:
        """Touched chunks along each axis: a chunk's row in :meth:`chunk_ids` is its
        row-major index over them."""
        return tuple(len(axis.chunk_ids) for axis in self.axes)

    def rows_of(self, chunk_ids: np.ndarray) -> np.ndarray:
        """The row in :meth:`chunk_ids` of each of ``chunk_ids`` (row-major flat indices
        of the grid), -1 for a chunk the selection does not touch; without listing the
        touched chunks."""
        ids = np.asarray(chunk_ids, dtype=np.int64).reshape(-1)
        if not self.axes:
            return np.zeros(len(ids), dtype=np.int64)
        coords = np.unravel_index(ids, self.grid_shape)
        inside = np.ones(len(ids), dtype=bool)
        ks = []
        for axis, coord in zip(self.axes, coords, strict=True):
            if not len(axis.chunk_ids):
                return np.full(len(ids), -1, dtype=np.int64)
            k = np.minimum(np.searchsorted(axis.chunk_ids, coord), len(axis.chunk_ids) - 1)
            inside &= axis.chunk_ids[k] == coord
            ks.append(np.where(inside, k, 0))
        rows = np.ravel_multi_index(tuple(ks), self.chunk_counts)
        found: np.ndarray = np.where(inside, rows, -1)
        return found

    def piece(self, row: int) -> tuple[tuple[Index, ...], tuple[Index, ...]]:
        """For the chunk at ``row`` of :meth:`chunk_ids`: ``(out_index, in_index)``
        placing its selected elements into the result (slices where both are runs)."""
        out, inside = [], []
        for axis, count in zip(self.axes[::-1], self.chunk_counts[::-1], strict=True):
            row, k = divmod(row, count)
            out.append(axis.out_positions[k])
            inside.append(axis.in_positions[k])
        return _outer_index(out[::-1]), _outer_index(inside[::-1])


def _compact(positions: np.ndarray) -> Index:
    """``positions`` as a slice when they are a non-empty run, else unchanged."""
    # the span test is cheap and rules out most non-runs before the full check
    if positions.size and positions[-1] - positions[0] == positions.size - 1:
        if positions.size == 1 or np.all(np.diff(positions) == 1):
            return slice(int(positions[0]), int(positions[-1]) + 1)
    return positions


def _outer_index(positions: list[Index]) -> tuple[Index, ...]:
    # slices keep the assignment a view; one array on any axis needs np.ix_'s outer
    # product on all of them (numpy would otherwise pair arrays up pointwise)
    if all(isinstance(p, slice) for p in positions):
        return tuple(positions)
    return np.ix_(*(np.arange(p.start, p.stop) if isinstance(p, slice) else p for p in positions))
