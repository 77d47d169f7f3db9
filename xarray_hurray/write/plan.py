"""The plan of a write: what a dataset, a target and a mode become before any chunk is
encoded.

A :class:`WritePlan` holds the description of the new version (its metadata), the
parts to write (each a variable's chunks, by row-major id, in placement order, with
the encoder of their values) and how to open the sink that takes them.  Making one
reads the target at most (an update plans against the version it finds) and writes
nothing; :func:`xarray_hurray.write.engine.execute` carries it out.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import xarray as xr

from ..container import DatasetMeta, VariableMeta
from ..container.front import placement_order
from ..container.sink import Sink
from ..errors import HurrayValueError
from .encode import DaskChunks, LocalChunks, chunk_encoder


def check_alignment(
    name: Hashable, var: xr.Variable, chunks: Sequence[int], start: Sequence[int] | None = None
) -> None:
    """Check that every dask chunk of ``var``, placed at ``start`` in the stored variable
    (its origin by default), ends where a stored chunk ends.

    Dask chunks that are multiples of the stored chunks are split by the write; a
    dask chunk that ends inside a stored chunk is refused, as ``to_zarr`` refuses
    dask chunks that overlap Zarr chunks.

    Raises
    ------
    ValueError
        Naming the variable, the dimension, the dask chunks and the stored chunk.
    """
    if var.chunks is None:
        return
    start = start or (0,) * len(chunks)
    for dim, sizes, size, first in zip(var.dims, var.chunks, chunks, start, strict=True):
        ends = first + np.cumsum(sizes)[:-1]
        inside = np.flatnonzero(ends % size)
        if inside.size:
            k = int(inside[0])
            raise HurrayValueError(
                f"variable {name!r}: dask chunks {tuple(sizes)} along {dim!r} do not line up "
                f"with the stored chunks of {size}: dask chunk {k} ends at {int(ends[k])}, "
                f"inside a stored chunk.  Rechunk to multiples of {size}, e.g. "
                f"ds.chunk({{{dim!r}: {size}}}), or set encoding['chunks'] to sizes that "
                "divide the dask chunks"
                + (
                    f" (the data goes at {first}: its first dask chunk must hold "
                    f"{size - first % size} plus a multiple of {size})"
                    if first % size
                    else ""
                )
            )


def aligned_chunks(
    var: xr.Variable, chunks: Sequence[int], start: Sequence[int] | None = None
) -> xr.Variable:
    """``var``, its dask chunks regrouped so that each ends where a stored chunk ends
    (placed at ``start`` in the stored variable; its origin by default), as
    :func:`check_alignment` wants them: each boundary inside a stored chunk moves to
    that chunk's end, so no dask chunk grows by more than one stored chunk.  Data
    held otherwise is returned as it is."""
    if var.chunks is None:
        return var
    start = start or (0,) * len(chunks)
    regrouped = {}
    for dim, sizes, size, first in zip(var.dims, var.chunks, chunks, start, strict=True):
        ends = first + np.cumsum(sizes)
        last = int(ends[-1]) if len(ends) else first
        # boundaries rounded up to the grid, the end kept where it is
        cuts = np.unique(np.minimum(-(-ends[:-1] // size) * size, last))
        bounds = [first, *cuts[cuts > first].tolist(), last]
        regrouped[dim] = tuple(int(b - a) for a, b in itertools.pairwise(bounds) if b > a)
    return var.chunk(regrouped)


@dataclass(frozen=True)
class WritePart:
    """The chunks of the stored variable ``var`` that a write stores.

    ``encoder`` encodes the chunks of ``box``: ``var`` itself, or the part of it
    whose first chunk is at chunk-grid position ``grid_offset`` (a box of whole
    chunks, the last ones cut by the end of ``var``).  Which chunks those are is
    worked out only when the write runs: a pending write stays small.
    """

    var: VariableMeta
    box: VariableMeta
    grid_offset: tuple[int, ...]
    encoder: LocalChunks | DaskChunks
    path: str | None = None
    """Where ``var`` is in the tree of groups (``"a/b/name"``); None: in the root."""

    @classmethod
    def whole(
        cls,
        var: VariableMeta,
        data: xr.Variable,
        write_empty: bool = False,
        path: str | None = None,
    ) -> WritePart:
        """Every chunk of ``var``, from the CF-encoded ``data``, whose dask chunks are
        made of whole stored chunks (see :func:`check_alignment`)."""
        return cls(var, var, (0,) * len(var.shape), chunk_encoder(var, data, write_empty), path)

    def in_tasks(self) -> WritePart:
        """The part with its chunks encoded by Dask tasks, one per stored chunk where
        the values are held in the writing process (for a sink whose runs the tasks
        write)."""
        if isinstance(self.encoder, DaskChunks):
            return self
        return replace(self, encoder=self.encoder.in_tasks())

    @property
    def name(self) -> str:
        """The stored variable's path (its name, in the root group)."""
        return self.var.name if self.path is None else self.path

    @cached_property
    def _ids(self) -> tuple[np.ndarray, np.ndarray]:
        if self.box is self.var or not self.var.grid_shape:
            # the whole variable (a scalar's one chunk is always all of it)
            return self.var.placement, self.var.placement
        box_ids = np.arange(self.box.chunk_count, dtype=np.int64)
        cells = np.unravel_index(box_ids, self.box.grid_shape)
        shifted = tuple(c + o for c, o in zip(cells, self.grid_offset, strict=True))
        chunk_ids = np.ravel_multi_index(shifted, self.var.grid_shape).astype(np.int64)
        rank = np.empty(self.var.chunk_count, dtype=np.int64)
        rank[self.var.placement] = np.arange(self.var.chunk_count)
        order = np.argsort(rank[chunk_ids], kind="stable")  # the file's placement order
        return chunk_ids[order], box_ids[order]

    @property
    def chunk_ids(self) -> np.ndarray:
        """The chunks written, row-major in ``var``'s grid, in ``var``'s placement order."""
        return self._ids[0]

    @property
    def box_ids(self) -> np.ndarray:
        """The same chunks, row-major in ``box``'s grid."""
        return self._ids[1]


@dataclass(frozen=True)
class WritePlan:
    """One write, planned: nothing is written until it runs.

    Parameters
    ----------
    metadata
        The description of the new version.
    parts
        The chunks written, a part per variable of ``metadata``; kept in the order
        a new file places the variables
        (:func:`~xarray_hurray.container.front.placement_order`).
    open_sink
        Opens the sink that takes the chunks and commits them (a picklable callable,
        so that a pending write can run on a Dask worker).
    name
        What the progress bar calls the target.
    """

    metadata: DatasetMeta
    parts: Sequence[WritePart]
    open_sink: Callable[[], Sink]
    name: str

    def __post_init__(self) -> None:
        # the sinks that stream a file take its variables in the order a new file
        # places them (the variables every open reads first): the parts go in it
        number = {path: k for k, (path, _) in enumerate(placement_order(self.metadata))}
        names = [part.name for part in self.parts]
        if any(name not in number for name in names) or len(set(names)) != len(names):
            raise HurrayValueError(
                f"the parts of a write {names} must be variables of its metadata "
                f"{list(number)}, each once"
            )
        object.__setattr__(self, "parts", sorted(self.parts, key=lambda part: number[part.name]))
