"""``Dataset.hurray``, ``DataArray.hurray`` and ``DataTree.hurray``: the writers as
accessor methods, and the choice of an overview level.

Importing this module registers the accessors with xarray's decorators (``import
xarray_hurray`` imports it when xarray is loaded, :mod:`.entrypoint` when xarray opens
a file), so it imports xarray alone: the writers and the overviews (dask, zarr) load
when a method runs, and a process that only reads never loads them (the choice of a
level, :mod:`.overview_read`, imports neither).
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

import xarray as xr

from ..errors import HurrayTypeError, HurrayValueError
from ..io import UploadTarget

if TYPE_CHECKING:
    from dask.delayed import Delayed

    from .overview_read import Levels


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
    level of a pyramid.

    xarray keeps one accessor per tree, so what ``level`` reads of the tree's levels
    (:class:`~.overview_read.Levels`) is read once and kept here, and read again only
    where the tree's ``multiscales`` attribute or its children are no longer those
    it was read from.
    """

    _obj: xr.DataTree

    def __init__(self, obj: xr.DataTree) -> None:
        super().__init__(obj)
        self._levels: tuple[Any, tuple[Any, ...], Levels] | None = None

    def _read_levels(self) -> Levels:
        from .overview_read import Levels

        tree = self._obj
        record = tree.attrs.get("multiscales")
        children = tuple(tree.children.values())
        kept = self._levels
        # the same objects: attributes and children replaced since are read anew
        if (
            kept is None
            or kept[0] is not record
            or len(kept[1]) != len(children)
            or any(a is not b for a, b in zip(kept[1], children, strict=True))
        ):
            self._levels = kept = (record, children, Levels.of(tree))
        return kept[2]

    def level(
        self,
        number: int | Mapping[Hashable, int] | None = None,
        resolution: Mapping[Hashable, float] | None = None,
        *,
        size: Mapping[Hashable, int] | None = None,
    ) -> xr.Dataset:
        """A level of a pyramid (see :func:`xarray_hurray.multiscale`): level
        ``number`` (0: the finest), or the level for an output of ``size`` cells along
        the dimensions it names, or cells no larger than ``resolution`` (coordinate
        units): the coarsest level that is that fine, else level 0.

        Parameters
        ----------
        number
            The level's number, as ``tree.hurray.level(2)``; a mapping here is taken
            as ``size`` (the first argument before numbers were taken).
        resolution
            The largest cells wanted, by dimension.
        size
            The least cells wanted, by dimension.

        Raises
        ------
        ValueError, TypeError
            When the tree has no overviews (no ``multiscales`` layout at its root), the
            number is no level's, the number is given with ``size`` or
            ``resolution``, or these name no dimension of the levels.
        """
        if isinstance(number, Mapping):
            if size is not None:
                raise HurrayTypeError("size is given twice: as the first argument and size=")
            number, size = None, number
        levels = self._read_levels()
        if number is None:
            name = levels.pick(size, resolution)
        elif size is not None or resolution is not None:
            raise HurrayValueError(
                "give the level's number, or the wanted size or resolution, not both"
            )
        else:
            name = levels.numbered(number)
        return self._obj.children[name].to_dataset()
