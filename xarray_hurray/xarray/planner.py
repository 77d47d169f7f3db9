"""The planner of every write: an input tree, a :class:`~.request.WriteRequest` and
the base version of the file (or none) become the description of the new version
and the parts to write (:func:`plan_write`).  A new file is a plan against no base.

Into an existing file, the modes and their checks are those of ``to_zarr``:

- ``"a"``: variables of the dataset that the file holds are overwritten, or extended
  along ``append_dim``; new variables are added.
- ``"a-"``: as ``"a"`` with ``append_dim``, but variables without ``append_dim`` that
  the file holds are left as they are.
- ``"r+"``: only variables the file holds are written; with ``region`` (a slice per
  dimension, or ``"auto"`` to find it from the coordinates) into a part of them.

Everything is checked against the file before anything is written; then only the
chunks that change are encoded, and the update commits at one instant (see
:mod:`xarray_hurray.container.update`).
"""

from __future__ import annotations

import errno
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import dask.array as da
import numpy as np
import pandas as pd
import xarray as xr
from xarray import conventions

from ..container import ContainerReader, DatasetMeta, VariableMeta, element_type
from ..container.elements import parse_element_type
from ..errors import HurrayKeyError, HurrayTypeError, HurrayValueError, in_context
from ..write.encode import chunk_encoder
from ..write.plan import WritePart, aligned_chunks, check_alignment
from .appends import changed_attrs, check_append, warn_changed_attrs
from .backend import HurrayDataStore, file_dimensions
from .dims import default_dims
from .encoding import (
    CF_ENCODING,
    describe_at,
    describe_group,
    describe_tree,
    describe_variable,
    encode_dataset,
    group_encoding,
)
from .request import Region, StorageSettings, WriteRequest
from .tree import InputTree

ChangedAttrs = dict[str, dict[str, tuple[Any, Any]]]
"""Attributes given that a write does not keep, by variable path and name: the value
given and the value kept (see :func:`~.appends.changed_attrs`)."""


def join_path(group: str, name: str) -> str:
    """The path of ``name`` in the group at ``group`` (``""``: the root; a ``name`` of
    ``""``: the group itself)."""
    return f"{group}/{name}" if group and name else group or name


def _decoded_variables(
    base: ContainerReader, names: set[str], group: str = ""
) -> dict[Hashable, xr.Variable]:
    """Variables ``names`` of group ``group`` of the file, lazily decoded as
    ``open_dataset`` decodes them: their ``encoding`` is how the file encodes them."""
    store = HurrayDataStore(base, group)
    stored = {k: v for k, v in store.get_variables().items() if k in names}
    variables, _, _ = conventions.decode_cf_variables(stored, {})
    return dict(variables)


def _file_coordinate(base: ContainerReader, group: str, dim: Hashable) -> xr.Variable | None:
    """The coordinate ``dim`` as a DataTree node at ``group`` of the file sees it: the
    group's own, else the nearest ancestor's (coordinates are inherited)."""
    while True:
        stored = _decoded_variables(base, {str(dim)}, group).get(dim)
        if stored is not None and stored.dims == (dim,):
            return stored
        if not group:
            return None
        group = group.rpartition("/")[0]


def _auto_region(ds: xr.Dataset, base: ContainerReader, dim: Hashable, group: str = "") -> slice:
    """The slice of ``dim`` in the file (seen from group ``group``) that the dataset's
    coordinate of ``dim`` covers."""
    if dim not in ds.variables:
        return slice(0, ds.sizes[dim])  # no coordinate: the dimension from its start
    stored = _file_coordinate(base, group, dim)
    if stored is None:
        raise HurrayKeyError(
            f"region='auto' needs the coordinate {dim!r} in the file to find where the "
            "dataset goes, and the file has none"
        )
    positions = pd.Index(stored.values).get_indexer(ds[dim].values)
    if (positions == -1).any():
        raise HurrayKeyError(
            f"Not all values of coordinate {dim!r} in the new array were found in the "
            "original file. Writing to a region requires that no dimensions or metadata "
            "are changed by the write."
        )
    if positions.size and (np.diff(positions) != 1).any():
        raise HurrayValueError(
            f"The auto-detected region of coordinate {dim!r} for writing new data to the "
            "original file had non-contiguous indices. Writing to a region requires that "
            "the new data constitute a contiguous subset of the original file."
        )
    start = int(positions[0]) if positions.size else 0
    return slice(start, start + positions.size)


