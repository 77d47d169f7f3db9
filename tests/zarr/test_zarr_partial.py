"""Partial decode: a region read fetches only the byte runs of the region."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from hypothesis import given
from hypothesis import strategies as st
from zarr_pipelines import PIPELINES, pipeline

from xarray_hurray.layout import LayoutError, layout_for_shape
from xarray_hurray.testing import CountingStore
from xarray_hurray.zarr import HurrayCodec

CHUNK = (32, 32)


def written(serializer) -> tuple[zarr.Array, CountingStore, np.ndarray]:
    """A 64 x 64 float32 array of 2 x 2 chunks, and its counting store with the log cleared."""
    expected = np.arange(64 * 64, dtype="float32").reshape(64, 64)
    store = CountingStore(zarr.storage.MemoryStore())
    array = zarr.create_array(
        store,
        shape=expected.shape,
        chunks=CHUNK,
        dtype="float32",
        serializer=serializer,
        compressors=None,
    )
    array[...] = expected
    store.log.clear()
    return array, store, expected


@pytest.mark.parametrize("name", PIPELINES)
@pytest.mark.parametrize("kind", ["hilbert", "morton", "row-major"])
def test_reads_exactly_the_runs_of_the_box(kind, name) -> None:
    with pipeline(name):
        array, store, expected = written(HurrayCodec(kind))
        np.testing.assert_array_equal(array[4:12, 9:15], expected[4:12, 9:15])
    runs = layout_for_shape(kind, CHUNK).ranges((4, 9), (12, 15), CHUNK)
    # and one request for the chunk's last byte, which shows the chunk's size
    assert store.log.requests == len(runs) + 1
    assert store.log.bytes_read == 4 * int((runs[:, 1] - runs[:, 0]).sum()) + 1


@pytest.mark.parametrize("name", PIPELINES)
def test_fewer_bytes_than_the_bytes_codec(name) -> None:
    with pipeline(name):
        hurray, hurray_store, expected = written(HurrayCodec("hilbert"))
        plain, plain_store, _ = written(zarr.codecs.BytesCodec())
        region = (slice(16, 32), slice(32, 48))  # an aligned quarter of chunk (0, 1)
        np.testing.assert_array_equal(hurray[region], expected[region])
        np.testing.assert_array_equal(plain[region], expected[region])
    if name == "fused":
        assert type(hurray.async_array.codec_pipeline).__name__ == "FusedCodecPipeline"
    assert plain_store.log.bytes_read == 32 * 32 * 4
    # the quarter is the last in the curve: its run, asked for one byte more, shows
    # that the chunk ends where it must
    assert hurray_store.log.bytes_read == 16 * 16 * 4
    assert hurray_store.log.requests == 1


def test_compressed_chunks_are_read_whole() -> None:
    store = CountingStore(zarr.storage.MemoryStore())
    array = zarr.create_array(
        store,
        shape=(32, 32),
        chunks=CHUNK,
        dtype="int32",
        serializer=HurrayCodec("hilbert"),
        compressors=zarr.codecs.GzipCodec(),
    )
    array[...] = 7
    store.log.clear()
    assert (array[3:5, 3:5] == 7).all()
    assert store.log.requests == 1


@pytest.mark.parametrize("name", PIPELINES)
@given(data=st.data())
def test_any_selection_matches_numpy(name, data) -> None:
    with pipeline(name):
        array, _, expected = written(HurrayCodec(data.draw(st.sampled_from(["hilbert", "morton"]))))
    lo = data.draw(st.tuples(st.integers(0, 63), st.integers(0, 63)))
    hi = tuple(data.draw(st.integers(a, 64)) for a in lo)
    step = data.draw(st.integers(1, 5))
    region = (slice(lo[0], hi[0], step), slice(lo[1], hi[1]))
    np.testing.assert_array_equal(array[region], expected[region])
    rows = np.array(sorted(data.draw(st.sets(st.integers(0, 63), min_size=1, max_size=6))))
    np.testing.assert_array_equal(array.oindex[rows, lo[1] : hi[1]], expected[rows, lo[1] : hi[1]])


@pytest.mark.parametrize("cut", [4, 6])
@pytest.mark.parametrize(
    ("region", "message"),
    [
        ((slice(None), slice(None)), "must hold 4096 bytes"),
        ((slice(16, 32), slice(16, 32)), "returned"),  # ends at the chunk's last element
    ],
)
def test_truncated_chunk_is_named(cut, region, message) -> None:
    store = zarr.storage.MemoryStore()
    array = zarr.create_array(
        store,
        shape=CHUNK,
        chunks=CHUNK,
        dtype="float32",
        serializer=HurrayCodec("row-major"),
        compressors=None,
    )
    array[...] = 1
    stored = store._store_dict["c/0/0"]
    store._store_dict["c/0/0"] = type(stored).from_bytes(stored.to_bytes()[:-cut])
    with pytest.raises(LayoutError, match=rf"row-major chunk of shape \(32, 32\).*{message}"):
        array[region]


@pytest.mark.parametrize("stored_bytes", [5, -1, 1, 36])
@pytest.mark.parametrize("kind", ["row-major", "morton"])
@pytest.mark.parametrize("region", [(3, 3), (slice(3, 5), slice(3, 6)), (5, 5)])
def test_a_chunk_of_the_wrong_size_is_refused_by_region_reads(stored_bytes, kind, region):
    # 3 x 3 uint32 chunks hold 36 bytes (64 with Morton padding); a chunk of 5 bytes,
    # one byte short or long, or 36 bytes too long is found out by a read of the first
    # element of a chunk, an inner box or the last element
    full = layout_for_shape(kind, (3, 3)).buffer_size((3, 3)) * 4
    stored_bytes = stored_bytes if stored_bytes == 5 else full + stored_bytes
    store = zarr.storage.MemoryStore()
    array = zarr.create_array(
        store, shape=(6, 6), chunks=(3, 3), dtype="uint32",
        serializer=HurrayCodec(kind), compressors=None,
    )  # fmt: skip
    array[...] = np.arange(36, dtype="uint32").reshape(6, 6)
    stored = store._store_dict["c/1/1"]
    store._store_dict["c/1/1"] = type(stored).from_bytes(bytes(range(stored_bytes)))
    with pytest.raises(LayoutError, match=rf"chunk of shape \(3, 3\) must hold {full} bytes"):
        array[region]
    np.testing.assert_array_equal(array[0:3, 0:3], np.arange(36).reshape(6, 6)[:3, :3])
