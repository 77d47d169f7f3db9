"""xarray-hurray: Hilbert- and Morton-ordered N-D array storage for xarray, Zarr and Dask."""

from .container import HurrayFormatError, open_reader
from .layout import LayoutError
from .xarray import to_hurray, to_zarr

__version__ = "0.1.0"

__all__ = ["HurrayFormatError", "LayoutError", "__version__", "open_reader", "to_hurray", "to_zarr"]
