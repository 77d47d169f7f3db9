"""xarray-hurray: Hilbert- and Morton-ordered N-D array storage for xarray, Zarr and Dask."""

from .layout import LayoutError

__version__ = "0.1.0"

__all__ = ["LayoutError", "__version__"]