def resolve_region(
    ds: xr.Dataset,
    base: ContainerReader,
    region: Region,
    append_dim: Hashable | None,
    group: str = "",
    coords: xr.Dataset | None = None,
) -> dict[Hashable, slice]:
    """``region`` checked as ``to_zarr`` checks it, ``"auto"`` entries found from the
    coordinates and every slice made absolute (``start``, ``stop``; step 1) against
    the dimensions of group ``group`` of the file.  ``coords`` holds the coordinates
    that place ``ds`` (by default its own; for a DataTree node, with those it
    inherits).

    Raises
    ------
    TypeError, ValueError, KeyError
        Naming what does not fit.
    """
    if isinstance(region, str) and region == "auto":
        region = dict.fromkeys(ds.dims, "auto")
    if not isinstance(region, Mapping):
        raise HurrayTypeError(f"``region`` must be a dict, got {type(region)}")
    sizes = file_dimensions(base.metadata.group(group))
    resolved: dict[Hashable, slice] = {}
    for dim, value in region.items():
        if dim not in ds.dims:
            raise HurrayValueError(
                f"all keys in ``region`` are not in Dataset dimensions, got {list(region)} "
                f"and {list(ds.dims)}"
            )
        if dim not in sizes:
            where = f"group {'/' + group!r} of the file" if group else "the file"
            raise HurrayValueError(
                f"region dimension {dim!r} is not a dimension of {where} {sizes}"
            )
        if isinstance(value, str) and value == "auto":
            value = _auto_region(ds if coords is None else coords, base, dim, group)
        if not isinstance(value, slice):
            raise HurrayTypeError(
                f"all values in ``region`` must be slice objects, got region={dict(region)}"
            )
        if value.step not in (1, None):
            raise HurrayValueError(
                f"step on all slices in ``region`` must be 1 or None, got region={dict(region)}"
            )
        length = sizes[str(dim)]
        outside = [
            i for i in (value.start, value.stop) if i is not None and not -length <= i <= length
        ]
        if outside:
            raise HurrayValueError(
                f"region {dim!r}: {value} is out of bounds of the dimension's length "
                f"{length} in the file; a region writes into the file's extent (extend a "
                "dimension with append_dim)",
                value=value,
            )
        start, stop, _ = value.indices(length)
        resolved[dim] = slice(start, max(start, stop))
    outside = [k for k, v in ds.variables.items() if not set(resolved).intersection(v.dims)]
    if resolved and outside:
        raise HurrayValueError(
            "when setting `region` explicitly in to_hurray(), all variables in the dataset "
            "to write must have at least one dimension in common with the region's "
            f"dimensions {list(resolved)}, but that is not the case for some variables here. "
            "To drop these variables from this dataset before writing, write: "
            f".drop_vars({outside!r})"
        )
    if append_dim is not None and append_dim in resolved:
        raise HurrayValueError(
            "cannot list the same dimension in both ``append_dim`` and ``region`` with "
            f"to_hurray(), got {append_dim!r} in both"
        )
    return resolved


def _kind(dtype: np.dtype) -> str:
    """What a decoded variable holds, as far as appending goes: numbers, datetimes,
    timedeltas or anything else (text, objects)."""
    return {"M": "datetime", "m": "timedelta"}.get(
        dtype.kind, "number" if dtype.kind in "biufc" else "other"
    )


