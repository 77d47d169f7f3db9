"""The stored chunks of a pyramid's levels: level 0's (tiles of :data:`TILE` cells a
side for two-dimensional fields without chunks of their own), cut to the shape of
each coarser level, so that a tile costs one chunk at every level (as a COG keeps one
tile size)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from .encoding import auto_chunks

TILE = 256
"""The side of a pyramid's default chunks along the two dimensions it coarsens: the
side of a map tile, so that a tile of any level is one chunk.  A tile read from
chunks of 512 x 512 (those of about 1 MiB, the default elsewhere, for 4-byte values)
moves four times its bytes."""


def _tiles(var: xr.Variable, dims: Sequence[str]) -> bool:
    """Whether ``var`` takes the default tiles of :func:`stored_chunks`: two of ``dims``
    and no stored chunks of its own (its encoding's, or dask chunks)."""
    chunks = var.encoding.get("chunks")
    own = var.chunks is not None or (chunks is not None and len(chunks) == var.ndim)
    return not own and sum(d in dims for d in var.dims) == 2


def stored_chunks(var: xr.Variable, dims: Sequence[str]) -> tuple[int, ...]:
    """The chunks ``var`` is stored in at level 0 of a pyramid coarsening ``dims``: its
    encoding's, its dask chunks, tiles (:data:`TILE` along the two of ``dims`` it has,
    one along its others) for a variable with two of them, else those of
    :func:`~.encoding.auto_chunks`."""
    chunks = var.encoding.get("chunks")
    if chunks is not None and len(chunks) == var.ndim:
        return tuple(int(c) for c in chunks)
    if var.chunks is not None:
        return tuple(int(c[0]) for c in var.chunks)
    if _tiles(var, dims):
        return tuple(
            min(TILE, n) if d in dims else 1 for d, n in zip(var.dims, var.shape, strict=True)
        )
    return auto_chunks(var.shape, max(var.dtype.itemsize, 1))


def tiled(ds: xr.Dataset, dims: Sequence[str]) -> xr.Dataset:
    """``ds`` with the default tiles of :func:`stored_chunks` in the encoding of each
    data variable that takes them."""
    chosen = {
        name: stored_chunks(var.variable, dims)
        for name, var in ds.data_vars.items()
        if _tiles(var.variable, dims)
    }
    if not chosen:
        return ds
    ds = ds.copy()
    for name, chunks in chosen.items():
        ds[name].encoding = {**ds[name].encoding, "chunks": chunks}
    return ds


def level_chunks(
    var: xr.Variable, shape: Sequence[int], dims: Sequence[str]
) -> tuple[int, ...] | None:
    """The stored chunks of a coarser level: those of level 0 cut to the level's shape
    (None for a variable stored in the chunks a write chooses)."""
    if var.chunks is None and "chunks" not in var.encoding:
        return None
    chunks = stored_chunks(var, dims)
    return tuple(max(min(c, n), 1) for c, n in zip(chunks, shape, strict=True))


def level_encoding(
    var: xr.Variable, chunks: Sequence[int] | None, dtype: np.dtype
) -> dict[str, Any]:
    """The encoding of a variable at a coarser level: that of level 0, with the same
    stored chunks cut to the level's shape (tiles of one size at every level, as a
    COG's), less an integer ``dtype`` where the level holds means."""
    encoding = {k: v for k, v in var.encoding.items() if k not in ("chunks", "preferred_chunks")}
    if dtype.kind in "fc" and var.dtype.kind not in "fc":
        for key in ("dtype", "_FillValue", "missing_value", "scale_factor", "add_offset"):
            encoding.pop(key, None)
    if chunks is not None:
        encoding["chunks"] = tuple(chunks)
    return encoding
