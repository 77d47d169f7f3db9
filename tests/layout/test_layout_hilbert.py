"""Hilbert keys against the seed's algorithm, its conformance properties and its errors."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from skilling_reference import coords_to_hilbert, hilbert_to_coords

from xarray_hurray.layout import LayoutError, hilbert_decode, hilbert_encode, layout_from_config

SMALL_CURVES = [(r, p) for r in range(2, 6) for p in range(1, 17) if r * p <= 16]


@st.composite
def curves_and_points(draw):
    rank = draw(st.integers(1, 8))
    order = draw(st.integers(1, 64 // rank))
    points = draw(
        st.lists(
            st.lists(st.integers(0, 2**order - 1), min_size=rank, max_size=rank),
            min_size=1,
            max_size=20,
        )
    )
    return rank, order, points


@given(curves_and_points())
def test_encode_matches_the_seed_algorithm(case):
    rank, order, points = case
    expected = [coords_to_hilbert(p, rank, order) for p in points]
    got = hilbert_encode(np.array(points, dtype=np.uint64), order)
    assert got.dtype == np.uint64
    assert [int(h) for h in got] == expected


@given(curves_and_points())
def test_decode_matches_the_seed_algorithm(case):
    rank, order, points = case
    keys = [coords_to_hilbert(p, rank, order) for p in points]
    got = hilbert_decode(np.array(keys, dtype=np.uint64), rank, order)
    assert got.dtype == np.int64
    assert got.tolist() == [hilbert_to_coords(h, rank, order) for h in keys]


@pytest.mark.parametrize(("rank", "order"), SMALL_CURVES)
def test_whole_curve_is_a_bijection_of_unit_steps(rank, order):
    size = 1 << (rank * order)
    coords = hilbert_decode(np.arange(size), rank, order)
    steps = np.abs(np.diff(coords, axis=0))
    # consecutive indices differ by exactly 1 in exactly one coordinate
    assert np.all(steps.sum(axis=1) == 1)
    assert np.all(steps.max(axis=1) == 1)
    keys = hilbert_encode(coords, order)
    np.testing.assert_array_equal(keys, np.arange(size, dtype=np.uint64))
    flat = np.ravel_multi_index(tuple(coords.T), (1 << order,) * rank)
    assert len(np.unique(flat)) == size


def test_keeps_the_leading_shape():
    coords = np.zeros((3, 4, 2), dtype=np.int32)
    coords[..., 1] = np.arange(4)
    keys = hilbert_encode(coords, 2)
    assert keys.shape == (3, 4)
    np.testing.assert_array_equal(hilbert_decode(keys, 2, 2), coords)


def test_more_points_than_one_block():
    rng = np.random.default_rng(7)
    coords = rng.integers(0, 2**10, size=(200_003, 3))
    np.testing.assert_array_equal(hilbert_decode(hilbert_encode(coords, 10), 3, 10), coords)


@pytest.mark.parametrize(
    ("coords", "order", "message"),
    [
        ([[0, 4]], 2, "below 2\\*\\*2"),
        ([[0, -1]], 2, "non-negative"),
        ([[0.5, 1.0]], 2, "must be integers"),
        ([[True, False]], 2, "must be integers"),
        ([[0] * 5], 13, "exceeds the 64-bit index limit"),
        ([[0, 0]], 0, "hilbert_order must be greater than 0"),
        (3, 2, "scalar"),
    ],
)
def test_encode_rejects(coords, order, message):
    with pytest.raises(LayoutError, match=message):
        hilbert_encode(coords, order)


@pytest.mark.parametrize(
    ("index", "rank", "order", "message"),
    [
        ([16], 2, 2, "below 2\\*\\*4"),
        ([-1], 2, 2, "non-negative"),
        ([1.0], 2, 2, "must be integers"),
        ([0], 0, 2, "rank must be a positive integer"),
        ([0], 3, 22, "exceeds the 64-bit index limit"),
    ],
)
def test_decode_rejects(index, rank, order, message):
    with pytest.raises(LayoutError, match=message):
        hilbert_decode(index, rank, order)


def test_full_64_bit_keys_round_trip():
    top = np.array([[2**32 - 1, 0], [2**32 - 1, 2**32 - 1], [12345, 2**31]], dtype=np.uint64)
    keys = hilbert_encode(top, 32)
    assert [int(k) for k in keys] == [coords_to_hilbert([int(v) for v in p], 2, 32) for p in top]
    np.testing.assert_array_equal(hilbert_decode(keys, 2, 32), top.astype(np.int64))


def test_seed_conformance_table():
    """The r = 2, p = 2 table (a golden file), against both directions of the mapping."""
    table = json.loads((Path(__file__).parents[1] / "data" / "hilbert_r2_p2.json").read_text())
    layout = layout_from_config(table["layout"])
    assert (layout.rank, layout.order) == (2, 2)
    indices = [cell["index"] for cell in table["cells"]]
    coords = np.array([cell["coords"] for cell in table["cells"]])
    assert indices == list(range(16))
    np.testing.assert_array_equal(hilbert_decode(np.arange(16), 2, 2), coords)
    np.testing.assert_array_equal(hilbert_encode(coords, 2), np.arange(16, dtype=np.uint64))
    assert [coords_to_hilbert(list(c), 2, 2) for c in coords] == indices
