"""The numcodecs ``hurray`` codec: same bytes as the Zarr v3 codec, Zarr v2 arrays."""

from __future__ import annotations

import json

import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given
from hypothesis import strategies as st

from xarray_hurray.layout import LayoutError, MortonLayout
from xarray_hurray.zarr import HurrayCodec
from xarray_hurray.zarr.numcodecs_codec import HurrayNumcodec

CASES = [
    ("hilbert", (8, 8), "<f4", "little"),
    ("hilbert", (4, 4, 4), ">i8", "big"),
    ("morton", (5, 7), "<u2", "big"),
    ("morton", (3, 2, 9), "|b1", None),
    ("row-major", (6, 5), "<c8", "little"),
    ("auto", (16, 16), "|u1", None),
]


def values(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    raw = np.arange(int(np.prod(shape))).reshape(shape) * 7 + 3
    return (raw % 2 == 0) if np.dtype(dtype).kind == "b" else raw.astype(dtype)


@pytest.mark.parametrize(("layout", "shape", "dtype", "endian"), CASES)
def test_same_bytes_as_the_v3_codec(layout, shape, dtype, endian) -> None:
    expected = values(shape, dtype)
    store = zarr.storage.MemoryStore()
    array = zarr.create_array(
        store,
        shape=shape,
        chunks=shape,
        dtype=dtype,
        serializer=HurrayCodec(layout, endian=endian or "little"),
        compressors=None,
    )
    array[...] = expected
    v3_bytes = store._store_dict["c/" + "/".join("0" * len(shape))].to_bytes()
    codec = HurrayNumcodec(layout, shape, dtype, endian=endian or "little")
    assert bytes(codec.encode(expected)) == v3_bytes
    np.testing.assert_array_equal(codec.decode(v3_bytes), expected)


@given(st.sampled_from(CASES))
def test_config_round_trips_through_the_registry(case) -> None:
    layout, shape, dtype, endian = case
    codec = HurrayNumcodec(layout, shape, dtype, endian=endian or "little")
    config = json.loads(json.dumps(codec.get_config()))
    again = numcodecs.get_codec(config)
    assert isinstance(again, HurrayNumcodec)
    assert again.get_config() == config
    data = values(shape, dtype)
    np.testing.assert_array_equal(again.decode(codec.encode(data)), data)


def test_decode_into_out() -> None:
    codec = HurrayNumcodec("morton", (3, 5), "<i4")
    data = values((3, 5), "<i4")
    out = np.empty((3, 5), dtype="<i4")
    codec.decode(codec.encode(data), out=out)
    np.testing.assert_array_equal(out, data)


def test_explicit_descriptor_in_config() -> None:
    codec = HurrayNumcodec(MortonLayout((3, 3)), (5, 5), "<f8")
    assert codec.get_config()["layout"] == {"name": "morton", "morton_bits": [3, 3]}
    assert len(codec.encode(values((5, 5), "<f8"))) == 64 * 8


def test_zarr_v2_array_round_trip() -> None:
    expected = values((20, 27), "<f8")
    array = zarr.create_array(
        zarr.storage.MemoryStore(),
        shape=expected.shape,
        chunks=(8, 8),
        dtype="<f8",
        zarr_format=2,
        filters=[HurrayNumcodec("hilbert", (8, 8), "<f8")],
        compressors=numcodecs.Zstd(),
    )
    array[...] = expected
    np.testing.assert_array_equal(array[...], expected)
    np.testing.assert_array_equal(array[3:17, 5:26], expected[3:17, 5:26])


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        (("hilbert", (8, 4), "<f4"), LayoutError, "hilbert constraint 1"),
        (("spiral", (8, 8), "<f4"), LayoutError, "unknown hurray layout"),
        (("morton", (8, 8), "<U3"), TypeError, "fixed-size"),
        (("morton", (8, 8), "<f4", None), ValueError, "needs 'endian'"),
        (("morton", (8, 8), "|u1", "middle"), ValueError, "endian must be"),
    ],
)
def test_bad_arguments_are_named(arguments, error, message) -> None:
    with pytest.raises(error, match=message):
        HurrayNumcodec(*arguments)


def test_wrong_buffer_size_is_named() -> None:
    with pytest.raises(ValueError, match=r"expected a chunk of shape \(4, 4\)"):
        HurrayNumcodec("hilbert", (4, 4), "<f4").encode(np.zeros(15, dtype="<f4"))


@pytest.mark.parametrize("key", ["layout", "shape", "dtype"])
def test_config_without_a_required_key_is_named(key) -> None:
    config = HurrayNumcodec("morton", (3, 5), "<i4").get_config()
    del config[key]
    with pytest.raises(ValueError, match=f"configuration needs '{key}'"):
        HurrayNumcodec.from_config(config)