def _check_dtype(name: Hashable, new: xr.Variable, stored: xr.Variable) -> None:
    """Refuse values of another kind than the file's variable holds (text into numbers,
    numbers into text, times into numbers...): encoding them with the file's encoding
    would fail, or worse, change them.  Numbers into numbers are cast by the file's
    encoding, as ``to_zarr`` casts them."""
    if _kind(new.dtype) != _kind(stored.dtype):
        raise HurrayValueError(
            f"Mismatched dtypes for variable {name} between Hurray file on disk and dataset "
            f"to append. File has dtype {stored.dtype} but dataset to append has dtype "
            f"{new.dtype}."
        )


def _check_dims(
    name: str,
    var: xr.Variable,
    old: VariableMeta,
    region: Mapping[Hashable, slice],
    append_dim: Hashable | None,
) -> xr.Variable:
    """``var`` with the file's dimension order, after checking its dimensions and sizes
    against the variable ``old`` of the file, as ``to_zarr`` checks them."""
    if var.dims != old.dims:
        if set(var.dims) != set(old.dims):
            raise HurrayValueError(
                f"variable {name!r} already exists with different dimension names "
                f"{old.dims} != {var.dims}, but changing variable dimensions is not "
                "supported by to_hurray()."
            )
        var = var.transpose(*old.dims)
    expected = {
        dim: (region[dim].stop - region[dim].start) if dim in region else size
        for dim, size in zip(old.dims, old.shape, strict=True)
        if dim != append_dim
    }
    given = {dim: size for dim, size in var.sizes.items() if dim != append_dim}
    if expected != given:
        changed = next(d for d in expected if expected[d] != given[d])
        raise HurrayValueError(
            f"Unable to update size for existing dimension {changed!r}: variable {name!r} "
            f"already exists with different dimension sizes: {expected} != {given}. "
            "to_hurray() only supports changing dimension sizes when explicitly appending, "
            f"but append_dim={append_dim!r}. If you are attempting to write to a subset of "
            "the existing file without changing dimension sizes, consider using the region "
            "argument in to_hurray()."
        )
    dtype = element_type(var.dtype)
    if dtype != old.dtype:
        raise HurrayValueError(
            f"Mismatched dtypes for variable {name} between Hurray file on disk and dataset "
            f"to append. File has dtype {old.dtype} but dataset to append has dtype {dtype}."
        )
    return var


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


def _held_shape(base: ContainerReader, path: str) -> tuple[int, ...] | None:
    """The shape of variable ``path`` in ``base``; None where it has none."""
    try:
        return base.variable(path).shape
    except KeyError:
        return None


