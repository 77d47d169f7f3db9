"""Which zarr-python is installed, and which of its internals the shard hooks can use.

The Hilbert-placed shards subclass zarr's ``ShardingCodec`` and override private
methods, so they check both the version and the methods they rely on.
"""

from __future__ import annotations

import zarr
from zarr.codecs.sharding import ShardingCodec

from ..errors import UnsupportedZarrError

SUPPORTED_ZARR = ((3, 1), (4, 0))
"""Supported zarr-python versions: at least the first, below the second."""


def zarr_version(version: str | None = None) -> tuple[int, int]:
    """``(major, minor)`` of a zarr-python version string, by default the installed one."""
    parts = (version or zarr.__version__).split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError) as err:
        raise UnsupportedZarrError(
            f"cannot read the zarr version {version!r}", value=version
        ) from err


ZARR_ORDERS_SUBCHUNKS = hasattr(ShardingCodec, "_subchunk_order_iter")
"""zarr >= 3.3 asks ``_subchunk_order_iter`` for the order of inner chunks in a shard;
older versions hard-code Morton order in ``_encode_shard_dict``."""

ZARR_MERGES_SHARD_READS = hasattr(ShardingCodec, "_load_partial_shard_maybe")
"""zarr >= 3.3 coalesces the byte ranges of a region read inside a shard; older
versions issue one request per inner chunk."""

ZARR_VALIDATES_INNER_CODECS = hasattr(ShardingCodec, "_validate_inner_codecs")
"""zarr >= 3.3 validates the codecs inside a shard against the inner chunk shape."""

_REQUIRED = {
    "_decode_partial_single",
    "_get_chunks_per_shard",
    "_is_total_shard",
    "_shard_index_size",
    "_encode_shard_index",
    "_load_shard_index_maybe",
}


def check_zarr_support(version: str | None = None) -> None:
    """Raise :class:`UnsupportedZarrError` unless the shard hooks work with zarr ``version``.

    Parameters
    ----------
    version
        A zarr-python version string; by default the installed one.
    """
    found = zarr_version(version)
    low, high = SUPPORTED_ZARR
    if not low <= found < high:
        raise UnsupportedZarrError(
            f"Hilbert-placed shards support zarr-python >= {low[0]}.{low[1]} and "
            f"< {high[0]}.{high[1]}; zarr {version or zarr.__version__} is installed",
            value=version or zarr.__version__,
        )
    missing = sorted(name for name in _REQUIRED if not hasattr(ShardingCodec, name))
    if not ZARR_ORDERS_SUBCHUNKS and not hasattr(ShardingCodec, "_encode_shard_dict"):
        missing.append("_encode_shard_dict or _subchunk_order_iter")
    if missing:
        raise UnsupportedZarrError(
            f"zarr {zarr.__version__}'s ShardingCodec lacks {', '.join(missing)}, which "
            f"Hilbert-placed shards hook into; use a zarr-python between "
            f"{low[0]}.{low[1]} and {high[0]}.{high[1]}"
        )
