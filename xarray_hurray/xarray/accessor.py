"""``Dataset.hurray`` and ``DataTree.hurray``: the writers as accessor methods."""

from __future__ import annotations

import os
from typing import Any

import xarray as xr
from dask.delayed import Delayed

from ..io import UploadTarget
from .writer import to_hurray
from .zarr_write import to_zarr


@xr.register_dataset_accessor("hurray")
class HurrayAccessor:
    """Hurray methods of a Dataset: ``ds.hurray.to_hurray(path, ...)`` and
    ``ds.hurray.to_zarr(store, ...)``."""

    def __init__(self, dataset: xr.Dataset) -> None:
        self._dataset = dataset

    def to_hurray(
        self, path: str | os.PathLike[str] | UploadTarget, **kwargs: Any
    ) -> Delayed | None:
        """Write the dataset to ``path``; the arguments and the result are those of
        :func:`xarray_hurray.to_hurray`."""
        return to_hurray(self._dataset, path, **kwargs)

    def to_zarr(self, store: Any = None, **kwargs: Any) -> Any:
        """Write the dataset to a Zarr v3 store of Hilbert-placed ``hurray`` shards; the
        arguments and the result are those of :func:`xarray_hurray.to_zarr`."""
        return to_zarr(self._dataset, store, **kwargs)


@xr.register_datatree_accessor("hurray")
class HurrayTreeAccessor:
    """Hurray methods of a DataTree: ``tree.hurray.to_hurray(path, ...)`` writes every
    node as a group of one file."""

    def __init__(self, tree: xr.DataTree) -> None:
        self._tree = tree

    def to_hurray(
        self, path: str | os.PathLike[str] | UploadTarget, **kwargs: Any
    ) -> Delayed | None:
        """Write the tree to ``path``; the arguments and the result are those of
        :func:`xarray_hurray.to_hurray`."""
        return to_hurray(self._tree, path, **kwargs)
