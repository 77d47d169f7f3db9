"""A chunk selection as a bounding box plus the selection relative to that box."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import HurrayValueError


def selection_box(
    selection: Any, shape: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[Any, ...]]:
    """The smallest box holding a chunk selection, and the selection shifted into it.

    Parameters
    ----------
    selection
        A selection inside one chunk as zarr hands it to codecs: a tuple with one
        int, slice or integer/boolean array per axis.
    shape
        The chunk shape.

    Returns
    -------
    lo, hi
        Corners of the box, ``hi`` exclusive.
    local
        The selection relative to ``lo``: indexing the box with it gives what indexing
        the whole chunk with ``selection`` gives.
    """
    selectors = selection if isinstance(selection, tuple) else (selection,)
    if len(selectors) != len(shape):
        raise HurrayValueError(
            f"selection {selection!r} does not have the rank of shape {tuple(shape)}"
        )
    lo: list[int] = []
    hi: list[int] = []
    local: list[slice | int | np.ndarray] = []
    for sel, size in zip(selectors, shape, strict=True):
        if isinstance(sel, slice):
            picked = range(*sel.indices(size))
            start = picked.start if picked else 0
            stop = picked[-1] + 1 if picked else 0
            lo.append(start)
            hi.append(stop)
            local.append(slice(0, stop - start, picked.step))
        elif isinstance(sel, int | np.integer):
            lo.append(int(sel))
            hi.append(int(sel) + 1)
            local.append(0)
        else:
            index = np.asarray(sel)
            if index.dtype == bool:
                index = np.flatnonzero(index)
            start = int(index.min()) if index.size else 0
            stop = int(index.max()) + 1 if index.size else 0
            lo.append(start)
            hi.append(stop)
            local.append(index - start)
    return tuple(lo), tuple(hi), tuple(local)
