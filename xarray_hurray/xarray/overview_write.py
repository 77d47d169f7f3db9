"""Writing overviews: ``to_hurray(ds, path, overviews=...)`` and writes into a file
with overviews, which go into every level (see :mod:`.overviews`)."""

from __future__ import annotations

import json
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dask.array as da
import numpy as np
import xarray as xr

from ..container import DatasetMeta
from ..errors import HurrayError, HurrayTypeError, HurrayValueError
from ..zarr.conventions import CONVENTION_ATTRS
from .backend import file_dimensions
from .overviews import (
    build_levels,
    choose_resampling,
    empty_mean,
    fill_of,
    is_count,
    mean_dtype,
    mean_of,
    plan_pyramid,
    pyramid_tree,
)
from .pyramid import PYRAMID_ATTR, Pyramid, checked_factors, level_names, recorded_pyramid
from .resampling import KERNELS, sum_dtype, valid_count, valid_sum, window_total


def stored_attrs(tree: xr.DataTree) -> xr.DataTree:
    """``tree`` with the JSON objects of each node's :data:`CONVENTION_ATTRS` as JSON
    text, which a Hurray file's attributes hold (they hold no mappings)."""
    changed = {
        node.path: {k: json.dumps(node.attrs[k]) for k in CONVENTION_ATTRS if k in node.attrs}
        for node in tree.subtree
        if any(not isinstance(node.attrs.get(k, ""), str) for k in CONVENTION_ATTRS)
    }
    if not changed:
        return tree
    tree = tree.copy()
    for path, texts in changed.items():
        node = tree[path]
        node.attrs = {**node.attrs, **texts}
    return tree


class NpyArray:
    """A ``.npy`` file as an array dask reads blocks of (opened for each block, so that
    it pickles as its path, for workers sharing the file system) and ``da.store``
    writes blocks into.

    ``filled`` names a directory and the number of files it holds once every block
    has been written (see :class:`Spill`): reading before then is refused rather
    than returning the zeros of blocks not yet written.

    Blocks map the file at ``offset``, the length of its header, read once when the
    file is made: ``np.load`` would parse the header again for every block, with
    ``ast``, which some Python 3.11 releases break on when threads parse at once.
    """

    def __init__(
        self,
        path: str,
        shape: tuple[int, ...],
        dtype: np.dtype,
        offset: int,
        filled: tuple[str, int] | None = None,
    ) -> None:
        self.path = path
        self.shape = shape
        self.dtype = dtype
        self.ndim = len(shape)
        self.offset = offset
        self.filled = filled

    @classmethod
    def create(
        cls,
        path: str,
        shape: tuple[int, ...],
        dtype: np.dtype,
        filled: tuple[str, int] | None = None,
    ) -> NpyArray:
        """A new file of zeros at ``path``."""
        created = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
        return cls(path, shape, dtype, created.offset, filled)

    def _map(self, mode: Literal["r", "r+"]) -> np.memmap:
        return np.memmap(self.path, self.dtype, mode, self.offset, self.shape)

    def __getitem__(self, key: Any) -> np.ndarray:
        if self.filled is not None:
            markers, expected = self.filled
            written = len(os.listdir(markers))
            if written != expected:
                raise HurrayError(
                    f"a coarser level was read before the level it is made of was written "
                    f"({written} of its {expected} blocks): the write took its variables out "
                    "of order"
                )
            self.filled = None  # complete: no need to look again
        return np.asarray(self._map("r")[key])

    def __setitem__(self, key: Any, value: np.ndarray) -> None:
        # no flush: the pages are the file's, which later reads (of this machine) see
        self._map("r+")[key] = value


