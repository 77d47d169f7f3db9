"""Morton codes against a bit-by-bit reading of the packing convention."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from xarray_hurray.layout import LayoutError, morton_decode, morton_encode
from xarray_hurray.layout.bits import MAX_KEY_BITS


def reference_morton(point: list[int], bits: list[int]) -> int:
    """Level by level from bit 0; within a level the lower dimension is more significant."""
    code, position = 0, 0
    for level in range(max(bits, default=0)):
        active = [d for d in range(len(bits)) if level < bits[d]]
        for d in reversed(active):
            code |= ((point[d] >> level) & 1) << position
            position += 1
    return code


@st.composite
def bits_and_points(draw):
    rank = draw(st.integers(1, 6))
    # within the encoder's limit: six dimensions of up to 12 bits could exceed it
    bits = draw(
        st.lists(st.integers(0, 12), min_size=rank, max_size=rank).filter(
            lambda b: sum(b) <= MAX_KEY_BITS
        )
    )
    points = draw(
        st.lists(st.tuples(*[st.integers(0, 2**b - 1) for b in bits]), min_size=1, max_size=20)
    )
    return bits, [list(p) for p in points]


@given(bits_and_points())
def test_encode_follows_the_packing_convention(case):
    bits, points = case
    got = morton_encode(np.array(points, dtype=np.int64), bits)
    assert [int(c) for c in got] == [reference_morton(p, bits) for p in points]


@given(bits_and_points())
def test_decode_inverts_encode(case):
    bits, points = case
    coords = np.array(points, dtype=np.int64)
    np.testing.assert_array_equal(morton_decode(morton_encode(coords, bits), bits), coords)


@pytest.mark.parametrize("bits", [(3, 3), (2, 2, 2), (4, 1), (0, 3), (2, 0, 1), (5,)])
def test_codes_of_the_whole_box_are_a_permutation(bits):
    shape = tuple(1 << b for b in bits)
    coords = np.indices(shape).reshape(len(bits), -1).T
    codes = morton_encode(coords, bits)
    np.testing.assert_array_equal(np.sort(codes), np.arange(1 << sum(bits), dtype=np.uint64))


def test_equal_bits_use_the_hilbert_packing():
    rng = np.random.default_rng(3)
    rank, order = 3, 7
    coords = rng.integers(0, 2**order, size=(500, rank))
    expected = np.zeros(len(coords), dtype=np.uint64)
    for b in range(order):
        for d in range(rank):
            bit = (coords[:, d] >> b) & 1
            expected |= bit.astype(np.uint64) << np.uint64(b * rank + (rank - 1 - d))
    np.testing.assert_array_equal(morton_encode(coords, (order,) * rank), expected)


def test_a_dimension_with_zero_bits_drops_out():
    coords = np.array([[1, 0, 2], [3, 0, 1]])
    np.testing.assert_array_equal(
        morton_encode(coords, (2, 0, 2)), morton_encode(coords[:, [0, 2]], (2, 2))
    )


@pytest.mark.parametrize(
    ("coords", "bits", "message"),
    [
        ([[0, 4]], (2, 2), "below 2\\*\\*2"),
        ([[0, 1]], (2, 0), "below 2\\*\\*0"),
        ([[-1, 0]], (2, 2), "non-negative"),
        ([[0, 0, 0]], (2, 2), "shape \\(\\.\\.\\., 2\\)"),
        ([[0.0, 1.0]], (2, 2), "must be integers"),
        ([[0, 0]], (40, 30), "exceeds the 64-bit index limit"),
        ([[0, 0]], (2, -1), "non-negative"),
        ([[0, 0]], "ab", "sequence of integers"),
    ],
)
def test_encode_rejects(coords, bits, message):
    with pytest.raises(LayoutError, match=message):
        morton_encode(coords, bits)


def test_decode_rejects_codes_past_the_key_space():
    with pytest.raises(LayoutError, match="below 2\\*\\*5"):
        morton_decode([32], (3, 2))
