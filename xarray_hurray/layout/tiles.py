"""Tiled chunk permutation, compiled with numba when it is installed (the ``fast`` extra).

A curve permutation is a gather: ``buffer[k] = flat[sources[k]]``.  Both curves fill
each aligned run of 64 buffer positions (:data:`TILE_SIZES`) from one aligned box of
the chunk: an 8 x 8 square, a 4 x 4 x 4 cube, for Morton with unequal bits a box of
other sides (4-D Hilbert curves: runs of 16 or 256, :data:`LINES`).  Inside the box
the elements follow one of a few *patterns* (one for Morton, one per orientation for
Hilbert).  So the permutation is stored as tiles
(:class:`Tiles`): the box's sides, the table of patterns (for each position of a
run, the box's row-major index of its element), and for each tile, in the row-major
order of the boxes, the flat index of its box's first corner (its base) and its run
and pattern number packed into one word.  The compiled loops of :mod:`.tile_kernels`
then move a box (or a few side by side) a step: its rows, contiguous in the chunk,
loaded as short vectors, permuted in registers by the pattern's shuffle, stored as one
run.
Decoding goes the other way through the same tiles.

Without numba, or for permutations whose runs are not boxes in few patterns
(padded Morton chunks, chunks smaller than a tile), :func:`tiles_for` returns None
and the layouts keep the numpy gather, which is the reference: both paths give the
same bytes (tested against each other).  Where numba is installed but fails (it
cannot import, write or load its cache, or compile for the processor), the process
warns once (:class:`~xarray_hurray.errors.KernelFallbackWarning`) and keeps the
numpy gather from then on (:func:`_give_up`): the kernels only ever make a
permutation faster, never make it fail.

Importing numba and loading the compiled kernels from its cache takes 0.5 to 1.5 s
of a process's first use, while the compiled loop saves well under a millisecond
per small chunk: a remote read of a few 64 KiB chunks would wait twenty round trips
for it.  So a process loads the kernels only for a permutation of at least
:data:`MIN_ELEMENTS` elements (:func:`wanted`); once loaded, they serve every size.
"""

from __future__ import annotations

import math
import threading
import warnings
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from ..errors import KernelFallbackWarning
from .tile_interface import ALIGNMENT, MAX_LOOKED_UP, PATTERN_BITS, Loop

TILE_SIZES = (64, 32, 16, 8)
"""Buffer positions per tile, the first whose runs are all boxes of one shape: 64 is
an 8 x 8 square or a 4 x 4 x 4 cube of a curve; Hilbert curves of rank 4 and more
fill boxes in runs of ``2**rank``."""

LINES = 256
"""Buffer positions per tile tried for bytes after 64 and before smaller ones
(:func:`tile_sizes`): a 4 x 4 x 4 x 4 box of a 4-D Hilbert curve, whose runs of 64
are not boxes of one shape.  Its run is four whole cache lines; the 2 x 2 x 2 x 2
boxes of its runs of 16 are a quarter of one, so that a gather stored each line in
four pieces, at different times.  Measured with ``benchmarks/reorder.py``, 32^4 bytes
were gathered at 0.38-0.47x of a copy that way, 0.59-0.61x through these tiles
(64^4: 0.54-0.58x, 0.83-0.84x)."""

ROW_BYTES = 32
"""Bytes of a chunk's row that the loops move together: boxes whose rows are shorter
(8 bytes for an 8 x 8 box of bytes, 4 for a 4 x 4 x 4 one) are moved a few side by
side, so that each load or store covers 32 bytes.  Fewer, wider accesses: decoding
1 MiB of bytes ran at 0.52-0.69x of a copy this way, 0.38-0.43x one box at a time,
and 16 bytes fell between."""

MAX_PATTERNS = 64
"""Patterns that loops compile in, a branch each (3-D Hilbert needs up to 24); tiles
in more patterns go through loops that look their masks up (where the processor
can, :func:`.tile_kernels.can_look_up`), else through the numpy gather."""

MIN_ELEMENTS = 1 << 17
"""Elements of the smallest permutation that loads the kernels (1 MiB of 8-byte
elements, 128 KiB of bytes)."""

BLOCK = 1 << 18
"""Buffer positions examined at a time by :func:`tiles_for` (bounds its memory)."""

_kernels: ModuleType | None = None
_looked = False
_failed = False
_lock = threading.RLock()
"""Held while the kernels are imported and while they are given up: the threads of a
dask worker permute chunks at once, and a thread importing a module that another
thread is failing to import is told the name cannot be imported, not why."""


