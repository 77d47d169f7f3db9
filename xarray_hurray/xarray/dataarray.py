"""A DataArray stored as xarray stores one: the one-variable Dataset that
``DataArray.to_netcdf`` and ``DataArray.to_zarr`` write, which
``xr.open_dataarray`` turns back into the array, name and all."""

from __future__ import annotations

import xarray as xr

from .compat import DATAARRAY_NAME, DATAARRAY_VARIABLE


def array_dataset(array: xr.DataArray) -> xr.Dataset:
    """The Dataset that stores ``array``, by xarray's rules for writing a DataArray.

    - An unnamed array becomes the variable ``"__xarray_dataarray_variable__"``, a
      name ``open_dataarray`` gives back as ``None``.
    - An array named as one of its coordinates or dimensions (which a group cannot
      hold twice) becomes that variable too, and the Dataset's attribute
      ``"__xarray_dataarray_name__"`` keeps its name for ``open_dataarray``.
    - Any other array is the variable of its name.

    The array's attributes and encoding go with its variable; the Dataset has no
    attributes but that one.
    """
    if array.name is None:
        return array.to_dataset(name=DATAARRAY_VARIABLE)
    if array.name in array.coords or array.name in array.dims:
        dataset = array.to_dataset(name=DATAARRAY_VARIABLE)
        dataset.attrs[DATAARRAY_NAME] = array.name
        return dataset
    return array.to_dataset()
