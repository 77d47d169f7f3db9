"""Chunk permutation throughput per element type and layout, against ``numpy.copy``.

For 2-D, 3-D and 4-D chunks of 1-, 2-, 4- and 8-byte elements of 1 MiB and 16 MiB
(Morton) or the largest square, cube or 4-cube of a power-of-two side within them (Hilbert,
which needs one), encode (array -> buffer) and decode (buffer -> array) through the
numpy path (``numpy.take`` through the cached index) and through the compiled tiled
kernels (:mod:`xarray_hurray.layout.tiles`, with the ``fast`` extra: numba), as
fractions of ``numpy.copy`` of the same chunk timed in turns with each (so that a
neighbour's load weighs on both alike), each call after an untimed one of its own
(warm caches, as a chunk of 1 MiB stays in the second-level cache between calls).
Both paths are checked to give the same bytes.  Everything runs on one thread, as
``numpy.copy`` does.  Without numba, or where the kernels decline a chunk's tiles, the
compiled columns read ``n/a``.

Usage::

    python -m pip install -e ".[fast]"
    python benchmarks/reorder.py            # 1 MiB and 16 MiB chunks
    python benchmarks/reorder.py --quick    # 16 KiB chunks, a few seconds
"""

from __future__ import annotations

import argparse
import math
from importlib.metadata import version

import numpy as np
from timing import best_times

from xarray_hurray.layout import HilbertLayout, Layout, MortonLayout, tiles
from xarray_hurray.layout.descriptors import gather

TYPES = ("uint8", "int16", "float32", "float64")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    sizes = (2**14,) if args.quick else (2**20, 2**24)
    repeats = 2 if args.quick else args.repeats
    print(
        f"numpy {np.__version__}; compiled kernels: "
        f"{'numba ' + version('numba') if tiles.available() else 'not installed'}; "
        f"best of {repeats}\n"
    )
    print(
        "| chunk | layout | copy GB/s | numpy encode | numpy decode | compiled encode "
        "| compiled decode |\n|---|---|---:|---:|---:|---:|---:|"
    )
    rng = np.random.default_rng(5)
    for nbytes in sizes:
        for rank in (2, 3, 4):
            for name in TYPES:
                dtype = np.dtype(name)
                bits = int(math.log2(nbytes / dtype.itemsize))
                # Hilbert needs a cube; Morton takes the whole size in any sides
                cube = (1 << bits // rank,) * rank
                whole = tuple(1 << (bits + axis) // rank for axis in range(rank))
                for layout, shape in (
                    (HilbertLayout.for_shape(cube), cube),
                    (MortonLayout.for_shape(whole), whole),
                ):
                    array = rng.integers(0, 100, shape).astype(dtype)
                    print(row(layout, array, repeats))
    return 0


def row(layout: Layout, array: np.ndarray, repeats: int) -> str:
    """The table row of one layout and chunk: each path's time as a fraction of
    ``numpy.copy``'s, the two timed in turns (:func:`timing.best_times`).

    Each path is paired with copy alone, not timed in one round with the others: a
    round would hand each call the caches the call before it left, and the
    streaming stores of a large gather leave its freed output out of the caches for
    whatever allocates that memory next.
    """
    shape, flat = array.shape, array.reshape(-1)
    sources, positions = layout.sources(shape), layout.positions(shape)
    buffer = gather(flat, sources)
    paths = [lambda: gather(flat, sources), lambda: gather(buffer, positions)]
    tiled = layout._tiles(shape, array.dtype.itemsize)
    # the kernels may decline tiles they would branch among too many patterns for
    # (None: the layouts keep the numpy gather), as where the processor has no
    # permute by a vector index for the box (4-D Hilbert without AVX-512)
    gathered = None if tiled is None else tiles.gather(flat, tiled)
    if tiled is not None and gathered is not None:
        assert np.array_equal(gathered, buffer)
        assert np.array_equal(tiles.scatter(buffer, tiled), flat)
        paths += [lambda: tiles.gather(flat, tiled), lambda: tiles.scatter(buffer, tiled)]
    pairs = [best_times(repeats, lambda: np.copy(array), path) for path in paths]
    text = [f"{copy_s / path_s:.2f}x" for copy_s, path_s in pairs] + ["n/a"] * (4 - len(paths))
    copy_s = min(copy_s for copy_s, _ in pairs)
    chunk = "x".join(map(str, shape))
    return (
        f"| {chunk} {array.dtype} ({array.nbytes / 2**20:.3g} MiB) | {layout.name} "
        f"| {array.nbytes / copy_s / 1e9:.3g} | " + " | ".join(text) + " |"
    )


if __name__ == "__main__":
    raise SystemExit(main())
