"""numcodecs.hurray: the hurray bytes as a bytes-to-bytes codec after zarr's bytes."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from xarray_hurray.layout import layout_for_shape
from xarray_hurray.zarr import HurrayCodec, HurrayNumcodec
from xarray_hurray.zarr.permute_codec import HurrayPermuteCodec

CHUNK = (16, 16)


def stored(store: zarr.storage.MemoryStore, key: str) -> bytes:
    return store._store_dict[key].to_bytes()


@pytest.mark.parametrize("dtype", ["float32", ">i2", "bool", "uint8"])
@pytest.mark.parametrize("kind", ["hilbert", "morton", "row-major"])
def test_same_bytes_as_the_hurray_serializer(kind, dtype) -> None:
    rng = np.random.default_rng(0)
    values = (rng.random((40, 35)) * 100).astype(dtype)
    native = values.dtype.newbyteorder("<") if values.dtype.itemsize > 1 else values.dtype
    layout = layout_for_shape(kind, CHUNK)
    permute = HurrayPermuteCodec(HurrayNumcodec(layout, CHUNK, native))
    store = zarr.storage.MemoryStore()
    common = {"shape": values.shape, "chunks": CHUNK, "dtype": native, "compressors": None}
    zarr.create_array(store, name="serializer", serializer=HurrayCodec(layout), **common)[...] = (
        values
    )
    chain = zarr.create_array(
        store,
        name="chain",
        serializer=zarr.codecs.BytesCodec(endian="little"),
        **{**common, "compressors": [permute]},
    )
    chain[...] = values
    for key in ("c/0/0", "c/2/2"):  # an edge chunk too, padded to the chunk shape
        assert stored(store, f"chain/{key}") == stored(store, f"serializer/{key}")
    reopened = zarr.open_array(store, path="chain", mode="r")
    assert reopened.metadata.to_dict()["codecs"][1]["name"] == "numcodecs.hurray"
    np.testing.assert_array_equal(reopened[...], values)
    np.testing.assert_array_equal(reopened[3:37, 5:29], values[3:37, 5:29])


def test_metadata_round_trip_and_numcodecs_config() -> None:
    codec = HurrayPermuteCodec(HurrayNumcodec("morton", (4, 6), "<f8"))
    assert HurrayPermuteCodec.from_dict(codec.to_dict()) == codec
    assert codec.codec_config == {
        "id": "hurray",
        "layout": "morton",
        "shape": [4, 6],
        "dtype": "<f8",
        "endian": "little",
    }
    with pytest.raises(ValueError, match=r"numcodecs\.hurray"):
        HurrayPermuteCodec.from_dict({"name": "hurray", "configuration": {}})
