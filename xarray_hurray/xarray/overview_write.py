"""Writing overviews: ``to_hurray(ds, path, overviews=...)`` and writes into a file
with overviews, which go into every level (see :mod:`.overviews`)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Hashable
from typing import Any, Literal

import numpy as np
import xarray as xr

from ..container import DatasetMeta
from ..errors import HurrayValueError
from ..zarr.conventions import CONVENTION_ATTRS
from .backend import file_dimensions
from .overview_build import Target, build_levels
from .overview_plan import choose_resampling, with_encoding
from .overviews import pyramid_tree
from .pyramid import PYRAMID_ATTR, Pyramid, level_names, recorded_pyramid
from .request import LevelsRequest, WriteRequest
from .tree import NodeEncoding


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

    Blocks map the file at ``offset``, the length of its header, read once when the
    file is made: ``np.load`` would parse the header again for every block, with
    ``ast``, which some Python 3.11 releases break on when threads parse at once.
    Each block maps the file anew and lets it go, so that the pages a write or a read
    touched do not stay in the process's memory.
    """

    def __init__(self, path: str, shape: tuple[int, ...], dtype: np.dtype, offset: int) -> None:
        self.path = path
        self.shape = shape
        self.dtype = dtype
        self.ndim = len(shape)
        self.offset = offset

    @classmethod
    def create(cls, path: str, shape: tuple[int, ...], dtype: np.dtype) -> NpyArray:
        """A new file of zeros at ``path``."""
        created = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
        return cls(path, shape, dtype, created.offset)

    def _map(self, mode: Literal["r", "r+"]) -> np.memmap:
        return np.memmap(self.path, self.dtype, mode, self.offset, self.shape)

    def __getitem__(self, key: Any) -> np.ndarray:
        return np.array(self._map("r")[key])

    def __setitem__(self, key: Any, value: np.ndarray) -> None:
        # no flush: the pages are the file's, which later reads (of this machine) see
        self._map("r+")[key] = value


def scratch_target(scratch: Callable[[], str]) -> Target:
    """What makes the ``.npy`` files the coarser levels of a write are computed into,
    in the directory ``scratch`` makes (on first use: a pyramid of arrays in memory
    needs none)."""
    made = itertools.count()
    directory: list[str] = []

    def create(shape: tuple[int, ...], dtype: np.dtype) -> NpyArray:
        if not directory:
            directory.append(scratch())
        return NpyArray.create(f"{directory[0]}/{next(made)}.npy", shape, dtype)

    return create


def _level_0(encoding: NodeEncoding) -> dict[str, NodeEncoding]:
    """The encoding of a tree of levels, by node path: ``encoding``, that of the input's
    variables, goes to level 0."""
    return {"0": encoding} if encoding else {}


def new_pyramid(
    ds: xr.Dataset,
    request: LevelsRequest,
    encoding: NodeEncoding,
    scratch: Callable[[], str] | None = None,
) -> tuple[xr.DataTree, dict[str, NodeEncoding]]:
    """The tree of the new pyramid of ``ds`` that ``request`` asks for, and the
    encoding of its groups by path (``encoding``, that of ``ds``'s variables, goes to
    level 0; the other levels take their storage settings from level 0's).

    With ``scratch`` (which makes a scratch directory), the coarser levels of
    dask-backed variables are computed into files there before anything is written
    (:func:`~.overview_build.build_levels`), so that the write may store the levels
    in any order: level 0's source is read twice in all, whatever the number of
    levels; without it (a write checked, nothing written) they stay lazy.

    Raises
    ------
    HurrayTypeError, HurrayValueError
        As :func:`~.overviews.multiscale` raises.
    """
    ds = with_encoding(ds, encoding)
    pyramid = request.pyramid(ds)
    target = None if scratch is None else scratch_target(scratch)
    tree = pyramid_tree(build_levels(ds, pyramid, target), pyramid)
    return stored_attrs(tree), _level_0(encoding)


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
    request: WriteRequest,
    encoding: NodeEncoding,
    scratch: Callable[[], str] | None = None,
) -> tuple[xr.DataTree, dict[str, NodeEncoding]] | None:
    """What a write of ``ds`` into the file of ``metadata`` writes, where that is not
    ``ds`` as given (None): for a Dataset written into a file with overviews, the
    tree that writes it into every level, made as the file's levels were
    (:func:`update_tree`), once the file's record is checked against its levels
    (:func:`check_levels`), and the encoding of its groups by path (``encoding``,
    that of ``ds``'s variables, goes to level 0, as for a new pyramid).

    Raises
    ------
    HurrayValueError
        For a write into one level (``request.group`` in a level, a tree with a
        level's group), a record that disagrees with the file's levels, levels asked
        for (``overviews=``) other than the file's or for a file without any, and as
        :func:`update_tree` raises.
    """
    group, levels = request.group, request.levels
    pyramid = recorded_pyramid(metadata.attrs)
    if pyramid is None:
        if levels is not None:
            raise HurrayValueError(
                "overviews= with a write into a file (append_dim, region, or mode 'a' or "
                "'r+') writes into its levels, but the file has no overviews: leave out "
                "overviews=, or write the file anew with mode='w'"
            )
        return None
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
        return None
    if levels is not None:
        levels.check_against(ds, pyramid)
    ds = with_encoding(ds, encoding)
    tree = update_tree(ds, pyramid, request.append_dim, request.region, scratch)
    # the root and the levels keep the file's attributes: where the levels lie (proj,
    # spatial) is the file's, which new values that name no CRS would otherwise drop
    for node in tree.subtree:
        node.attrs = dict(metadata.group(node.path.strip("/")).attrs)
    return tree, _level_0(encoding)


def update_tree(
    ds: xr.Dataset,
    pyramid: Pyramid,
    append_dim: Hashable | None,
    region: Any,
    scratch: Callable[[], str] | None = None,
) -> xr.DataTree:
    """The tree that writes ``ds`` into every level of a file holding ``pyramid``: its
    levels made the same way (an append along a dimension the pyramid does not
    coarsen extends each level by the coarsened new values), computed before they are
    written as :func:`new_pyramid` computes them.

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
    target = None if scratch is None else scratch_target(scratch)
    levels = build_levels(ds, Pyramid(pyramid.dims, pyramid.factors, resampling), target)
    return stored_attrs(pyramid_tree(levels, pyramid))
