"""Zarr adapter: the ``hurray`` codec for Zarr v3, its numcodecs twin for Zarr v2, and
shards whose inner chunks lie along the Hilbert curve.

Importing this package needs zarr; :mod:`xarray_hurray.layout` does not.
"""

from .codec import HurrayCodec

__all__ = ["HurrayCodec"]