def _load() -> ModuleType | None:
    """The kernels module, imported on first use; None without numba, or once the
    kernels have failed in this process (:func:`_give_up`)."""
    global _kernels, _looked
    if _looked:
        return _kernels
    with _lock:
        if _looked:  # another thread has imported them meanwhile
            return _kernels
        try:
            from . import tile_kernels
        except ModuleNotFoundError as err:
            if err.name not in ("numba", "llvmlite"):
                _give_up(err)
            _looked = True  # not installed: the plain install, numpy only, no warning
        except Exception as err:  # installed but not importable (a numpy it refuses, ...)
            _give_up(err)
        else:
            _kernels = tile_kernels
            _looked = True
    return _kernels


def _give_up(err: Exception) -> None:
    """Stop using the kernels in this process after ``err``, warning the first time.

    numba raises from its cache layer where it can neither write nor load its cache
    (``RuntimeError`` when no cache directory is writable, unpickling errors for a
    damaged cache file), and from its compiler where it cannot compile for the
    processor; all of these surface at a kernel's first use.  The numpy gather gives
    the same bytes, so every permutation goes through it from then on.
    """
    global _kernels, _looked, _failed
    with _lock:  # threads may fail at once: one warning
        _kernels, _looked = None, True
        first, _failed = not _failed, True
    if first:
        warnings.warn(
            f"the compiled kernels (numba) failed, so chunks are permuted by numpy in "
            f"this process from now on (the same bytes, more slowly): "
            f"{type(err).__name__}: {err}",
            KernelFallbackWarning,
            stacklevel=2,
        )


def available() -> bool:
    """Whether the compiled kernels can run (numba is installed and has not failed);
    loads them."""
    return _load() is not None


def wanted(elements: int) -> bool:
    """Whether a permutation of ``elements`` elements goes through the kernels: they
    are loaded already, or ``elements`` is worth loading them for and they load."""
    if _looked:
        return _kernels is not None
    return elements >= MIN_ELEMENTS and available()


@dataclass(frozen=True)
class Kernel:
    """The compiled loops of some tiles for elements of one width, and the masks they
    take (unsigned integers of that width; used where the loops look them up)."""

    gather: Loop
    streaming_gather: Loop
    """:attr:`gather` storing its runs past the caches, for large outputs
    (:data:`STREAM_BYTES`)."""
    scatter: Loop
    starts: np.ndarray
    """The base of each step's first tile (:meth:`Tiles.group`): a step's boxes lie
    side by side from it."""
    masks: np.ndarray
    """The patterns (row ``p``: the box index of each position of a run in pattern
    ``p``), for gather."""
    inverses: np.ndarray
    """Each pattern's inverse (row ``p``: the run position of each box index), for
    scatter."""


