"""Hilbert-placed shards: standard metadata, Hilbert placement, merged region reads."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from skilling_reference import coords_to_hilbert

from xarray_hurray.layout import LayoutError
from xarray_hurray.testing import CountingStore
from xarray_hurray.zarr import (
    HilbertShardingCodec,
    HurrayCodec,
    UnsupportedZarrError,
    using_hilbert_shards,
)
from xarray_hurray.zarr.compat import ZARR_MERGES_SHARD_READS, check_zarr_support

SHARD, INNER = (64, 64), (16, 16)
EXPECTED = np.arange(128 * 128, dtype="float32").reshape(128, 128)


def sharded(codec, store=None) -> tuple[zarr.Array, CountingStore]:
    store = store if store is not None else CountingStore(zarr.storage.MemoryStore())
    array = zarr.create_array(
        store,
        shape=EXPECTED.shape,
        chunks=SHARD,
        dtype="float32",
        serializer=codec,
        compressors=None,
    )
    array[...] = EXPECTED
    return array, store


def stored_offsets(store: CountingStore, key: str = "c/0/0") -> np.ndarray:
    """Byte offset of each inner chunk, from the index at the end of a shard (no CRC check)."""
    shard = store._store._store_dict[key].to_bytes()
    n = (SHARD[0] // INNER[0]) * (SHARD[1] // INNER[1])
    index = np.frombuffer(shard[-(16 * n + 4) : -4], dtype="<u8").reshape(
        SHARD[0] // INNER[0], -1, 2
    )
    return index[..., 0]


def test_inner_chunks_follow_the_hilbert_curve() -> None:
    _, store = sharded(HilbertShardingCodec(chunk_shape=INNER))
    offsets = stored_offsets(store)
    keys = np.array([[coords_to_hilbert([i, j], 2, 2) for j in range(4)] for i in range(4)])
    assert np.array_equal(np.argsort(offsets, axis=None), np.argsort(keys, axis=None))


def test_metadata_is_standard_and_plain_zarr_reads_it() -> None:
    array, store = sharded(HilbertShardingCodec(chunk_shape=INNER, codecs=[HurrayCodec("hilbert")]))
    assert array.metadata.to_dict()["codecs"][0]["name"] == "sharding_indexed"
    reopened = zarr.open_array(store, mode="r")
    assert type(reopened.metadata.codecs[0]) is zarr.codecs.ShardingCodec
    np.testing.assert_array_equal(reopened[...], EXPECTED)
    np.testing.assert_array_equal(reopened[5:77, 30:121], EXPECTED[5:77, 30:121])


@pytest.mark.parametrize("index_location", ["start", "end"])
def test_partial_writes_and_index_location(index_location) -> None:
    codec = HilbertShardingCodec(chunk_shape=INNER, index_location=index_location)
    array, store = sharded(codec)
    array[10:40, 20:90] = -1
    expected = EXPECTED.copy()
    expected[10:40, 20:90] = -1
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[...], expected)
    with using_hilbert_shards():
        np.testing.assert_array_equal(
            zarr.open_array(store, mode="r")[7:50, 3:70], expected[7:50, 3:70]
        )


def region_read(store: CountingStore, region) -> tuple[int, int]:
    """Requests and bytes of one region read through a freshly opened array."""
    array = zarr.open_array(store, mode="r")
    store.log.clear()
    np.testing.assert_array_equal(array[region], EXPECTED[region])
    return store.log.requests, store.log.bytes_read


def test_merged_reads_need_fewer_requests_on_hilbert_shards() -> None:
    region = (slice(16, 64), slice(16, 64))  # 3 x 3 inner chunks of shard (0, 0)
    _, hilbert_store = sharded(HilbertShardingCodec(chunk_shape=INNER))
    _, morton_store = sharded(zarr.codecs.ShardingCodec(chunk_shape=INNER))
    with using_hilbert_shards():
        hilbert = region_read(hilbert_store, region)
        morton = region_read(morton_store, region)
    plain = region_read(hilbert_store, region)
    if ZARR_MERGES_SHARD_READS:
        assert hilbert[0] <= morton[0] <= plain[0] + 1
    else:
        chunk_bytes = 16 * 16 * 4
        index_bytes = 16 * 16 + 4
        assert plain == (1 + 9, index_bytes + 9 * chunk_bytes)
        assert hilbert == (1 + 2, plain[1])
        assert morton == (1 + 4, plain[1])


def test_inner_codecs_are_validated_at_creation() -> None:
    codec = HilbertShardingCodec(chunk_shape=(16, 8), codecs=[HurrayCodec("hilbert")])
    with pytest.raises(LayoutError, match="hilbert constraint 1"):
        zarr.create_array(
            zarr.storage.MemoryStore(),
            shape=(64, 64),
            chunks=(32, 32),
            dtype="int32",
            serializer=codec,
            compressors=None,
        )


@pytest.mark.parametrize("version", ["3.0.10", "2.18.4", "4.0.0", "three"])
def test_unsupported_zarr_versions_are_named(version) -> None:
    with pytest.raises(UnsupportedZarrError, match="zarr"):
        check_zarr_support(version)


def test_installed_zarr_is_supported() -> None:
    check_zarr_support()