def materialize(tree: xr.DataTree, directory: str) -> xr.DataTree:
    """``tree`` with the dask-backed variables its coarser levels compute stored in
    ``.npy`` files in ``directory`` by one dask computation (one pass over level 0,
    each level from the previous one's blocks) and read back from there lazily, so
    that writing the levels does not compute level 0 again for each of them."""
    base = tree.children["0"].to_dataset(inherit=False)
    sources: list[da.Array] = []
    targets: list[NpyArray] = []
    replaced: dict[tuple[str, Hashable], NpyArray] = {}
    for level_name, node in tree.children.items():
        if level_name == "0":
            continue
        for name, var in node.to_dataset(inherit=False).variables.items():
            if not isinstance(var.data, da.Array) or var.data is base.variables.get(name, var).data:
                continue  # in memory, or level 0's own (nothing coarsened)
            path = f"{directory}/{level_name}-{len(targets)}.npy"
            target = NpyArray.create(path, var.shape, var.dtype)
            sources.append(var.data)
            targets.append(target)
            replaced[(str(level_name), name)] = target
    if sources:
        da.store(sources, targets, lock=False)  # type: ignore[arg-type]  # arrays by protocol
    nodes: dict[str, xr.Dataset] = {"/": tree.to_dataset(inherit=False)}
    for level_name, node in tree.children.items():
        level = node.to_dataset(inherit=False)
        for (where, name), target in replaced.items():
            if where == level_name:
                var = level.variables[name]
                data = da.from_array(target, chunks=var.chunks, asarray=True, fancy=False)
                level[name] = xr.Variable(var.dims, data, var.attrs, var.encoding)
        nodes[f"/{level_name}"] = level
    return xr.DataTree.from_dict(nodes)


class Spill:
    """The state of one variable at one coarser level, stored while the level before
    is written: its values, or for ``"mean"`` its sums and counts of valid cells, in
    ``.npy`` files; each block of the level before that has stored its part leaves
    an empty file in ``markers``."""

    def __init__(
        self,
        directory: str,
        name: str,
        shape: tuple[int, ...],
        method: str,
        dtype: np.dtype,
        blocks: int,
    ) -> None:
        self.markers = f"{directory}/{name}.done"
        os.mkdir(self.markers)
        filled = (self.markers, blocks)
        kinds = [sum_dtype(dtype), np.dtype(np.int64)] if method == "mean" else [dtype]
        self.arrays = [
            NpyArray.create(f"{directory}/{name}.{k}.npy", shape, kind, filled)
            for k, kind in enumerate(kinds)
        ]

    def read(self, chunks: tuple[tuple[int, ...], ...]) -> list[da.Array]:
        """The stored state as dask arrays of ``chunks``."""
        return [da.from_array(a, chunks=chunks, asarray=True, fancy=False) for a in self.arrays]


