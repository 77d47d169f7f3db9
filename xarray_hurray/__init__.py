"""xarray-hurray: Hilbert- and Morton-ordered N-D array storage for xarray, Zarr and Dask."""

from . import accessor as _accessor  # noqa: F401  (registers Dataset.hurray)
from .container import HurrayFormatError
from .layout import LayoutError
from .xarray_backend import open_hurray
from .xarray_writer import to_hurray

__version__ = "0.1.0"

__all__ = ["HurrayFormatError", "LayoutError", "__version__", "open_hurray", "to_hurray"]
