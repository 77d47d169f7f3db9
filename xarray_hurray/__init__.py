"""xarray-hurray: Hilbert- and Morton-ordered N-D array storage for xarray, Zarr and Dask."""

from .container import open_reader
from .errors import (
    HurrayError,
    HurrayFormatError,
    HurrayTypeError,
    HurrayValueError,
    LayoutError,
    SourceChangedError,
)
from .xarray import multiscale, to_hurray, to_zarr

__version__ = "0.1.0"
"""The package version, written only here: pyproject.toml reads it (a dynamic version)."""

__all__ = [
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
