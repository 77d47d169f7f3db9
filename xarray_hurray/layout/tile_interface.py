"""What the tiles (:mod:`.tiles`) hand their compiled loops (:mod:`.tile_kernels`).

The loops are an optional accelerator: :mod:`.tiles` imports :mod:`.tile_kernels`
(and numba) only when it uses them, and the kernels know nothing of the tiles but
this module, numpy only: how a tile's word packs its run and pattern, where in the
space it is given a loop puts its output, and the loops' signature.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

PATTERN_BITS = 9
"""Low bits of a tile's word (:attr:`.tiles.Tiles.runs`) that hold its pattern; the
bits above hold its run."""

MAX_LOOKED_UP = 1 << PATTERN_BITS
"""Patterns of the tiles the loops take at most, their masks looked up: the ways a
box of rank 4 can turn (384) and more; more than this and the numpy gather stays."""

ALIGNMENT = 64
"""Bytes to which the loops align their output inside the space given to them: a
cache line, and the widest vector store.  numpy's own arrays start 16 bytes past a
line, so each 64-byte store of a run (or of a box row of 8-byte elements) would
straddle two lines: aligned, scatter ran 1.4-1.8x faster on 1 MiB chunks of 4- and
8-byte elements.  The loops find the aligned start themselves, as asking numpy for an
array's address costs a microsecond, a tenth of permuting 256 KiB."""

Loop = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[int, ...], np.ndarray], int]
"""A compiled loop: values, the tiles' runs, the bases of the steps, masks, strides,
space for the output (:data:`ALIGNMENT` - 1 bytes more than the output); it returns
where in the space the output starts (:func:`.tile_kernels.kernels`)."""
