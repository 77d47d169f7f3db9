"""Zarr adapter: the ``hurray`` codec for Zarr v3, its numcodecs twin for Zarr v2, and
shards whose inner chunks lie along the Hilbert curve.

The codecs and shards need zarr (or numcodecs) and load on first use of their names;
:mod:`.conventions`, the attributes of the conventions a Zarr group holds, needs
neither, so that reading a pyramid's record (:mod:`xarray_hurray.xarray.pyramid`)
imports no zarr.  :mod:`xarray_hurray.layout` does not need zarr either.
"""

from typing import TYPE_CHECKING

from ..errors import UnsupportedZarrError
from ..lazy import lazy_attributes

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "HilbertShardingCodec": "xarray_hurray.zarr.shards",
        "HurrayCodec": "xarray_hurray.zarr.codec",
        "HurrayNumcodec": "xarray_hurray.zarr.numcodecs_codec",
        "using_hilbert_shards": "xarray_hurray.zarr.shards",
    },
)