@dataclass(frozen=True, eq=False)
class Tiles:
    """A permutation as tiles, with what a call of the compiled loops needs at hand
    (held in the permutation cache: a chunk's permutation costs a few dictionary
    look-ups besides the loop itself)."""

    sides: tuple[int, ...]
    """The box's sides (its last is a row: contiguous in the chunk)."""
    patterns: np.ndarray
    """``patterns[p, j]``: the box's row-major index of the element at position ``j``
    of a run in pattern ``p``."""
    strides: tuple[int, ...]
    """The chunk's element strides of every axis but the last."""
    runs: np.ndarray
    """One word per tile, the tiles in the row-major order of their boxes: tile ``i``
    fills run ``runs[i] >> PATTERN_BITS`` of the buffer in pattern ``runs[i] &
    (MAX_LOOKED_UP - 1)``.  Unsigned integers of 4 bytes where they hold every run,
    else 8: the loops read a word per tile, and for boxes of 16 bytes, three of 8
    bytes (run, base, pattern) were more than the data (4-D chunks of bytes were
    permuted 1.4x slower)."""
    bases: np.ndarray
    """``bases[i]``: the flat index of tile ``i``'s box's first corner (increasing)."""
    _kernels: dict[int, Kernel | None] = field(default_factory=dict, repr=False)

    @property
    def nbytes(self) -> int:
        """Bytes held (for the permutation cache's budget)."""
        return int(self.patterns.nbytes + self.runs.nbytes + self.bases.nbytes)

    def group(self, width: int) -> int:
        """Boxes side by side along the last axis that one step of the loops moves
        (consecutive in :attr:`runs`): enough for :data:`ROW_BYTES` of each row,
        at most what a row of the chunk holds."""
        if not self.strides:  # one axis: the box is a run of the chunk already
            return 1
        group = max(ROW_BYTES // (self.sides[-1] * width), 1)
        per_row = self.strides[-1] // self.sides[-1]  # boxes along a row of the chunk
        while per_row % group:  # the steps must not straddle two rows
            group //= 2
        return group

    def kernel(self, width: int) -> Kernel | None:
        """The compiled loops and their masks for elements of ``width`` bytes; None
        where they would branch among more than :data:`MAX_PATTERNS` patterns."""
        if width in self._kernels:  # a refusal (None) is kept too: every chunk asks
            return self._kernels[width]
        kernels = _load()
        if kernels is None:  # the kernels failed since these tiles were made
            return None
        found: Kernel | None = None
        try:  # numba makes a loop's cache here (decorating it): it may fail
            lookup = kernels.can_look_up(width, self.patterns)
            if lookup or len(self.patterns) <= MAX_PATTERNS:
                group = self.group(width)
                described = (width, self.sides, self.patterns, group, lookup)
                apart = kernels.can_keep_apart()
                # (numba compiles a loop at its first call: the unused ones never)
                gather, scatter = kernels.kernels(kernels.describe(*described, False, apart))
                streaming_gather = kernels.kernels(kernels.describe(*described, True, apart))[0]
                starts = np.ascontiguousarray(self.bases[::group])
                masks = np.ascontiguousarray(self.patterns, dtype=UNITS[width])
                inverses = np.argsort(self.patterns, axis=1).astype(UNITS[width])
                found = Kernel(gather, streaming_gather, scatter, starts, masks, inverses)
        except Exception as err:
            _give_up(err)
            return None
        self._kernels[width] = found
        return found


NO_TILES = Tiles((), np.empty((0, 0), np.intp), (), np.empty(0, np.uint32), np.empty(0, np.intp))
"""What the permutation cache keeps for a permutation that does not tile."""


def tile_sizes(width: int) -> tuple[int, ...]:
    """The tile sizes :func:`tiles_for` tries, in order, for elements of ``width``
    bytes: :data:`TILE_SIZES`, and for bytes :data:`LINES` after 64 where the
    processor permutes a run of 256 bytes by vector index (else their patterns, too
    many to compile in, would leave 4-D Hilbert chunks to numpy)."""
    kernels = _load()
    if width == 1 and kernels is not None and kernels.can_permute(LINES, width):
        return (TILE_SIZES[0], LINES, *TILE_SIZES[1:])
    return TILE_SIZES


def tiles_for(sources: np.ndarray, shape: tuple[int, ...], width: int) -> Tiles | None:
    """The tiles of a permutation without padding, for elements of ``width`` bytes;
    or None.

    ``sources`` is the row-major element index held at each buffer position of a
    chunk of ``shape``, a permutation of ``range(len(sources))``.  None when the
    kernels are not available or no tile size (:func:`tile_sizes`) gives boxes of
    one shape in at most :data:`.tile_interface.MAX_LOOKED_UP` patterns.
    """
    if not available() or sources.size == 0 or sources.size != math.prod(shape):
        return None
    for size in tile_sizes(width):
        if sources.size % size == 0:
            found = _box_tiles(sources, shape, size)
            if found is not None:
                return found
    return None


def _box_tiles(sources: np.ndarray, shape: tuple[int, ...], size: int) -> Tiles | None:
    """:func:`tiles_for` with runs of ``size``, or None if they are not all boxes of
    the first run's shape in few patterns."""
    rank = len(shape)
    first = np.unravel_index(sources[:size], shape)
    sides = [int(c.max() - c.min() + 1) for c in first]
    if math.prod(sides) != size:
        return None
    strides = np.array([math.prod(shape[a + 1 :]) for a in range(rank)], dtype=np.int64)
    # the flat offset from its first corner of each element of a box, in the box's
    # row-major order: increasing, so a searchsorted finds an offset's box index
    box = (np.indices(sides).reshape(rank, size).T * strides).sum(axis=1)
    tiles = sources.size // size
    bases = np.empty(tiles, dtype=np.intp)
    ids = np.empty(tiles, dtype=np.intp)
    found: dict[bytes, int] = {}
    for start in range(0, sources.size, BLOCK):
        runs = sources[start : start + BLOCK].reshape(-1, size).astype(np.int64)
        low = runs.min(axis=1)
        offsets = runs - low[:, None]
        local = np.searchsorted(box, offsets).clip(max=size - 1)
        corner = np.stack(np.unravel_index(low, shape), axis=-1)
        # every element in the box from its smallest one, and the box inside the chunk
        # (an offset alone could wrap around to the next row)
        if not (np.array_equal(box[local], offsets) and np.all(corner + sides <= shape)):
            return None
        rows = np.ascontiguousarray(local).view(np.dtype((np.void, 8 * size))).reshape(-1)
        distinct, inverse = np.unique(rows, return_inverse=True)
        numbers = np.array([found.setdefault(row.tobytes(), len(found)) for row in distinct])
        if len(found) > MAX_LOOKED_UP:
            return None
        at = start // size
        bases[at : at + len(low)] = low
        ids[at : at + len(low)] = numbers[inverse.reshape(-1)]
    patterns = np.frombuffer(b"".join(found), dtype=np.int64).reshape(-1, size)
    # The tiles in the row-major order of their boxes: the loops then read (gather)
    # or write (scatter) the chunk's rows a few lines at a time, finishing each line
    # before moving on.  Scattering in the curve's order instead leaves lines
    # partly written, to be fetched again later: 1.2-1.5x slower on 1 MiB chunks.
    runs = np.argsort(bases, kind="stable")
    word = word_for(tiles)
    words = runs.astype(word) << word(PATTERN_BITS) | ids[runs].astype(word)
    bases = bases[runs]
    words.flags.writeable = bases.flags.writeable = False
    return Tiles(tuple(sides), patterns, tuple(int(s) for s in strides[:-1]), words, bases)


def word_for(tiles: int) -> type[np.unsignedinteger]:
    """The unsigned integers of :attr:`Tiles.runs` for ``tiles`` tiles: 4 bytes where
    they hold the last run and any pattern."""
    return np.uint32 if tiles << PATTERN_BITS <= 1 << 32 else np.uint64


STREAM_BYTES = 4 << 20
"""Outputs of gather from this size on are stored past the caches (streaming stores
of whole lines): the runs land all over the output, and a normal store of a line
first reads it in.  Measured with ``benchmarks/reorder.py``, 4096 x 4096 bytes
gathered at 1.3x of a copy streaming, 0.8x not.  Smaller outputs stay in the caches,
where whatever reads them next (the codec) finds them: streaming gathered 1 MiB faster
(0.8x against 0.6x) but left it in memory.  4 MiB is twice a core's second-level
cache on large processors."""


UNITS = {width: np.dtype(f"u{width}") for width in (1, 2, 4, 8)}
"""The unsigned integers the loops move, by width."""


def _as_units(array: np.ndarray) -> np.ndarray | None:
    """``array`` as C-contiguous unsigned integers of its width (a view where it is
    contiguous already), or None when the kernels cannot move them (objects, or a
    width other than 1, 2, 4, 8 bytes)."""
    unit = UNITS.get(array.dtype.itemsize)
    if unit is None or array.dtype.hasobject:
        return None
    # the loops read elements at their flat index from the data's start
    return np.ascontiguousarray(array).view(unit)


def gather(values: np.ndarray, tiles: Tiles) -> np.ndarray | None:
    """``values[sources]`` for the permutation of ``tiles``; None when the element
    type is not one the kernels move, or its loops would branch among too many
    patterns (:meth:`Tiles.kernel`): the caller gathers with numpy."""
    return _permute(0, values, tiles)


def scatter(buffer: np.ndarray, tiles: Tiles) -> np.ndarray | None:
    """The elements of ``buffer`` put back at their sources (the inverse of
    :func:`gather`); None where :func:`gather` gives None."""
    return _permute(1, buffer, tiles)


def _permute(direction: int, array: np.ndarray, tiles: Tiles) -> np.ndarray | None:
    """Run the gather (0) or scatter (1) loop on ``array``; None where it cannot.
    The result starts at a multiple of :data:`.tile_interface.ALIGNMENT` bytes
    within a slightly larger allocation."""
    units = _as_units(array)
    kernel = None if units is None else tiles.kernel(array.dtype.itemsize)
    if units is None or kernel is None:
        return None
    space = np.empty(array.nbytes + ALIGNMENT - 1, dtype=np.uint8)
    # The loops move unsigned integers of the elements' width: the elements' own bytes,
    # so floats (NaN payloads, -0.0) pass bit for bit.
    if direction:
        loop, masks = kernel.scatter, kernel.inverses
    else:
        # a run of 64 elements or more is whole cache lines: large outputs stream
        stream = array.nbytes >= STREAM_BYTES and tiles.patterns.shape[1] >= 64
        loop, masks = (kernel.streaming_gather if stream else kernel.gather), kernel.masks
    try:  # numba compiles, or loads from its cache, at a loop's first call
        start = loop(units, tiles.runs, kernel.starts, masks, tiles.strides, space)
    except Exception as err:
        _give_up(err)
        return None
    # (one constructor: slicing, viewing and reshaping took 0.7 us, this 0.4 us)
    return np.ndarray(array.shape, array.dtype, space, start)
