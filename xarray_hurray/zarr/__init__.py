"""Zarr adapter: the ``hurray`` codec for Zarr v3, its numcodecs twin for Zarr v2, and
shards whose inner chunks lie along the Hilbert curve.

Importing this package needs zarr; :mod:`xarray_hurray.layout` does not.
"""

from ..errors import UnsupportedZarrError
from .codec import HurrayCodec
from .numcodecs_codec import HurrayNumcodec
from .shards import HilbertShardingCodec, using_hilbert_shards

__all__ = [
    "HilbertShardingCodec",
    "HurrayCodec",
    "HurrayNumcodec",
    "UnsupportedZarrError",
    "using_hilbert_shards",
]
