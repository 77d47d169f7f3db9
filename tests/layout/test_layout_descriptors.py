"""Layout descriptors: validation, buffers, padding, configs and golden buffers."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from layout_strategies import layouts_with_shapes

from xarray_hurray.layout import (
    PERMUTATION_CACHE,
    HilbertLayout,
    LayoutError,
    MortonLayout,
    RowMajorLayout,
    hilbert_encode,
    layout_for_shape,
    layout_from_config,
    morton_encode,
)

GOLDEN = Path(__file__).parents[1] / "data" / "layout_buffers.json"


def brute_force_positions(layout, shape):
    """Buffer position of each element, straight from the key functions."""
    coords = np.indices(shape).reshape(len(shape), math.prod(shape)).T
    if isinstance(layout, HilbertLayout):
        return hilbert_encode(coords, layout.order).astype(np.int64)
    if isinstance(layout, MortonLayout):
        return morton_encode(coords, layout.morton_bits).astype(np.int64)
    return np.arange(math.prod(shape))


@given(layouts_with_shapes(), st.sampled_from(["<f4", ">i2", "u1", "c16", "?"]))
def test_encode_places_each_element_at_its_key(case, dtype):
    layout, shape = case
    array = np.arange(math.prod(shape)).reshape(shape).astype(dtype)
    buffer = layout.encode(array)
    assert buffer.shape == (layout.buffer_size(shape),)
    assert buffer.dtype == array.dtype
    np.testing.assert_array_equal(buffer[brute_force_positions(layout, shape)], array.reshape(-1))
    np.testing.assert_array_equal(layout.decode(buffer, shape), array)


@given(layouts_with_shapes())
def test_padding_holds_the_fill_value_and_is_never_read(case):
    layout, shape = case
    array = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    buffer = layout.encode(array, fill_value=-7.5)
    is_padding = np.ones(buffer.size, dtype=bool)
    is_padding[brute_force_positions(layout, shape)] = False
    assert np.all(buffer[is_padding] == -7.5)
    buffer[is_padding] = np.nan  # garbage in the padding must not reach the data
    np.testing.assert_array_equal(layout.decode(buffer, shape), array)


@pytest.mark.parametrize(
    ("make", "shape", "message"),
    [
        (lambda: HilbertLayout(2, 2), (4, 8), "hilbert constraint 1: shape\\[1\\] = 8"),
        (lambda: HilbertLayout(2, 2), (3, 4), "hilbert constraint 1: shape\\[0\\] = 3"),
        (lambda: HilbertLayout(3, 2), (4, 4), "hilbert constraint 2"),
        (lambda: HilbertLayout(1, 2), (4,), "hilbert constraint 3"),
        (lambda: HilbertLayout(0, 2), (), "hilbert constraint 3"),
        (lambda: HilbertLayout(2, 0), (1, 1), "hilbert constraint 4"),
        (lambda: HilbertLayout(3, 22), (1, 1, 1), "64-bit index limit"),
        (lambda: HilbertLayout(2.0, 2), (4, 4), "must be integers"),
        (lambda: MortonLayout((2, 2)), (5, 4), "morton rule: shape\\[0\\] = 5 exceeds"),
        (lambda: MortonLayout((2, 0)), (4, 2), "morton rule: shape\\[1\\] = 2 exceeds"),
        (lambda: MortonLayout((2, 2)), (4,), "morton rank"),
        (lambda: RowMajorLayout(), (-1, 3), "non-negative"),
        (lambda: RowMajorLayout(), ("a",), "sequence of integers"),
        (lambda: RowMajorLayout(), (2.5, 3), "sequence of integers"),  # not cut to 2
        (lambda: HilbertLayout(2, 2), (4.0, 4), "sequence of integers"),
        (lambda: HilbertLayout(2, 2), [4, -4], "non-negative"),
    ],
)
def test_validation_names_the_violated_rule(make, shape, message):
    with pytest.raises(LayoutError, match=message):
        make().validate(shape)


@pytest.mark.parametrize("shape", [(4, 4), [4, 4], (np.int64(4), np.array(4)), np.array([4, 4])])
def test_a_shape_of_any_integers_validates_to_a_tuple_of_ints(shape):
    parsed = HilbertLayout(2, 2).validate(shape)
    assert parsed == (4, 4) and all(type(n) is int for n in parsed)


def test_layout_error_is_a_value_error():
    assert issubclass(LayoutError, ValueError)


@pytest.mark.parametrize(
    ("layout", "shape", "size"),
    [
        (HilbertLayout(3, 2), (4, 4, 4), 64),
        (MortonLayout((3, 2)), (5, 3), 32),
        (MortonLayout((4, 4)), (5, 3), 256),
        (MortonLayout(()), (), 1),
        (RowMajorLayout(), (5, 3), 15),
        (RowMajorLayout(), (), 1),
    ],
)
def test_buffer_size(layout, shape, size):
    assert layout.buffer_size(shape) == size


def test_rank_zero_morton_holds_one_element():
    layout = MortonLayout(())
    buffer = layout.encode(np.array(2.5))
    assert buffer.tolist() == [2.5]
    assert layout.decode(buffer, ()) == np.array(2.5)
    np.testing.assert_array_equal(layout.ranges((), ()), [[0, 1]])


def test_decode_rejects_a_buffer_of_the_wrong_size():
    with pytest.raises(LayoutError, match="must hold 16 elements, got 15"):
        HilbertLayout(2, 2).decode(np.zeros(15), (4, 4))


@given(layouts_with_shapes())
def test_config_round_trips(case):
    layout, _ = case
    config = json.loads(json.dumps(layout.to_config()))
    assert layout_from_config(config) == layout


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"name": "tiled"}, "unknown layout 'tiled'"),
        ({"name": "hilbert", "hilbert_rank": 2}, "needs fields"),
        ({"name": "hilbert", "hilbert_rank": 1, "hilbert_order": 3}, "constraint 3"),
        ({"name": "hilbert", "hilbert_rank": 2, "hilbert_order": 0}, "constraint 4"),
        ({"name": "morton", "morton_bits": 3}, "list of integers"),
        ({"name": "morton", "morton_bits": [2.5, 1]}, "sequence of integers"),
        ({"name": "morton", "morton_bits": [True, 2]}, "sequence of integers"),
        ({"name": "morton", "morton_bits": ["3", 2]}, "sequence of integers"),
        ({"name": "row-major", "extra": 1}, "needs fields"),
        (["hilbert"], "mapping with a 'name'"),
    ],
)
def test_config_rejects(config, message):
    with pytest.raises(LayoutError, match=message):
        layout_from_config(config)


@pytest.mark.parametrize(
    ("kind", "shape", "expected"),
    [
        ("auto", (8, 8, 8), HilbertLayout(3, 3)),
        ("auto", (8, 4), MortonLayout((3, 2))),
        ("auto", (100,), MortonLayout((7,))),
        ("auto", (), RowMajorLayout()),
        ("morton", (5, 1, 9), MortonLayout((3, 0, 4))),
        ("row-major", (5, 3), RowMajorLayout()),
        ("hilbert", (16, 16), HilbertLayout(2, 4)),
    ],
)
def test_layout_for_shape(kind, shape, expected):
    assert layout_for_shape(kind, shape) == expected


@pytest.mark.parametrize(
    ("kind", "shape", "message"),
    [("hilbert", (8, 4), "constraint 1"), ("hilbert", (8,), "constraint 3"), ("x", (2,), "'x'")],
)
def test_layout_for_shape_rejects(kind, shape, message):
    with pytest.raises(LayoutError, match=message):
        layout_for_shape(kind, shape)


def test_permutations_are_cached_read_only():
    layout = HilbertLayout(2, 5)
    first = layout.positions((32, 32))
    assert first is layout.positions((32, 32))
    assert first.dtype == np.int32
    assert not first.flags.writeable
    assert PERMUTATION_CACHE.nbytes <= PERMUTATION_CACHE.max_bytes


def golden_cases():
    return [
        ("hilbert", HilbertLayout(2, 2), (4, 4)),
        ("hilbert", HilbertLayout(3, 1), (2, 2, 2)),
        ("hilbert", HilbertLayout(2, 3), (8, 8)),
        ("morton", MortonLayout((3, 2)), (5, 3)),
        ("morton", MortonLayout((1, 0, 2)), (2, 1, 3)),
        ("row-major", RowMajorLayout(), (2, 3)),
    ]


@pytest.mark.parametrize(("name", "layout", "shape"), golden_cases())
def test_golden_buffers(name, layout, shape):
    """Buffers of ``arange`` arrays (padding -1) must never change without a version bump."""
    golden = json.loads(GOLDEN.read_text())
    key = f"{name} {layout.to_config()} {list(shape)}"
    array = np.arange(math.prod(shape), dtype="<i2").reshape(shape)
    buffer = layout.encode(array, fill_value=-1)
    assert buffer.tolist() == golden[key]
    assert buffer.astype("<i2").tobytes() == np.array(golden[key], dtype="<i2").tobytes()


def _is_row_major_by_permutation(layout, shape) -> bool:
    positions = brute_force_positions(layout, shape)
    size = math.prod(shape)
    return layout.buffer_size(shape) == size and bool(np.array_equal(positions, np.arange(size)))


@given(layouts_with_shapes())
def test_a_layout_tells_row_major_order_as_its_permutation_does(case):
    layout, shape = case
    assert layout.is_row_major(shape) == _is_row_major_by_permutation(layout, shape)


@given(st.lists(st.integers(0, 3), max_size=4))
def test_morton_of_power_of_two_sides_is_row_major_where_its_keys_are(bits):
    """Sides of 2**bits, with no padding: (2, 2) and (1, 8) keep row-major order,
    (2, 4) and (4, 4) do not."""
    layout, shape = MortonLayout(tuple(bits)), tuple(1 << b for b in bits)
    assert layout.is_row_major(shape) == _is_row_major_by_permutation(layout, shape)
