"""Writing overviews: ``to_hurray(ds, path, overviews=...)`` and writes into a file
with overviews, which go into every level (see :mod:`.overviews`)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from ..errors import HurrayTypeError, HurrayValueError
from ..zarr.conventions import CONVENTION_ATTRS
from .overviews import (
    PYRAMID_ATTR,
    Pyramid,
    build_levels,
    choose_resampling,
    multiscale,
    pyramid_tree,
)


def stored_attrs(tree: xr.DataTree) -> xr.DataTree:
    """``tree`` with the JSON objects of the root's :data:`CONVENTION_ATTRS` as JSON
    text, which a Hurray file's attributes hold (they hold no mappings)."""
    attrs = dict(tree.attrs)
    changed = {
        k: json.dumps(attrs[k]) for k in CONVENTION_ATTRS if not isinstance(attrs.get(k, ""), str)
    }
    if not changed:
        return tree
    tree = tree.copy()
    tree.attrs = {**attrs, **changed}
    return tree


class NpyArray:
    """A ``.npy`` file as an array dask reads blocks of (opened for each block, so that
    it pickles as its path, for workers sharing the file system) and ``da.store``
    writes blocks into."""

    def __init__(self, path: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.path = path
        self.shape = shape
        self.dtype = dtype
        self.ndim = len(shape)

    def __getitem__(self, key: Any) -> np.ndarray:
        return np.asarray(np.load(self.path, mmap_mode="r")[key])

    def __setitem__(self, key: Any, value: np.ndarray) -> None:
        # no flush: the pages are the file's, which later reads (of this machine) see
        np.load(self.path, mmap_mode="r+")[key] = value


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
            np.lib.format.open_memmap(path, mode="w+", dtype=var.dtype, shape=var.shape)
            target = NpyArray(path, var.shape, var.dtype)
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


def write_with_overviews(
    ds: xr.Dataset,
    path: Any,
    overviews: int | Sequence[int],
    *,
    dims: Sequence[Hashable] | None,
    resampling: str | Mapping[Hashable, str] | None,
    encoding: Mapping[Hashable, Mapping[str, Any]] | None,
    compute: bool,
    write: Callable[..., Any],
    **kwargs: Any,
) -> Any:
    """``to_hurray(ds, path, overviews=...)``: the pyramid of ``ds`` written by ``write``
    (``to_hurray``) as a tree; with ``compute``, its coarser levels computed first in
    one pass into a temporary directory (see :func:`materialize`).

    Raises
    ------
    TypeError, ValueError
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
    tree = multiscale(ds, overviews, dims=dims, resampling=resampling)
    settings = {"/0": encoding} if encoding else {}
    if not compute:
        return write(stored_attrs(tree), path, encoding=settings, compute=False, **kwargs)
    with tempfile.TemporaryDirectory(prefix="hurray-overviews-") as directory:
        return write(stored_attrs(materialize(tree, directory)), path, encoding=settings, **kwargs)


def recorded_pyramid(attrs: Mapping[Any, Any]) -> Pyramid | None:
    """The pyramid a file's root attributes record, or None."""
    text = attrs.get(PYRAMID_ATTR)
    return Pyramid.from_record(text) if isinstance(text, str) else None


def update_tree(
    ds: xr.Dataset, pyramid: Pyramid, append_dim: Hashable | None, region: Any
) -> xr.DataTree:
    """The tree that writes ``ds`` into every level of a file holding ``pyramid``: its
    levels made the same way (an append along a dimension the pyramid does not
    coarsen extends each level by the coarsened new values).

    Raises
    ------
    ValueError
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