def _part(
    var: VariableMeta,
    source: xr.Variable,
    start: tuple[int, ...],
    base: ContainerReader,
    settings: StorageSettings,
    path: str,
) -> WritePart:
    """The chunks of ``var`` (at ``path`` in the tree) that ``source``, placed at
    ``start``, changes.

    Where ``source`` starts or ends inside a stored chunk (a region off the chunk
    grid, an append to a dimension whose last chunk is partly filled), the values of
    the rest of each chunk it touches are read from ``base`` and put around it, so
    that every chunk is written whole: read, changed and rewritten in the commit of
    the update.  Dask-backed data must give each stored chunk from one dask chunk
    (its dask chunks end on the stored chunk grid, but for its first and last ones,
    which are merged with the stored values around them): with ``safe_chunks``
    other dask chunks are refused, as ``to_zarr(safe_chunks=True)`` refuses dask
    chunks that would race on a Zarr chunk; without it they are regrouped so.

    Raises
    ------
    ValueError
        For dask chunks that do not line up with the stored chunks, with
        ``safe_chunks``.
    """
    if settings.safe_chunks:
        check_alignment(var.name, source, var.chunks, start)
    else:
        source = aligned_chunks(source, var.chunks, start)
    stop = tuple(s + n for s, n in zip(start, source.shape, strict=True))
    corner = tuple(s - s % c for s, c in zip(start, var.chunks, strict=True))
    end = tuple(min(-(-e // c) * c, n) for e, c, n in zip(stop, var.chunks, var.shape, strict=True))
    held = _held_shape(base, path) or var.shape  # a new variable is written whole
    for axis, (old, new, c) in enumerate(zip(held, var.shape, var.chunks, strict=True)):
        if new > old and old % c:
            # the file's last chunks along an appended axis hold padding past its old
            # end, which would read as values: all of them are rewritten, the new
            # cells outside ``source`` holding the fill
            corner = tuple(0 if k != axis else x for k, x in enumerate(corner))
            end = tuple(var.shape[k] if k != axis else x for k, x in enumerate(end))
    if 0 in source.shape:
        corner, end = start, stop  # nothing is written
    data: Any = source.data
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
    elif corner != start or end != stop:
        values = np.asarray(data)
        box = np.empty(tuple(e - c for c, e in zip(corner, end, strict=True)), values.dtype)
        box[tuple(slice(s - c, e - c) for s, c, e in zip(start, corner, stop, strict=True))] = (
            values
        )
        for _, _, key in _border(corner, start, stop, end):
            local = tuple(slice(k.start - c, k.stop - c) for k, c in zip(key, corner, strict=True))
            box[local] = _stored_values(base, path, var, key)
        data = box
    source = xr.Variable(source.dims, data)
    sub = replace(var, shape=source.shape)
    offset = tuple(c // n for c, n in zip(corner, var.chunks, strict=True))
    encoder = chunk_encoder(sub, source, settings.write_empty_chunks)
    return WritePart(var, sub, offset, encoder, path)


def whole_part(
    var: VariableMeta, data: xr.Variable, settings: StorageSettings, path: str | None = None
) -> WritePart:
    """:meth:`WritePart.whole`, but without ``safe_chunks`` dask chunks that do not
    line up with the stored chunks are regrouped (:func:`aligned_chunks`) instead of
    refused."""
    if not settings.safe_chunks:
        data = aligned_chunks(data, var.chunks)
    return WritePart.whole(var, data, settings.write_empty_chunks, path)


def plan_group(
    ds: xr.Dataset,
    base: ContainerReader,
    request: WriteRequest,
    group: str,
    coords: xr.Dataset | None = None,
) -> tuple[DatasetMeta, list[WritePart], ChangedAttrs]:
    """The new description of group ``group`` of the file (``""``: the root; its child
    groups kept as they are), the chunks to write, and the attributes of the
    variables it writes into that are not written (:func:`~.appends.changed_attrs`,
    by path), for writing ``ds`` into that group of the file ``base`` as ``request``
    asks (its ``append_dim`` and ``region`` those of this group).  ``coords`` holds
    the coordinates that place ``ds`` for ``region="auto"`` (by default its own).

    Raises
    ------
    ValueError, TypeError, KeyError
        For every way the dataset does not fit the file, as ``to_zarr`` raises them,
        and for an append that repeats index values or changes a coordinate
        (:func:`~.appends.check_append`).
    """
    append_dim, region, settings = request.append_dim, request.region, request.settings
    held = base.metadata.group(group)
    existing = {var.name: var for var in held.variables}
    sizes = file_dimensions(held)
    for name in settings.encoding:
        if name in existing:
            raise HurrayValueError(f"variable {name!r} already exists, but encoding was provided")
    resolved: dict[Hashable, slice] = {}
    if region is not None:
        resolved = resolve_region(ds, base, region, append_dim, group, coords)
        ds = ds.drop_vars(ds.indexes)  # a region write leaves the coordinates as they are
    new_names = [k for k in ds.variables if k not in existing]
    if not request.adds_variables and new_names:
        raise HurrayValueError(
            f"dataset contains non-pre-existing variables {new_names!r}, which is not "
            "allowed in to_hurray() with mode='r+'. To allow writing new variables, set "
            "mode='a'."
        )
    if region is not None and new_names:
        raise HurrayValueError(
            f"dataset contains non-pre-existing variables {new_names!r}: a region write "
            "only writes into variables the file holds"
        )
    if append_dim is not None and append_dim not in sizes:
        raise HurrayValueError(
            f"append_dim={append_dim!r} does not match any existing dataset dimensions {sizes}"
        )
    stored = _decoded_variables(base, {str(k) for k in ds.variables if k in existing}, group)
    if append_dim is not None:
        # before "a-" leaves out the variables without append_dim: the coordinates
        # the file keeps place the new values all the same
        check_append(ds, stored, append_dim)
    if request.keeps_unappended and append_dim is not None:
        ds = ds.drop_vars(
            [k for k, v in ds.variables.items() if k in existing and append_dim not in v.dims]
        )
    if append_dim is not None:
        left = [n for n, v in existing.items() if append_dim in v.dims and n not in ds.variables]
        if left:
            raise HurrayValueError(
                f"variables {left} of the file have the dimension {append_dim!r} appended "
                "to but are not in the dataset: give them too, or drop them from the file "
                "first"
            )
    stored = {name: var for name, var in stored.items() if name in ds.variables}
    for name, var in stored.items():
        _check_dtype(name, ds.variables[name], var)
    changed = {join_path(group, str(k)): v for k, v in changed_attrs(ds, stored).items()}
    cf = {
        k: {e: v for e, v in var.encoding.items() if e in CF_ENCODING} for k, var in stored.items()
    }
    variables, attrs = encode_dataset(ds, {**settings.encoding, **cf})
    spatial = default_dims(ds)

    updated: dict[str, VariableMeta] = {}
    parts: dict[str, WritePart] = {}
    for name, var in variables.items():
        path = join_path(group, str(name))
        if name in existing:
            old = existing[name]
            var = _check_dims(str(name), var, old, resolved, append_dim)
            shape = list(old.shape)
            start = [resolved[d].start if d in resolved else 0 for d in old.dims]
            if append_dim in old.dims:
                axis = old.dims.index(str(append_dim))
                start[axis] = old.shape[axis]
                shape[axis] += var.shape[axis]
            meta = replace(old, shape=tuple(shape))
            parts[meta.name] = _part(meta, var, tuple(start), base, settings, path)
        else:
            meta = describe_variable(name, var, settings.defaults, settings.chunk_bytes, spatial)
            parts[meta.name] = whole_part(meta, var, settings, path)
        updated[meta.name] = meta
    order = [updated.get(n, v) for n, v in existing.items()]
    order += [v for n, v in updated.items() if n not in existing]
    try:
        metadata = DatasetMeta(
            attrs=dict(held.attrs) if request.keeps_attrs else cast(dict[str, Any], dict(attrs)),
            variables=tuple(order),
            groups=held.groups,  # the groups below are kept as they are
            name=held.name,
        )
    except ValueError as err:
        raise HurrayValueError(f"the dataset does not fit the file: {err}") from err
    return metadata, [parts[v.name] for v in order if v.name in parts], changed


def _node_region(region: Region | None, own: xr.Dataset, group: str) -> Region | None:
    """The part of ``region`` that applies to a node of a tree whose own variables
    are ``own``: the dimensions it has (groups of a tree have different ones).

    Raises
    ------
    ValueError
        When the node has variables to write and none of the region's dimensions.
    """
    if region is None or (isinstance(region, str) and region == "auto"):
        return region
    if not isinstance(region, Mapping):
        raise HurrayTypeError(f"``region`` must be a dict, got {type(region)}")
    mine = {dim: value for dim, value in region.items() if dim in own.dims}
    written = [k for k in own.variables if k not in own.indexes]
    if written and not mine:
        raise HurrayValueError(
            f"group {'/' + group!r} has variables to write ({written}) but none of the "
            f"region's dimensions {list(region)}: a region write writes into a part of "
            "every variable it is given; drop them from the tree, or give their region"
        )
    return mine


def _check_region_dims(tree: InputTree, region: Region | None) -> None:
    """Refuse region dimensions that no node of ``tree`` has."""
    if not isinstance(region, Mapping):
        return
    dims = tree.dims()
    unknown = [dim for dim in region if dim not in dims]
    if unknown:
        raise HurrayValueError(
            f"region dimensions {unknown} are dimensions of no group of the tree "
            f"{sorted(map(str, dims))}",
            value=unknown,
        )


@dataclass
class _TreePlanner:
    """What the planning of a tree into a file shares between its nodes: the base,
    the request, the encoding of each node by its path in the tree, and the parts
    planned so far."""

    base: ContainerReader
    request: WriteRequest
    encoding: Mapping[str, Mapping[Hashable, Any]]
    single: bool
    """The tree is one node (a Dataset): written as a Dataset is."""
    parts: list[WritePart] = field(default_factory=list)
    changed: ChangedAttrs = field(default_factory=dict)
    """The attributes given that the variables written into keep as stored, by path."""

    def node(self, node: InputTree, path: str, held: DatasetMeta | None) -> DatasetMeta:
        """Group ``path`` of the new version, without its child groups, for the node
        ``node`` of the tree (``held``: the file's group there, if any); its parts
        are added.  A tree of one node is written as a Dataset: its ``append_dim``
        and ``region`` must fit it; in a larger tree they apply to the groups they
        fit."""
        request, base = self.request, self.base
        where = f"group {'/' + path!r}"
        own = node.own
        settings = replace(request.settings, encoding=self.encoding.get(node.path, {}))
        if held is None:
            if request.writes_into_only:
                raise HurrayValueError(
                    f"{where} is not in the file: mode='r+' and region writes only write "
                    "into groups the file holds; use mode='a' to add it"
                )
            meta, variables = describe_group(
                own, settings.encoding, settings.defaults, settings.chunk_bytes, name=node.name
            )
            self.parts += [
                whole_part(var, variables[var.name], settings, join_path(path, var.name))
                for var in meta.variables
            ]
            return meta
        append_dim = request.append_dim
        if append_dim is not None and append_dim not in file_dimensions(held) and not self.single:
            if append_dim in own.dims:
                raise HurrayValueError(
                    f"{where}: append_dim={append_dim!r} is a dimension of the tree's node "
                    f"but not of the group in the file {file_dimensions(held)}"
                )
            append_dim = None  # its variables are written as those without append_dim
            if request.keeps_unappended:
                own = own.drop_vars([v.name for v in held.variables if v.name in own.variables])
        region = request.region if self.single else _node_region(request.region, own, path)
        node_request = replace(request, append_dim=append_dim, region=region, settings=settings)
        meta, parts, changed = plan_group(own, base, node_request, path, node.placing)
        self.parts += parts
        self.changed.update(changed)
        return meta

    def subtree(self, node: InputTree, path: str, held: DatasetMeta | None) -> DatasetMeta:
        """The group at ``path`` of the new version, with every group below it: the
        file's groups there (``held``) rebuilt with the nodes of ``node`` written into
        them, the nodes the file has no group for added, the others kept."""
        try:
            meta = self.node(node, path, held)
        except (ValueError, TypeError, KeyError) as err:
            if not path:
                raise
            raise in_context(err, f"group {'/' + path!r}") from err
        kept = {child.name: child for child in (held.groups if held is not None else ())}
        groups = [
            child
            if name not in node.children
            else self.subtree(node.children[name], join_path(path, name), child)
            for name, child in kept.items()
        ]
        groups += [
            self.subtree(below, join_path(path, str(name)), None)
            for name, below in node.children.items()
            if name not in kept
        ]
        return replace(meta, groups=tuple(groups))


def plan_write(
    tree: InputTree, request: WriteRequest, base: ContainerReader | None
) -> tuple[DatasetMeta, list[WritePart]]:
    """The description of the new version and the chunks to write, for writing
    ``tree`` (its root at ``request.group``) as ``request`` asks, against the file's
    current version ``base`` (None: there is none, or it is replaced whole).

    - A new file holds the tree (and empty groups above ``request.group``).
    - ``"w"`` of a group replaces the group of ``base``, and the groups below it, by
      the tree, keeping the groups beside and above it; ``"w-"`` of a group does so
      where ``base`` has no such group, and refuses otherwise.
    - ``"a"``, ``"a-"`` and ``"r+"`` write every node of the tree into the group of
      the file at its path: groups of the file that the tree does not hold are kept
      as they are; a node the file has no group for becomes a new group (``"a"`` and
      ``"a-"``; refused by ``"r+"`` and by region writes).  In a tree of several
      nodes, ``append_dim`` extends the groups of the file that have that dimension;
      in the others the node's variables are written as ``mode`` writes variables
      without it, and a node that has the dimension there is refused; ``region``
      applies to each node with the dimensions it has; ``"auto"`` finds it from the
      coordinates the node sees (its own or inherited, in the tree and in the file).
      ``encoding`` maps group paths (``"/a/b"``) to the encoding of new variables.

    Raises
    ------
    FileExistsError
        With ``"w-"`` of a group the file holds.
    ValueError, TypeError, KeyError
        For every way the tree does not fit the file, naming the group.
    """
    group, settings = request.group, request.settings
    held: DatasetMeta | None = None
    if base is not None and group:
        try:
            held = base.metadata.group(group)
        except KeyError:
            held = None
    if base is not None and request.into_file and (held is not None or not group):
        # every node into the file's group at its path
        if tree.children:
            _check_region_dims(tree, request.region)
        by_path = group_encoding(tree, settings.encoding)
        planning = _TreePlanner(base, request, by_path, single=not tree.children)
        placed = planning.subtree(tree, group, base.metadata.group(group))
        try:
            metadata = _graft(base.metadata, group, placed)
        except ValueError as err:
            raise HurrayValueError(f"the tree does not fit the file: {err}") from err
        warn_changed_attrs(planning.changed, "the file")
        # in the order of the new version's variables, as its writers take them
        number = {path: k for k, (path, _) in enumerate(metadata.all_variables())}
        return metadata, sorted(planning.parts, key=lambda part: number[part.name])
    where = f"group {'/' + group!r}"
    if held is not None and request.refuses_existing:
        assert base is not None  # a group is held by a file
        raise FileExistsError(
            errno.EEXIST,
            f"the file holds the {where} (mode='w-'); use mode='w' to replace it or "
            "mode='a' to write into it",
            base.source.name,
        )
    if request.needs_file:
        raise HurrayValueError(
            f"{where} is not in the file: mode='r+', append_dim and region write only "
            "into groups the file holds; use mode='a' without them to add it",
            value=group,
        )
    describe = (settings.encoding, settings.defaults, settings.chunk_bytes)
    if group:
        root = base.metadata if base is not None else None
        metadata, variables = describe_at(tree, group, *describe, root=root)
    else:
        metadata, variables = describe_tree(tree, *describe)
    parts = [
        whole_part(var, variables[path], settings, path)
        for path, var in metadata.all_variables()
        if path in variables
    ]
    return metadata, parts


def _graft(root: DatasetMeta, group: str, placed: DatasetMeta) -> DatasetMeta:
    """``root`` with its group at path ``group`` (``""``: itself) replaced by ``placed``."""
    if not group:
        return placed
    head, _, rest = group.partition("/")
    children = tuple(
        _graft(child, rest, placed) if child.name == head else child for child in root.groups
    )
    return replace(root, groups=children)