def _tee(
    *blocks: np.ndarray,
    spill: Spill,
    axes: Sequence[int],
    step: int,
    method: str,
    fill: Any,
    empty: Any,
    out_dtype: np.dtype,
    block_info: Any = None,
) -> np.ndarray:
    """The values of a block of one level (``blocks``: its values, or its sums and
    counts), after storing the next level's state of the cells it covers in
    ``spill``.  The block starts on a window's edge along ``axes``; ``fill`` marks
    missing cells of level 0, ``empty`` is what a mean holds where none is valid."""
    if method != "mean":
        state = [KERNELS[method](blocks[0], axes, step, fill)]
        values = blocks[0]
    elif len(blocks) == 1:  # level 0's values
        state = [valid_sum(blocks[0], axes, step, fill), valid_count(blocks[0], axes, step, fill)]
        values = blocks[0]
    else:
        state = [window_total(b, axes, step, None) for b in blocks]
        values = mean_of(blocks[0], blocks[1], out_dtype, empty)
    location = block_info[0]["array-location"]
    where = tuple(
        slice(start // step, start // step + size) if k in axes else slice(start, stop)
        for k, ((start, stop), size) in enumerate(zip(location, state[0].shape, strict=True))
    )
    for array, part in zip(spill.arrays, state, strict=True):
        array[where] = part
    chunk = "-".join(map(str, block_info[0]["chunk-location"]))
    open(f"{spill.markers}/{chunk}", "wb").close()
    return values


def _on_windows(chunks: tuple[tuple[int, ...], ...], axes: Sequence[int], step: int) -> bool:
    """Whether every block but the last along ``axes`` is whole windows of ``step``."""
    return all(c % step == 0 for k in axes for c in chunks[k][:-1])


def single_pass(
    ds: xr.Dataset, pyramid: Pyramid, tree: xr.DataTree, directory: str
) -> xr.DataTree | None:
    """``tree`` (the pyramid of ``ds``) with its dask-backed variables written in one
    pass over ``ds``: each block of a level stores the next level's state of the cells
    it covers into ``directory`` as it is written (see :func:`_tee`), and each level
    reads the state the level before stored.  It relies on the writer writing the
    levels in order, which :class:`NpyArray` checks.  None where a level's blocks do
    not start on the next level's windows (then :func:`materialize` is used)."""
    steps = [f // p for f, p in zip(pyramid.factors, (1, *pyramid.factors), strict=False)]
    levels = [tree.children[str(k)].to_dataset(inherit=False) for k in range(len(steps) + 1)]
    plans = []
    for name, var in ds.variables.items():
        method = pyramid.resampling.get(str(name))
        if method is None or not isinstance(var.data, da.Array):
            continue  # not coarsened, or already computed
        axes = [k for k, d in enumerate(var.dims) if d in pyramid.dims]
        chunks = [var.data.chunks] + [
            levels[k].variables[name].chunks for k in range(1, len(levels))
        ]
        if not all(_on_windows(c, axes, s) for c, s in zip(chunks, steps, strict=False)):
            return None
        plans.append((name, var, method, axes, chunks))
    spills: dict[tuple[Hashable, int], Spill] = {}
    for number, name, var, method, axes, chunks in (
        (n, *plan) for plan in plans for n in range(len(levels))
    ):
        fill, empty = fill_of(var), empty_mean(var)
        dtype = mean_dtype(var.dtype) if method == "mean" and number else var.dtype
        if number == 0:
            inputs: list[da.Array] = [var.data]
        else:
            inputs = spills[(name, number)].read(chunks[number])
        if number == len(steps):  # the coarsest level stores nothing further
            data = (
                inputs[0]
                if method != "mean"
                else da.map_blocks(
                    mean_of, *inputs, dtype, empty, dtype=dtype, meta=np.array((), dtype)
                )
            )
        else:
            shape = levels[number + 1].variables[name].shape
            blocks = int(np.prod([len(c) for c in chunks[number]]))
            spill = Spill(directory, f"{name}-{number + 1}", shape, method, var.dtype, blocks)
            spills[(name, number + 1)] = spill
            data = da.map_blocks(
                _tee, *inputs, spill=spill, axes=axes, step=steps[number], method=method,
                fill=fill, empty=empty, out_dtype=dtype, dtype=dtype, meta=np.array((), dtype),
            )  # fmt: skip
        level = levels[number]
        held = level.variables[name]
        level[name] = xr.Variable(held.dims, data, held.attrs, held.encoding)
    nodes = {"/": tree.to_dataset(inherit=False)}
    nodes |= {f"/{k}": level for k, level in enumerate(levels)}
    return xr.DataTree.from_dict(nodes)


def new_pyramid(
    ds: xr.Dataset | xr.DataTree,
    request: LevelsRequest,
    encoding: Mapping[Hashable, Mapping[str, Any]],
    scratch: str | None,
) -> tuple[xr.DataTree, Mapping[Hashable, Any]]:
    """The tree of the new pyramid of ``ds`` that ``request`` asks for, and the
    encoding of its groups (``encoding``, that of ``ds``'s variables, goes to level 0;
    the other levels take their storage settings from level 0's).  With a
    ``scratch`` directory, the coarser levels are computed in one pass over ``ds``
    as the levels are written (see :func:`single_pass`; :func:`materialize` where
    the blocks do not fit it), their state stored there; without one, each level
    is computed by the write's own graph.

    Raises
    ------
    HurrayTypeError, HurrayValueError
        For a DataTree, and as :func:`multiscale` raises.
    """
    if not isinstance(ds, xr.Dataset):
        raise HurrayTypeError("overviews are made of a Dataset; write a DataTree's levels yourself")
    if encoding:
        # the levels take their storage settings from level 0's (see _level_encoding)
        ds = ds.copy()
        for name, settings in encoding.items():
            if name in ds.variables:
                ds[name].encoding = {**ds[name].encoding, **settings}
    pyramid = request.pyramid(ds)
    tree = pyramid_tree(build_levels(ds, pyramid), pyramid)
    if scratch is not None:
        tree = single_pass(ds, pyramid, tree, scratch) or materialize(tree, scratch)
    return stored_attrs(tree), ({"/0": encoding} if encoding else {})


@dataclass(frozen=True)
class LevelsRequest:
    """The ``overviews``, ``overview_dims`` and ``resampling`` arguments of a write."""

    overviews: int | Sequence[int]
    dims: str | Sequence[Hashable] | None = None
    resampling: str | Mapping[Hashable, str] | None = None

    def pyramid(self, ds: xr.Dataset) -> Pyramid:
        """The new pyramid of ``ds`` these ask for (see :func:`plan_pyramid`)."""
        return plan_pyramid(ds, self.overviews, self.dims, self.resampling)

    def check_against(self, ds: xr.Dataset, pyramid: Pyramid) -> None:
        """Check that these ask for the levels ``pyramid`` (a file's) has, for a
        write of ``ds`` into that file.

        Raises
        ------
        HurrayValueError
            Naming what differs.
        """
        if is_count(self.overviews):
            count = int(self.overviews)  # type: ignore[arg-type]  # an integer, checked
            # (no factor reaches 2**64: a larger count cannot be the file's)
            factors = tuple(2**k for k in range(1, min(count, 64) + 1))
        else:
            factors = checked_factors(self.overviews)
        asked: dict[str, Any] = {"factors": factors}
        held: dict[str, Any] = {"factors": pyramid.factors}
        if self.dims is not None:
            dims = self.dims
            asked["dims"] = (dims,) if isinstance(dims, str) else tuple(map(str, dims))
            held["dims"] = pyramid.dims
        if self.resampling is not None:
            chosen = choose_resampling(ds, pyramid.dims, self.resampling)
            asked["resampling"] = {k: v for k, v in chosen.items() if k in pyramid.resampling}
            held["resampling"] = {k: v for k, v in pyramid.resampling.items() if k in chosen}
        differ = [key for key in asked if asked[key] != held[key]]
        if differ:
            raise HurrayValueError(
                f"overviews= asks for levels other than the file's ({', '.join(differ)}: "
                f"{[asked[k] for k in differ]} against the file's {[held[k] for k in differ]}); "
                "a write into the file extends its levels as they were made: leave out "
                "overviews=, or write the file anew with mode='w'"
            )


def check_levels(metadata: DatasetMeta, pyramid: Pyramid) -> list[str]:
    """The groups of the levels of a file with overviews, finest first, once checked
    against its record ``pyramid``: the ``multiscales`` layout lists them, no other
    group is a level, and each level has the sizes its factor gives level 0's.

    Raises
    ------
    HurrayValueError
        Naming what disagrees.
    """
    names = [str(k) for k in range(len(pyramid.factors) + 1)]
    groups = {group.name: group for group in metadata.groups}
    laid = level_names(metadata.attrs, groups)
    others = [
        name
        for name, group in groups.items()
        if name not in names and (name.isdigit() or "overview_level" in group.attrs)
    ]
    if laid != names or others:
        raise HurrayValueError(
            f"the file's record of overviews ({PYRAMID_ATTR!r}: {len(pyramid.factors)} "
            f"coarser levels) disagrees with its levels (multiscales layout {laid}, groups "
            f"{sorted(groups)}): a write would leave levels that no longer match; write "
            "the file anew"
        )
    finest = file_dimensions(groups["0"])
    for name, factor in zip(names[1:], pyramid.factors, strict=True):
        sizes = file_dimensions(groups[name])
        expected = {d: -(-n // factor) if d in pyramid.dims else n for d, n in finest.items()}
        if sizes != expected:
            raise HurrayValueError(
                f"level {name} of the file (factor {factor} over {list(pyramid.dims)}) has "
                f"sizes {sizes}, where its factor gives level 0's {finest} as {expected}: "
                "a write would leave levels that no longer match; write the file anew"
            )
    return names


def into_levels(
    ds: xr.Dataset | xr.DataTree,
    metadata: DatasetMeta,
    group: str,
    append_dim: Hashable | None,
    region: Any,
    request: LevelsRequest | None,
) -> xr.Dataset | xr.DataTree:
    """What a write of ``ds`` into the file of ``metadata`` writes: ``ds``, or, for a
    Dataset written into a file with overviews, the tree that writes it into every
    level, made as the file's levels were (:func:`update_tree`), once the file's
    record is checked against its levels (:func:`check_levels`).

    Raises
    ------
    HurrayValueError
        For a write into one level (``group`` in a level, a tree with a level's
        group), a record that disagrees with the file's levels, ``request`` (the
        write's ``overviews=``) other than the file's levels or for a file without
        any, and as :func:`update_tree` raises.
    """
    pyramid = recorded_pyramid(metadata.attrs)
    if pyramid is None:
        if request is not None:
            raise HurrayValueError(
                "overviews= with a write into a file (append_dim, region, or mode 'a' or "
                "'r+') writes into its levels, but the file has no overviews: leave out "
                "overviews=, or write the file anew with mode='w'"
            )
        return ds
    names = check_levels(metadata, pyramid)
    if group or isinstance(ds, xr.DataTree):
        tops = {group.split("/")[0]} if group else {n.path.split("/")[1] for n in ds.subtree}
        inside = sorted(tops & set(names))
        if inside:
            where = f"group={group!r}" if group else f"the tree's groups {inside}"
            raise HurrayValueError(
                f"{where} would write into levels of the file's overviews ({names}) "
                "alone, leaving the others as they were: write the Dataset into the file "
                "without group=, which writes it into every level"
            )
        return ds
    if request is not None:
        request.check_against(ds, pyramid)
    tree = update_tree(ds, pyramid, append_dim, region)
    # the root and the levels keep the file's attributes: where the levels lie (proj,
    # spatial) is the file's, which new values that name no CRS would otherwise drop
    for node in tree.subtree:
        node.attrs = dict(metadata.group(node.path.strip("/")).attrs)
    return tree


def update_tree(
    ds: xr.Dataset, pyramid: Pyramid, append_dim: Hashable | None, region: Any
) -> xr.DataTree:
    """The tree that writes ``ds`` into every level of a file holding ``pyramid``: its
    levels made the same way (an append along a dimension the pyramid does not
    coarsen extends each level by the coarsened new values).

    Raises
    ------
    HurrayValueError
        For an append along a coarsened dimension, or a region write.
    """
    if append_dim is not None and str(append_dim) in pyramid.dims:
        raise HurrayValueError(
            f"cannot append along {append_dim!r}: the file's overviews coarsen it "
            f"({list(pyramid.dims)}), so its last coarse cells would change; append along "
            "another dimension, or write the file again"
        )
    if region is not None:
        raise HurrayValueError(
            "region writes into a file with overviews are not supported: its coarser "
            "levels would no longer match; write the file again"
        )
    # the file's resampling of the variables it holds, the default of new ones
    resampling = choose_resampling(ds, pyramid.dims, None)
    resampling |= {k: v for k, v in pyramid.resampling.items() if k in resampling}
    levels = build_levels(ds, Pyramid(pyramid.dims, pyramid.factors, resampling))
    return stored_attrs(pyramid_tree(levels, pyramid))
