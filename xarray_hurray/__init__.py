"""xarray-hurray: Hilbert- and Morton-ordered N-D array storage for xarray, Zarr and Dask.

Importing the package loads the format (numpy and the codecs) and nothing of xarray,
pandas, dask, zarr or fsspec: the writers load on first use of their names, and the
``.hurray`` accessors are registered here if xarray is loaded, else at xarray's first
open of a file (:mod:`.lazy`).
"""

from typing import TYPE_CHECKING

from .container import open_reader
from .errors import (
    HurrayChangedError,
    HurrayError,
    HurrayFormatError,
    HurrayTypeError,
    HurrayValueError,
    LayoutError,
    SourceChangedError,
)
from .lazy import lazy_attributes, register_accessors_if_xarray_is_loaded

if TYPE_CHECKING:
    from .xarray.hurray_write import to_hurray
    from .xarray.overviews import multiscale
    from .xarray.zarr_write import to_zarr

__version__ = "0.1.0"
"""The package version, written only here: pyproject.toml reads it (a dynamic version)."""

__all__ = [
    "HurrayChangedError",
    "HurrayError",
    "HurrayFormatError",
    "HurrayTypeError",
    "HurrayValueError",
    "LayoutError",
    "SourceChangedError",
    "__version__",
    "multiscale",
    "open_reader",
    "to_hurray",
    "to_zarr",
]

__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "multiscale": "xarray_hurray.xarray.overviews",
        "to_hurray": "xarray_hurray.xarray.hurray_write",
        "to_zarr": "xarray_hurray.xarray.zarr_write",
    },
)

register_accessors_if_xarray_is_loaded()
