"""The parts of a resolved write (:func:`write_parts`): for each variable it writes,
the chunks its values change with the encoder that makes them, made only when the
write runs, under the writer lock.

Where the values of an update start or end inside a stored chunk (a region off the
chunk grid, an append to a dimension whose last chunk is partly filled), the rest of
each chunk they touch is read from the base and put around them
(:func:`_with_stored_border`), so that every chunk is written whole: read, changed
and rewritten in the commit of the update.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from ..container import ContainerReader, VariableMeta
from ..container.elements import parse_element_type
from ..write.encode import chunk_encoder
from ..write.plan import WritePart, aligned_chunks
from .planner import ResolvedWrite, VariableWrite
from .request import StorageSettings


def _border(
    corner: Sequence[int], start: Sequence[int], stop: Sequence[int], end: Sequence[int]
) -> Iterator[tuple[int, bool, tuple[slice, ...]]]:
    """The pieces of the box ``corner:end`` around its part ``start:stop``, which
    tile the rest of the box: ``(axis, before, slices)``, axis by axis, the piece
    before ``start`` then the one after ``stop``.  The pieces of an axis span the
    whole box along the axes before it and ``start:stop`` along those after it, so
    that ``start:stop``, grown by them axis after axis, becomes the box."""
    for axis in range(len(start)):
        for before, (lo, hi) in (
            (True, (corner[axis], start[axis])),
            (False, (stop[axis], end[axis])),
        ):
            if lo == hi:
                continue
            yield (
                axis,
                before,
                tuple(
                    slice(lo, hi)
                    if k == axis
                    else slice(corner[k], end[k])
                    if k < axis
                    else slice(start[k], stop[k])
                    for k in range(len(start))
                ),
            )


def _stored_values(
    base: ContainerReader, path: str, var: VariableMeta, key: tuple[slice, ...]
) -> np.ndarray:
    """The stored values of variable ``path`` of ``base`` in the box ``key``, which
    may reach past the variable's end in the file (where an append adds to it):
    there, the fill value ``var`` stores."""
    held = base.variable(path).shape
    inside = tuple(slice(k.start, min(k.stop, n)) for k, n in zip(key, held, strict=True))
    if all(k.stop == i.stop for k, i in zip(key, inside, strict=True)):
        return base.read(path, inside)
    dtype = parse_element_type(var.dtype).newbyteorder("=")  # as chunks are decoded
    out = np.full(tuple(k.stop - k.start for k in key), var.fill, dtype=dtype)
    if all(i.stop > i.start for i in inside):
        out[tuple(slice(0, i.stop - i.start) for i in inside)] = base.read(path, inside)
    return out


def _whole_box(
    var: VariableMeta, start: tuple[int, ...], stop: tuple[int, ...], held: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The box of whole stored chunks of ``var`` that values at ``start:stop`` touch
    (cut at the variable's end), in a file whose variable has the shape ``held``:
    along an appended axis whose last stored chunk was partly filled, all of the
    variable's chunks there, whose padding past the old end would read as values."""
    corner = tuple(s - s % c for s, c in zip(start, var.chunks, strict=True))
    end = tuple(min(-(-e // c) * c, n) for e, c, n in zip(stop, var.chunks, var.shape, strict=True))
    for axis, (old, new, c) in enumerate(zip(held, var.shape, var.chunks, strict=True)):
        if new > old and old % c:
            corner = tuple(0 if k != axis else x for k, x in enumerate(corner))
            end = tuple(var.shape[k] if k != axis else x for k, x in enumerate(end))
    return corner, end


def _with_stored_border(
    data: Any,
    base: ContainerReader,
    path: str,
    var: VariableMeta,
    box: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]],
) -> Any:
    """The values ``data``, placed at ``start:stop`` of ``box``
    (``corner, start, stop, end``), grown to the whole box ``corner:end`` by the values
    ``base`` stores around them.  Dask-backed values stay lazy: each stored piece
    joins the dask chunk beside it, so that each stored chunk is still one task's."""
    corner, start, stop, end = box
    if isinstance(data, da.Array):
        for axis, before, key in _border(corner, start, stop, end):
            piece = _stored_values(base, path, var, key)
            # the piece and the dask chunk beside it fill whole stored chunks together
            blocks = list(data.chunks[axis])
            blocks[0 if before else -1] += piece.shape[axis]
            layout = tuple(
                (piece.shape[axis],) if k == axis else data.chunks[k] for k in range(data.ndim)
            )
            lazy = da.from_array(piece, chunks=layout)
            data = da.concatenate([lazy, data] if before else [data, lazy], axis=axis)
            data = data.rechunk({axis: tuple(blocks)})
        return data
    if corner == start and end == stop:
        return data
    values = np.asarray(data)
    whole = np.empty(tuple(e - c for c, e in zip(corner, end, strict=True)), values.dtype)
    whole[tuple(slice(s - c, e - c) for s, c, e in zip(start, corner, stop, strict=True))] = values
    for _, _, key in _border(corner, start, stop, end):
        local = tuple(slice(k.start - c, k.stop - c) for k, c in zip(key, corner, strict=True))
        whole[local] = _stored_values(base, path, var, key)
    return whole


def part_of(
    write: VariableWrite, base: ContainerReader | None, settings: StorageSettings
) -> WritePart:
    """The part of ``write``: every chunk of a new variable, or the chunks of a
    variable ``base`` holds that the values change, grown to whole chunks by the
    values it stores around them.  Without ``safe_chunks``, dask chunks that do not
    line up with the stored chunks are regrouped along them (:func:`aligned_chunks`);
    with it they were checked when the write was resolved."""
    var, source = write.var, write.values
    empty = settings.write_empty_chunks
    if write.start is None:
        if not settings.safe_chunks:
            source = aligned_chunks(source, var.chunks)
        return WritePart.whole(var, source, empty, write.path)
    assert base is not None  # only a variable of the base is written into
    start = write.start
    if not settings.safe_chunks:
        source = aligned_chunks(source, var.chunks, start)
    stop = tuple(s + n for s, n in zip(start, source.shape, strict=True))
    corner, end = _whole_box(var, start, stop, base.variable(write.path).shape)
    if 0 in source.shape:
        corner, end = start, stop  # nothing is written
    data = _with_stored_border(source.data, base, write.path, var, (corner, start, stop, end))
    source = xr.Variable(source.dims, data)
    box = replace(var, shape=source.shape)
    offset = tuple(c // n for c, n in zip(corner, var.chunks, strict=True))
    return WritePart(var, box, offset, chunk_encoder(box, source, empty), write.path)


def write_parts(
    resolved: ResolvedWrite, base: ContainerReader | None, settings: StorageSettings
) -> list[WritePart]:
    """The parts of every variable ``resolved`` writes, against ``base``, the version
    it was resolved against (None: a new file)."""
    return [part_of(write, base, settings) for write in resolved.writes]
