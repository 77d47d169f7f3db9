"""Tiled chunk permutation, compiled with numba when it is installed (the ``fast`` extra).

A curve permutation is a gather: ``buffer[k] = flat[sources[k]]``.  Both curves visit
every aligned sub-cube of side 2**t as one run of the buffer, and inside such a tile
the elements follow one of a few patterns (one for Morton, one per orientation for
Hilbert).  So the permutation is stored as *tiles*: for each run of :data:`TILE`
buffer positions, the smallest source index (its base) and the number of its pattern,
plus a table of the patterns' offsets from the base.  A compiled loop then reads
1/64 of the index a plain gather reads, and the in-tile offsets stay in the first
level cache.  Decoding scatters through the same tiles.  Where every aligned pair
(or group of 4, 8) of buffer positions holds consecutive elements in both orders, as
Morton's lowest bit gives, the tiles permute such groups, each moved as one wider
unsigned integer (:func:`run_unit`).  The loops themselves are in
:mod:`.tile_kernels`, imported on first use.

Without numba, or for layouts and shapes whose runs do not fall into few patterns
(padded Morton chunks, chunks smaller than a tile), :func:`tiles_for` returns None and
the layouts keep the numpy gather: both paths give the same bytes (tested against each
other).

Importing numba and loading the compiled kernels from its cache takes 0.5 to 1.5 s
of a process's first use, while the compiled loop saves well under a millisecond
per small chunk: a remote read of a few 64 KiB chunks would wait twenty round trips
for it.  So a process loads the kernels only for a permutation of at least
:data:`MIN_ELEMENTS` elements (:func:`wanted`); once loaded, they serve every size.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

TILE = 64
"""Buffer positions per tile: an 8 x 8 square or a 4 x 4 x 4 cube of a curve."""

MAX_PATTERNS = 256
"""More patterns than this and the tiles are not worth it: keep the plain gather."""

Kernel = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], None]
"""A compiled loop of :mod:`.tile_kernels`: values, bases, pattern ids, patterns, out."""

MIN_ELEMENTS = 1 << 17
"""Elements of the smallest permutation that loads the kernels (1 MiB of 8-byte
elements, 128 KiB of bytes)."""

_kernels: tuple[Kernel, Kernel] | None = None
_looked = False


def _load() -> tuple[Kernel, Kernel] | None:
    """The gather and scatter kernels, imported on first use; None without numba."""
    global _kernels, _looked
    if not _looked:
        try:
            from .tile_kernels import gather_tiles, scatter_tiles
        except ImportError:
            _kernels = None
        else:
            _kernels = (gather_tiles, scatter_tiles)
        _looked = True
    return _kernels


def available() -> bool:
    """Whether the compiled kernels can run (numba is installed); loads them."""
    return _load() is not None


def wanted(elements: int) -> bool:
    """Whether a permutation of ``elements`` elements goes through the kernels: they
    are loaded already, or ``elements`` is worth loading them for and they load."""
    if _looked:
        return _kernels is not None
    return elements >= MIN_ELEMENTS and available()


def run_unit(sources: np.ndarray) -> int:
    """The most elements (8, 4, 2 or 1) that every aligned group of buffer positions
    takes from consecutive sources in ascending order, starting at a multiple of it:
    such groups move as one wider unsigned integer (Morton curves whose last bit
    is the last axis give 2)."""
    for unit in (8, 4, 2):
        if sources.size % unit:
            continue
        groups = sources.reshape(-1, unit)
        if np.all(groups[:, 0] % unit == 0) and np.all(
            groups - groups[:, :1] == np.arange(unit, dtype=groups.dtype)
        ):
            return unit
    return 1


def tiles_for(sources: np.ndarray, unit: int = 1) -> np.ndarray | None:
    """The tiles of a permutation without padding, packed in one array; or None.

    ``sources`` is the row-major element index held at each buffer position, a
    permutation of ``range(len(sources))``.  With ``unit`` > 1 (at most
    :func:`run_unit`), groups of ``unit`` elements move together and the tiles
    permute groups (narrower ones when the groups do not fill whole tiles).  The
    packed array holds ``unit``, the pattern count ``P``, the ``P x TILE`` pattern
    offsets, the base of each tile and the pattern number of
    each tile (:func:`unpack_tiles` splits it).  None when the kernels are not
    available or the permutation does not tile into few patterns.
    """
    while unit > 1 and (sources.size // unit) % TILE:
        unit //= 2  # a narrower group still holds consecutive elements
    groups = sources[::unit] // unit if unit > 1 else sources
    if not available() or groups.size == 0 or groups.size % TILE:
        return None
    runs = groups.reshape(-1, TILE).astype(np.intp)
    bases = runs.min(axis=1)
    offsets = np.ascontiguousarray(runs - bases[:, None])
    # one pattern per distinct row of offsets: rows compared as opaque bytes
    rows = offsets.view(np.dtype((np.void, offsets.itemsize * TILE))).reshape(-1)
    _, first, ids = np.unique(rows, return_index=True, return_inverse=True)
    if len(first) > MAX_PATTERNS:
        return None
    patterns = offsets[first]
    return np.concatenate(([unit, len(first)], patterns.reshape(-1), bases, ids.reshape(-1)))


def unpack_tiles(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(bases, pattern ids, patterns)`` of an array made by :func:`tiles_for`."""
    count = int(packed[1])
    patterns = packed[2 : 2 + count * TILE].reshape(count, TILE)
    rest = packed[2 + count * TILE :]
    tiles = rest.size // 2
    return rest[:tiles], rest[tiles:], patterns


def _as_units(array: np.ndarray, unit: int) -> np.ndarray | None:
    """``array`` viewed as unsigned integers of ``unit`` elements each, or None when
    the kernels cannot move them (objects, or a width other than 1, 2, 4, 8 bytes)."""
    width = array.dtype.itemsize * unit
    if array.dtype.hasobject or width not in (1, 2, 4, 8):
        return None
    return array.view(f"u{width}")


def gather(values: np.ndarray, packed: np.ndarray) -> np.ndarray | None:
    """``values[sources]`` for the permutation tiled in ``packed``; None when the
    element type is not one the kernels move (the caller gathers with numpy)."""
    return _permute(0, values, packed)


def scatter(buffer: np.ndarray, packed: np.ndarray) -> np.ndarray | None:
    """The elements of ``buffer`` put back at their sources (the inverse of
    :func:`gather`); None when the element type is not one the kernels move."""
    return _permute(1, buffer, packed)


def _permute(kernel: int, array: np.ndarray, packed: np.ndarray) -> np.ndarray | None:
    """Run the gather (0) or scatter (1) kernel on ``array``; None where it cannot."""
    kernels, units = _load(), _as_units(array, int(packed[0]))
    if kernels is None or units is None:
        return None
    out = np.empty(array.shape, dtype=array.dtype)
    # The kernels move unsigned integers (an element, or a group of consecutive ones):
    # the elements' own bytes, so floats (NaN payloads, -0.0) pass bit for bit.
    kernels[kernel](units, *unpack_tiles(packed), out.view(units.dtype))
    return out
