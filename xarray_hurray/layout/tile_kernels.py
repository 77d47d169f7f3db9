"""The compiled loops of :mod:`.tiles`; importing this module needs numba.

Kept apart so that ``import xarray_hurray`` never pays numba's import: :mod:`.tiles`
imports it on the first permutation.  ``cache=True`` stores the machine code beside
this file, so only the first use on a machine compiles.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def gather_tiles(
    values: np.ndarray, bases: np.ndarray, ids: np.ndarray, patterns: np.ndarray, out: np.ndarray
) -> None:
    """``out[k * T + j] = values[bases[k] + patterns[ids[k], j]]`` for every tile ``k``."""
    size = patterns.shape[1]
    for k in range(bases.size):
        base, pattern, at = bases[k], patterns[ids[k]], k * size
        for j in range(size):
            out[at + j] = values[base + pattern[j]]


@numba.njit(nogil=True, cache=True)
def scatter_tiles(
    buffer: np.ndarray, bases: np.ndarray, ids: np.ndarray, patterns: np.ndarray, out: np.ndarray
) -> None:
    """``out[bases[k] + patterns[ids[k], j]] = buffer[k * T + j]``: the inverse."""
    size = patterns.shape[1]
    for k in range(bases.size):
        base, pattern, at = bases[k], patterns[ids[k]], k * size
        for j in range(size):
            out[base + pattern[j]] = buffer[at + j]
