"""The Zarr v3 ``hurray`` codec: round trips, metadata, validation, registration."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr
from depth import check_property, depths
from hypothesis import strategies as st
from skilling_reference import coords_to_hilbert

from xarray_hurray.layout import HilbertLayout, LayoutError, MortonLayout
from xarray_hurray.zarr import HurrayCodec

GOLDEN = Path(__file__).parents[1] / "data" / "hurray_codec_golden.json"
DTYPES = ["bool", "uint8", "int16", "int32", "uint64", "float32", "float64", "complex64", "M8[s]"]


def sample(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    """Random values of a supported data type."""
    raw = np.random.default_rng(seed).integers(0, 2**31, size=shape)
    kind = np.dtype(dtype).kind
    if kind == "b":
        return raw % 2 == 1
    if kind in "fc":
        return (raw / 7).astype(dtype)
    if kind == "M":
        return raw.view(dtype)
    return raw.astype(dtype)


def create(shape, chunks, dtype, codec, store=None) -> zarr.Array:
    return zarr.create_array(
        store if store is not None else zarr.storage.MemoryStore(),
        shape=shape,
        chunks=chunks,
        dtype=dtype,
        serializer=codec,
        compressors=None,
        fill_value=0,
    )


@st.composite
def arrays_with_codecs(draw):
    """An array shape, a chunk shape and a codec whose layout holds the chunk shape."""
    kind = draw(st.sampled_from(["hilbert", "morton", "row-major", "auto"]))
    rank = draw(st.integers(2, 3) if kind == "hilbert" else st.integers(1, 3))
    if kind == "hilbert":
        chunks = (1 << draw(st.integers(1, 3)),) * rank
    else:
        chunks = tuple(draw(st.lists(st.integers(1, 9), min_size=rank, max_size=rank)))
    shape = tuple(draw(st.integers(1, 3 * c)) for c in chunks)
    endian = draw(st.sampled_from(["little", "big"]))
    dtype = draw(st.sampled_from(DTYPES))
    return shape, chunks, dtype, HurrayCodec(kind, endian=endian)


@depths(20, 200)
def test_round_trip_matches_numpy(examples) -> None:
    check_property(examples, round_trip_matches_numpy, arrays_with_codecs(), st.data())


def round_trip_matches_numpy(case: tuple, data: st.DataObject) -> None:
    shape, chunks, dtype, codec = case
    expected = sample(shape, dtype)
    array = create(shape, chunks, dtype, codec)
    array[...] = expected
    np.testing.assert_array_equal(array[...], expected)
    box = tuple(
        slice(*sorted(data.draw(st.lists(st.integers(0, n), min_size=2, max_size=2))))
        for n in shape
    )
    np.testing.assert_array_equal(array[box], expected[box])


@pytest.mark.parametrize("dtype", ["bool", ">i2"])
@pytest.mark.parametrize(
    ("kind", "shape", "chunks"),
    [
        ("morton", (1,), (2,)),
        ("morton", (1, 1), (2, 1)),
        ("morton", (2, 1), (3, 2)),
        ("row-major", (1,), (2,)),
        ("auto", (1,), (3,)),
        ("hilbert", (1, 1), (2, 2)),
        ("hilbert", (1, 3), (2, 2)),
    ],
)
def test_arrays_smaller_than_a_chunk_match_numpy(kind, shape, chunks, dtype) -> None:
    """Edge chunks mostly outside the array, read whole and through every box."""
    for seed in range(4):  # both values of a one-element bool array
        expected = sample(shape, dtype, seed)
        array = create(shape, chunks, dtype, HurrayCodec(kind, endian="big"))
        array[...] = expected
        np.testing.assert_array_equal(array[...], expected)
        spans = [[slice(a, b) for a in range(n + 1) for b in range(a, n + 1)] for n in shape]
        for box in itertools.product(*spans):
            np.testing.assert_array_equal(array[box], expected[box])


def test_orthogonal_and_coordinate_selections_match_numpy() -> None:
    expected = sample((40, 37), "float32")
    array = create((40, 37), (16, 16), "float32", HurrayCodec("hilbert"))
    array[...] = expected
    rows, cols = np.array([0, 3, 17, 39]), np.array([1, 30, 36])
    np.testing.assert_array_equal(array.oindex[rows, cols], expected[np.ix_(rows, cols)])
    np.testing.assert_array_equal(array.vindex[rows[:3], cols], expected[rows[:3], cols])
    np.testing.assert_array_equal(array[5, 2:30:3], expected[5, 2:30:3])


def test_unwritten_chunks_read_as_fill_value() -> None:
    array = zarr.create_array(
        zarr.storage.MemoryStore(),
        shape=(8, 8),
        chunks=(4, 4),
        dtype="int16",
        serializer=HurrayCodec("hilbert"),
        compressors=None,
        fill_value=-3,
    )
    array[:4, :4] = 1
    expected = np.full((8, 8), -3, dtype="int16")
    expected[:4, :4] = 1
    np.testing.assert_array_equal(array[...], expected)
    np.testing.assert_array_equal(array[2:6, 3:7], expected[2:6, 3:7])


def test_compressed_round_trip() -> None:
    expected = sample((33, 20), "int32")
    array = zarr.create_array(
        zarr.storage.MemoryStore(),
        shape=expected.shape,
        chunks=(16, 16),
        dtype="int32",
        serializer=HurrayCodec("morton"),
        compressors=zarr.codecs.ZstdCodec(),
    )
    array[...] = expected
    np.testing.assert_array_equal(array[3:30, 1:19], expected[3:30, 1:19])


def test_metadata_round_trips() -> None:
    for codec in [
        HurrayCodec("hilbert"),
        HurrayCodec("row-major", endian="big"),
        HurrayCodec(MortonLayout((3, 4))),
        HurrayCodec({"name": "hilbert", "hilbert_rank": 2, "hilbert_order": 3}),
    ]:
        assert HurrayCodec.from_dict(json.loads(json.dumps(codec.to_dict()))) == codec
    assert HurrayCodec({"name": "hilbert", "hilbert_rank": 2, "hilbert_order": 3}).to_dict() == {
        "name": "hurray",
        "configuration": {
            "layout": {"name": "hilbert", "hilbert_rank": 2, "hilbert_order": 3},
            "endian": "little",
        },
    }


@pytest.mark.parametrize("dtype", ["float32", "int16", "uint8"])
def test_the_dict_form_without_endian_behaves_like_the_class(dtype) -> None:
    values = np.arange(64 * 64, dtype=dtype).reshape(64, 64)
    by_name = {"name": "hurray", "configuration": {"layout": "auto"}}
    arrays = [
        zarr.create_array(
            zarr.storage.MemoryStore(), shape=values.shape, chunks=(32, 32), dtype=dtype,
            serializer=serializer, compressors=None,
        )
        for serializer in (by_name, HurrayCodec("auto"))
    ]  # fmt: skip
    for array in arrays:
        array[...] = values
        np.testing.assert_array_equal(array[3:40, 5:9], values[3:40, 5:9])
    assert arrays[0].metadata.codecs[0] == arrays[1].metadata.codecs[0]


def test_one_byte_types_drop_endian_in_metadata() -> None:
    array = create((4, 4), (4, 4), "uint8", HurrayCodec("hilbert"))
    assert array.metadata.codecs[0].to_dict()["configuration"] == {"layout": "hilbert"}


@pytest.mark.parametrize(
    ("codec", "chunks", "dtype", "error", "message"),
    [
        (HurrayCodec("hilbert"), (32, 16), "float32", LayoutError, "hilbert constraint 1"),
        (HurrayCodec("hilbert"), (32,), "float32", LayoutError, "1 dimension; .*constraint 3"),
        (
            HurrayCodec(HilbertLayout(2, 4)),
            (32, 32),
            "float32",
            LayoutError,
            r"is not 2\*\*hilbert_order = 16",
        ),
        (HurrayCodec(MortonLayout((2, 2))), (5, 4), "int8", LayoutError, "morton rule"),
        (HurrayCodec("morton"), (4, 4), "str", TypeError, "fixed-size"),
    ],
)
def test_creation_rejects_chunks_the_layout_cannot_hold(codec, chunks, dtype, error, message):
    store = zarr.storage.MemoryStore()
    with pytest.raises(error, match=message):
        create(tuple(2 * c for c in chunks), chunks, dtype, codec, store=store)
    assert not any(key.endswith("zarr.json") for key in store._store_dict)


def test_a_hilbert_misfit_says_what_to_do_and_which_array() -> None:
    with pytest.raises(LayoutError) as caught:
        create((4, 64, 64), (1, 64, 64), "float32", HurrayCodec("hilbert"))
    message = str(caught.value)
    assert message.startswith("the hurray codec of an array of shape (4, 64, 64) and chunks")
    assert "cannot hold chunks (1, 64, 64)" in message
    assert "sides are all the same power of two" in message
    assert "'auto'" in message and "'morton'" in message


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"layout": "zigzag"}, "unknown hurray layout 'zigzag'"),
        ({"layout": {"name": "morton"}}, "morton_bits"),
        ({"layout": "hilbert", "endian": "middle"}, "endian must be"),
    ],
)
def test_bad_configuration_is_named(arguments, message) -> None:
    with pytest.raises(ValueError, match=message):
        HurrayCodec.from_dict({"name": "hurray", "configuration": arguments})


def test_golden_bytes_per_layout() -> None:
    """The stored bytes of a small array per layout, kept in a file to catch any change."""
    for case in json.loads(GOLDEN.read_text()):
        expected = np.arange(np.prod(case["shape"]), dtype=case["dtype"]).reshape(case["shape"])
        store = zarr.storage.MemoryStore()
        array = create(
            case["shape"], case["shape"], case["dtype"], HurrayCodec(case["layout"]), store
        )
        array[...] = expected
        stored = store._store_dict["c/0/0"].to_bytes()
        assert stored.hex() == case["bytes"], case["layout"]
        np.testing.assert_array_equal(array[...], expected)


def test_hilbert_bytes_follow_the_reference_curve() -> None:
    side, order = 8, 3
    values = np.arange(side * side, dtype="<u2").reshape(side, side)
    store = zarr.storage.MemoryStore()
    create(values.shape, values.shape, "uint16", HurrayCodec("hilbert"), store)[...] = values
    stored = np.frombuffer(store._store_dict["c/0/0"].to_bytes(), dtype="<u2")
    for i in range(side):
        for j in range(side):
            assert stored[coords_to_hilbert([i, j], 2, order)] == values[i, j]


def test_big_endian_bytes() -> None:
    store = zarr.storage.MemoryStore()
    values = np.arange(16, dtype="int32").reshape(4, 4)
    create((4, 4), (4, 4), "int32", HurrayCodec("row-major", endian="big"), store)[...] = values
    assert store._store_dict["c/0/0"].to_bytes() == values.astype(">i4").tobytes()


@pytest.mark.slow
def test_fresh_process_reads_without_importing_the_package(tmp_path: Path) -> None:
    values = sample((20, 24), "float64")
    array = create(values.shape, (8, 8), "float64", HurrayCodec("hilbert"), str(tmp_path))
    array[...] = values
    np.save(tmp_path / "expected.npy", values)
    script = (
        "import numpy as np, zarr\n"
        f"a = zarr.open_array({str(tmp_path)!r}, mode='r')\n"
        f"expected = np.load({str(tmp_path / 'expected.npy')!r})\n"
        "np.testing.assert_array_equal(a[...], expected)\n"
        "print(type(a.metadata.codecs[0]).__module__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "xarray_hurray.zarr.codec"
