"""The planner of every write: one walk over the input tree against the base version
of the file resolves the write (:func:`resolve_write`), into the description of the
new version and what goes into each variable it writes.  A new file is the same walk
against no base: every node is described whole.

Into an existing file, the modes and their checks are those of ``to_zarr``:

- ``"a"``: variables of the dataset that the file holds are overwritten, or extended
  along ``append_dim``; new variables are added.
- ``"a-"``: as ``"a"`` with ``append_dim``, but variables without ``append_dim`` that
  the file holds are left as they are.
- ``"r+"``: only variables the file holds are written; with ``region`` (a slice per
  dimension, or ``"auto"`` to find it from the coordinates) into a part of them.

Everything is checked against the file before anything is written; the parts to
write are made of the resolved write only when it runs (:mod:`.parts`), then only
the chunks that change are encoded, and the update commits at one instant (see
:mod:`xarray_hurray.container.update`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import xarray as xr

from ..container import ContainerReader, DatasetMeta, VariableMeta, element_type
from ..errors import HurrayValueError, in_context
from ..write.plan import check_alignment
from .appends import changed_attrs, check_append, warn_changed_attrs
from .backend import file_dimensions
from .dims import default_dims
from .encoding import CF_ENCODING, describe_group, describe_variable, encode_dataset
from .region import decoded_variables, resolve_region
from .request import Region, StorageSettings, WriteRequest, node_region
from .tree import InputTree, NodeEncoding

ChangedAttrs = dict[str, dict[str, tuple[Any, Any]]]
"""Attributes given that a write does not keep, by variable path and name: the value
given and the value kept (see :func:`~.appends.changed_attrs`)."""


def join_path(group: str, name: str) -> str:
    """The path of ``name`` in the group at ``group`` (``""``: the root; a ``name`` of
    ``""``: the group itself)."""
    return f"{group}/{name}" if group and name else group or name


@dataclass(frozen=True)
class VariableWrite:
    """What a resolved write stores in one variable of the new version.

    Parameters
    ----------
    var
        The variable's description in the new version.
    values
        The CF-encoded values written, whose dask chunks line up with the stored
        chunks where the write asked for it (``safe_chunks``).
    path
        The variable's path in the tree of groups (``"a/b/name"``).
    start
        Where ``values`` go in a variable the base holds (a region, an append), the
        other chunks kept; None: they are the whole variable, a new one.
    """

    var: VariableMeta
    values: xr.Variable
    path: str
    start: tuple[int, ...] | None = None


@dataclass(frozen=True)
class ResolvedWrite:
    """One write, resolved against a version of the file: the description of the new
    version, and what goes into each variable written (in the order of the walk; the
    plan orders them as the writers take them)."""

    metadata: DatasetMeta
    writes: tuple[VariableWrite, ...]


def _checked(
    var: VariableMeta,
    values: xr.Variable,
    path: str,
    settings: StorageSettings,
    start: tuple[int, ...] | None = None,
) -> VariableWrite:
    """The write of ``values`` into ``var`` at ``start``, after checking, with
    ``safe_chunks``, that its dask chunks line up with the stored chunks (without it
    they are regrouped when the part is made).

    Raises
    ------
    ValueError
        For dask chunks that do not line up, with ``safe_chunks``.
    """
    if settings.safe_chunks:
        check_alignment(var.name, values, var.chunks, start)
    return VariableWrite(var, values, path, start)


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


@dataclass(frozen=True)
class NodeInto:
    """What a write into one group of the file takes from the request for that group:
    its ``append_dim`` and ``region`` (those the group has, in a tree), the encoding
    of its new variables, and the coordinates that place it for ``region="auto"``."""

    append_dim: Hashable | None
    region: Region | None
    encoding: NodeEncoding
    coords: xr.Dataset | None = None


def _fitted(
    ds: xr.Dataset,
    base: ContainerReader,
    request: WriteRequest,
    group: str,
    into: NodeInto,
) -> tuple[xr.Dataset, dict[Hashable, xr.Variable], dict[Hashable, slice]]:
    """``ds`` as it is written into group ``group`` of the file ``base``, once every
    check of ``to_zarr``'s modes passed: without the variables the write leaves out
    (the coordinates of a region, the variables ``"a-"`` keeps); the file's variables
    it writes into, as ``open_dataset`` decodes them; and the region, placed.

    Raises
    ------
    ValueError, TypeError, KeyError
        For every way the dataset does not fit the file, as ``to_zarr`` raises them,
        and for an append that repeats index values or changes a coordinate
        (:func:`~.appends.check_append`).
    """
    append_dim = into.append_dim
    held = base.metadata.group(group)
    existing = {var.name for var in held.variables}
    sizes = file_dimensions(held)
    for name in into.encoding:
        if name in existing:
            raise HurrayValueError(f"variable {name!r} already exists, but encoding was provided")
    resolved: dict[Hashable, slice] = {}
    if into.region is not None:
        resolved = resolve_region(ds, base, into.region, group, into.coords)
        ds = ds.drop_vars(ds.indexes)  # a region write leaves the coordinates as they are
    new_names = [k for k in ds.variables if k not in existing]
    if not request.adds_variables and new_names:
        raise HurrayValueError(
            f"dataset contains non-pre-existing variables {new_names!r}, which is not "
            "allowed in to_hurray() with mode='r+'. To allow writing new variables, set "
            "mode='a'."
        )
    if into.region is not None and new_names:
        raise HurrayValueError(
            f"dataset contains non-pre-existing variables {new_names!r}: a region write "
            "only writes into variables the file holds"
        )
    if append_dim is not None and append_dim not in sizes:
        raise HurrayValueError(
            f"append_dim={append_dim!r} does not match any existing dataset dimensions {sizes}"
        )
    stored = decoded_variables(base, {str(k) for k in ds.variables if k in existing}, group)
    if append_dim is not None:
        # before "a-" leaves out the variables without append_dim: the coordinates
        # the file keeps place the new values all the same
        check_append(ds, stored, append_dim)
        if request.keeps_unappended:
            ds = ds.drop_vars(
                [k for k, v in ds.variables.items() if k in existing and append_dim not in v.dims]
            )
        left = [
            v.name for v in held.variables if append_dim in v.dims and v.name not in ds.variables
        ]
        if left:
            raise HurrayValueError(
                f"variables {left} of the file have the dimension {append_dim!r} appended "
                "to but are not in the dataset: give them too, or drop them from the file "
                "first"
            )
    stored = {name: var for name, var in stored.items() if name in ds.variables}
    for name, var in stored.items():
        _check_dtype(name, ds.variables[name], var)
    return ds, stored, resolved


def _into_variable(
    var: xr.Variable,
    old: VariableMeta,
    path: str,
    region: Mapping[Hashable, slice],
    append_dim: Hashable | None,
    settings: StorageSettings,
) -> VariableWrite:
    """The write of the CF-encoded ``var`` into the file's variable ``old`` (at
    ``path``): into ``region``, or after its end along ``append_dim``, or over it
    whole; its new description grown by an append."""
    var = _check_dims(old.name, var, old, region, append_dim)
    shape = list(old.shape)
    start = [region[d].start if d in region else 0 for d in old.dims]
    if append_dim in old.dims:
        axis = old.dims.index(str(append_dim))
        start[axis] = old.shape[axis]
        shape[axis] += var.shape[axis]
    return _checked(replace(old, shape=tuple(shape)), var, path, settings, tuple(start))


def resolve_group(
    ds: xr.Dataset, base: ContainerReader, request: WriteRequest, group: str, into: NodeInto
) -> tuple[DatasetMeta, list[VariableWrite], ChangedAttrs]:
    """The new description of group ``group`` of the file (``""``: the root; its child
    groups kept as they are), what goes into each variable written, and the
    attributes of the variables it writes into that are not written
    (:func:`~.appends.changed_attrs`, by path), for writing ``ds`` into that group of
    the file ``base`` as ``request`` and ``into`` ask.

    Raises
    ------
    ValueError, TypeError, KeyError
        As :func:`_fitted` raises, and for variables that do not fit the file's.
    """
    settings = request.settings
    held = base.metadata.group(group)
    existing = {var.name: var for var in held.variables}
    ds, stored, region = _fitted(ds, base, request, group, into)
    changed = {join_path(group, str(k)): v for k, v in changed_attrs(ds, stored).items()}
    cf = {
        k: {e: v for e, v in var.encoding.items() if e in CF_ENCODING} for k, var in stored.items()
    }
    variables, attrs = encode_dataset(ds, {**into.encoding, **cf})
    spatial = default_dims(ds)
    writes: dict[str, VariableWrite] = {}
    for name, var in variables.items():
        path = join_path(group, str(name))
        if name in existing:
            old = existing[str(name)]
            write = _into_variable(var, old, path, region, into.append_dim, settings)
        else:
            meta = describe_variable(name, var, settings.defaults, settings.chunk_bytes, spatial)
            write = _checked(meta, var, path, settings)
        writes[write.var.name] = write
    order = [writes[n].var if n in writes else v for n, v in existing.items()]
    order += [w.var for n, w in writes.items() if n not in existing]
    try:
        metadata = DatasetMeta(
            attrs=dict(held.attrs) if request.keeps_attrs else cast(dict[str, Any], dict(attrs)),
            variables=tuple(order),
            groups=held.groups,  # the groups below are kept as they are
            name=held.name,
        )
    except ValueError as err:
        raise HurrayValueError(f"the dataset does not fit the file: {err}") from err
    return metadata, [writes[v.name] for v in order if v.name in writes], changed


@dataclass
class _Walk:
    """The walk of an input tree against a version of the file (``base``; None: a new
    file), and what it has found so far: the variables written and the attributes
    given that they keep as stored."""

    base: ContainerReader | None
    request: WriteRequest
    single: bool
    """The tree is one node (a Dataset): written as a Dataset is."""
    writes: list[VariableWrite] = field(default_factory=list)
    changed: ChangedAttrs = field(default_factory=dict)

    def _described(self, node: InputTree, path: str) -> DatasetMeta:
        """Group ``path`` of the new version for ``node``, described whole (a group
        the version lacks, or one the write replaces), without its child groups."""
        settings = self.request.settings
        if self.request.writes_into_only:
            raise HurrayValueError(
                f"group {'/' + path!r} is not in the file: mode='r+' and region writes "
                "only write into groups the file holds; use mode='a' to add it"
            )
        meta, variables = describe_group(
            node.own,
            node.encoding,
            settings.defaults,
            settings.chunk_bytes,
            name=path.rpartition("/")[2],
        )
        self.writes += [
            _checked(var, variables[var.name], join_path(path, var.name), settings)
            for var in meta.variables
        ]
        return meta

    def _into(self, node: InputTree, path: str, held: DatasetMeta) -> DatasetMeta:
        """Group ``path`` of the new version, without its child groups, for ``node``
        written into the group the file holds there (``held``).  A tree of one node
        is written as a Dataset: its ``append_dim`` and ``region`` must fit it; in a
        larger tree they apply to the groups they fit."""
        request = self.request
        assert self.base is not None  # a group is held by a file
        own = node.own
        append_dim = request.append_dim
        if append_dim is not None and append_dim not in file_dimensions(held) and not self.single:
            if append_dim in own.dims:
                raise HurrayValueError(
                    f"group {'/' + path!r}: append_dim={append_dim!r} is a dimension of the "
                    f"tree's node but not of the group in the file {file_dimensions(held)}"
                )
            append_dim = None  # its variables are written as those without append_dim
            if request.keeps_unappended:
                own = own.drop_vars([v.name for v in held.variables if v.name in own.variables])
        region = request.region if self.single else node_region(request.region, own)
        into = NodeInto(append_dim, region, node.encoding, node.placing)
        meta, writes, changed = resolve_group(own, self.base, request, path, into)
        self.writes += writes
        self.changed.update(changed)
        return meta

    def subtree(self, node: InputTree, path: str, held: DatasetMeta | None) -> DatasetMeta:
        """The group at ``path`` of the new version, with every group below it: the
        file's groups there (``held``; None: described whole) rebuilt with the nodes
        of ``node`` written into them, the nodes the file has no group for added, the
        others kept."""
        try:
            meta = self._described(node, path) if held is None else self._into(node, path, held)
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


def graft(root: DatasetMeta | None, path: str, group: DatasetMeta) -> DatasetMeta:
    """``root`` (None: an empty one) with ``group`` as its group at ``path`` (``""``:
    itself), in place of the group there and everything below it, and empty groups
    on the way where ``root`` has none."""
    if not path:
        return group
    root = root if root is not None else DatasetMeta(attrs={}, variables=())
    head, _, rest = path.partition("/")
    children = list(root.groups)
    at = next((k for k, child in enumerate(children) if child.name == head), None)
    below = children[at] if at is not None else DatasetMeta(attrs={}, variables=(), name=head)
    placed = graft(below, rest, group) if rest else group
    if at is None:
        children.append(placed)
    else:
        children[at] = placed
    return replace(root, groups=tuple(children))


def resolve_write(
    tree: InputTree,
    request: WriteRequest,
    base: ContainerReader | None,
    held: DatasetMeta | None,
) -> ResolvedWrite:
    """The write of ``tree`` (its root at ``request.group``) as ``request`` asks,
    resolved against the file's current version ``base`` (None: there is none, or it
    is replaced whole) by one walk over the tree.

    - The tree is written into ``held``, the group of ``base`` at ``request.group``,
      node by node, or where ``held`` is None replaces the group there, or adds it
      (:meth:`~.request.WriteRequest.group_into` decides); the groups beside and
      above it are kept (empty ones made where there are none).
    - A node written into the file's group at its path (``"a"``, ``"a-"``, ``"r+"``)
      keeps the groups of the file that the tree does not hold; a node the file has
      no group for becomes a new group (``"a"`` and ``"a-"``; refused by ``"r+"`` and
      by region writes).  In a tree of several nodes, ``append_dim`` extends the
      groups of the file that have that dimension; in the others the node's
      variables are written as ``mode`` writes variables without it, and a node that
      has the dimension there is refused; ``region`` applies to each node with the
      dimensions it has; ``"auto"`` finds it from the coordinates the node sees (its
      own or inherited, in the tree and in the file).
    - A node described whole takes its encoding (the tree's, by node) for every
      variable.

    Raises
    ------
    ValueError, TypeError, KeyError
        For every way the tree does not fit the file, naming the group.
    """
    group = request.group
    walk = _Walk(base, request, single=not tree.children)
    placed = walk.subtree(tree, group, held)
    try:
        metadata = graft(base.metadata if base is not None else None, group, placed)
    except ValueError as err:
        what = f"group {'/' + group!r}" if group else "tree"
        raise HurrayValueError(f"the {what} does not fit the file: {err}") from err
    warn_changed_attrs(walk.changed, "the file")
    return ResolvedWrite(metadata, tuple(walk.writes))
