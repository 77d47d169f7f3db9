"""``Dataset.hurray``, ``DataArray.hurray`` and ``DataTree.hurray``: the writers as
accessor methods, and the choice of an overview level.

Importing this module registers the accessors with xarray's decorators (``import
xarray_hurray`` imports it when xarray is loaded, :mod:`.entrypoint` when xarray opens
a file), so it imports xarray alone: the writers and the overviews (dask, zarr) load
when a method runs, and a process that only reads never loads them.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

import xarray as xr

from ..io import UploadTarget

if TYPE_CHECKING:
    from dask.delayed import Delayed


class _Writer:
    """What every accessor holds: the object it writes with :func:`to_hurray` and
    :func:`to_zarr`."""

    def __init__(self, obj: xr.Dataset | xr.DataArray | xr.DataTree) -> None:
        self._obj = obj

    def to_hurray(
        self, path: str | os.PathLike[str] | UploadTarget, **kwargs: Any
    ) -> Delayed | None:
        """Write it to ``path``; the arguments and the result are those of
        :func:`xarray_hurray.to_hurray`."""
        from .hurray_write import to_hurray

        return to_hurray(self._obj, path, **kwargs)

    def to_zarr(self, store: Any = None, **kwargs: Any) -> Any:
        """Write it to a Zarr v3 store of Hilbert-placed shards; the arguments and the
        result are those of :func:`xarray_hurray.to_zarr`."""
        from .zarr_write import to_zarr

        return to_zarr(self._obj, store, **kwargs)


@xr.register_dataset_accessor("hurray")
class HurrayAccessor(_Writer):
    """Hurray methods of a Dataset: ``ds.hurray.to_hurray(path, ...)`` and
    ``ds.hurray.to_zarr(store, ...)``."""


@xr.register_dataarray_accessor("hurray")
class HurrayArrayAccessor(_Writer):
    """Hurray methods of a DataArray: ``da.hurray.to_hurray(path, ...)`` and
    ``da.hurray.to_zarr(store, ...)``, which store it as ``DataArray.to_netcdf`` and
    ``DataArray.to_zarr`` do, for ``xr.open_dataarray`` to read back."""


@xr.register_datatree_accessor("hurray")
class HurrayTreeAccessor(_Writer):
    """Hurray methods of a DataTree: ``tree.hurray.to_hurray(path, ...)`` writes every
    node as a group of one file, ``tree.hurray.to_zarr(store, ...)`` as a group of one
    Zarr store (a pyramid's levels and its ``multiscales`` too); ``level`` picks a
    level of a pyramid."""

    _obj: xr.DataTree

    def level(
        self,
        size: Mapping[Hashable, int] | None = None,
        resolution: Mapping[Hashable, float] | None = None,
    ) -> xr.Dataset:
        """The level of a pyramid (see :func:`xarray_hurray.multiscale`) for an output
        of ``size`` cells along the dimensions it names, or cells no larger than
        ``resolution`` (coordinate units): the coarsest level that is that fine, else
        level 0.

        Raises
        ------
        ValueError
            When the tree has no overviews (no ``multiscales`` layout at its root), or
            the arguments name no dimension of the levels.
        """
        from .overviews import pick_level

        return self._obj.children[pick_level(self._obj, size, resolution)].to_dataset()
