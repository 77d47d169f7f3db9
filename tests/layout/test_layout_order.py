"""Placement order of the chunks of a grid."""

import math
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from xarray_hurray.layout import (
    LayoutError,
    chunk_placement,
    hilbert_encode,
    morton_encode,
    placement_chunks,
    placement_positions,
)

KINDS = ["hilbert", "morton", "row-major"]


@given(st.lists(st.integers(1, 9), min_size=0, max_size=4), st.sampled_from(KINDS))
def test_order_is_a_permutation_of_the_grid(grid, kind):
    order = chunk_placement(grid, kind)
    assert order.dtype == np.int64
    np.testing.assert_array_equal(np.sort(order), np.arange(int(np.prod(grid))))


@pytest.mark.parametrize(("kind", "encode"), [("hilbert", hilbert_encode), ("morton", None)])
def test_power_of_two_grid_follows_the_curve(kind, encode):
    coords = np.indices((8, 8)).reshape(2, -1).T
    keys = encode(coords, 3) if encode else morton_encode(coords, (3, 3))
    np.testing.assert_array_equal(chunk_placement((8, 8), kind), np.argsort(keys))


def test_uneven_grid_pads_to_the_enclosing_cube_and_skips_outside():
    coords = np.indices((8, 8)).reshape(2, -1).T
    cube_order = coords[np.argsort(hilbert_encode(coords, 3))]
    inside = cube_order[(cube_order[:, 0] < 3) & (cube_order[:, 1] < 6)]
    expected = np.ravel_multi_index(tuple(inside.T), (3, 6))
    np.testing.assert_array_equal(chunk_placement((3, 6), "hilbert"), expected)


def test_axes_of_length_one_are_ignored():
    np.testing.assert_array_equal(
        chunk_placement((1, 4, 1, 4), "hilbert"), chunk_placement((4, 4), "hilbert")
    )


def test_axes_outside_the_curve_vary_slowest():
    order = chunk_placement((3, 4, 4), "hilbert", chunk_axes=(1, 2))
    plane = chunk_placement((4, 4), "hilbert")
    np.testing.assert_array_equal(order, np.concatenate([t * 16 + plane for t in range(3)]))


def test_consecutive_hilbert_chunks_are_neighbours_on_a_power_of_two_grid():
    order = chunk_placement((16, 16), "hilbert")
    coords = np.stack(np.unravel_index(order, (16, 16)), axis=1)
    assert np.all(np.abs(np.diff(coords, axis=0)).sum(axis=1) == 1)


def test_row_major_is_the_identity():
    np.testing.assert_array_equal(chunk_placement((3, 5), "row-major"), np.arange(15))


@pytest.mark.parametrize(
    ("grid", "kind", "axes", "message"),
    [
        ((4, 4), "zigzag", None, "unknown chunk order 'zigzag'"),
        ((4, 4), "hilbert", (0, 0), "distinct axes"),
        ((4, 4), "hilbert", (2,), "distinct axes"),
        ((4, -1), "hilbert", None, "non-negative"),
        ((2**40, 2**40), "morton", None, "more than 64"),
    ],
)
def test_bad_orders_are_rejected(grid, kind, axes, message):
    with pytest.raises(LayoutError, match=message):
        chunk_placement(grid, kind, chunk_axes=axes)


@given(
    st.lists(st.integers(1, 20), min_size=1, max_size=4),
    st.sampled_from(KINDS),
    st.data(),
)
def test_positions_of_some_chunks_are_their_places_in_the_whole_order(grid, kind, data):
    axes = data.draw(
        st.none() | st.lists(st.sampled_from(range(len(grid))), unique=True).map(tuple)
    )
    placement = chunk_placement(grid, kind, axes)
    expected = np.empty(len(placement), dtype=np.int64)
    expected[placement] = np.arange(len(placement))  # the inverse, from the whole order
    ids = np.array(
        data.draw(st.lists(st.integers(0, len(placement) - 1), max_size=50)), dtype=np.int64
    )
    np.testing.assert_array_equal(placement_positions(grid, kind, axes, ids), expected[ids])


def test_positions_of_a_region_of_a_million_chunk_grid():
    placement = chunk_placement((1000, 1000), "hilbert")
    ids = np.ravel_multi_index(np.mgrid[125:138, 250:263].reshape(2, -1), (1000, 1000))
    positions = placement_positions((1000, 1000), "hilbert", None, ids)
    np.testing.assert_array_equal(placement[positions], ids)


@pytest.mark.parametrize("grid", [(16, 16), (8, 8, 8), (5, 16, 16), (13, 7), (1, 9)])
@pytest.mark.parametrize("kind", ["hilbert", "morton"])
def test_positions_of_every_chunk_of_whole_and_cut_cubes(grid, kind):
    placement = chunk_placement(grid, kind)
    ids = np.arange(len(placement), dtype=np.int64)[::-1]
    np.testing.assert_array_equal(placement[placement_positions(grid, kind, None, ids)], ids)


@given(
    st.lists(st.integers(1, 20), min_size=1, max_size=4),
    st.sampled_from(KINDS),
    st.data(),
)
def test_chunks_at_some_positions_are_the_whole_orders(grid, kind, data):
    axes = data.draw(
        st.none() | st.lists(st.sampled_from(range(len(grid))), unique=True).map(tuple)
    )
    placement = chunk_placement(grid, kind, axes)
    positions = np.array(
        data.draw(st.lists(st.integers(0, len(placement) - 1), max_size=50)), dtype=np.int64
    )
    np.testing.assert_array_equal(
        placement_chunks(grid, kind, axes, positions), placement[positions]
    )


@pytest.mark.parametrize("grid", [(16, 16), (8, 8, 8), (5, 16, 16), (13, 7), (1, 9), (33, 2, 17)])
@pytest.mark.parametrize("kind", ["hilbert", "morton"])
def test_chunks_at_every_position_of_whole_and_cut_cubes(grid, kind):
    placement = chunk_placement(grid, kind)
    positions = np.arange(len(placement), dtype=np.int64)[::-1]
    np.testing.assert_array_equal(placement_chunks(grid, kind, None, positions), placement[::-1])


def test_chunks_at_positions_of_a_grid_of_2_to_the_34_chunks_cost_the_positions():
    """Positions spread over a grid far too large to order whole, checked against the
    forward mapping (itself checked against the whole order above)."""
    grid = (2**17 + 3, 2**17 - 5)
    positions = np.linspace(0, np.prod(grid) - 1, 200).astype(np.int64)
    ids = placement_chunks(grid, "hilbert", None, positions)
    np.testing.assert_array_equal(placement_positions(grid, "hilbert", None, ids), positions)


@given(
    st.lists(st.integers(1, 3), min_size=5, max_size=9),
    st.sampled_from(["hilbert", "morton"]),
    st.data(),
)
def test_positions_and_chunks_on_curves_of_many_axes_are_the_whole_orders(grid, kind, data):
    """Curves of up to 9 axes (each level of a Hilbert curve a symmetry of its own),
    every chunk against the whole order: the keys of every chunk of the grid, sorted."""
    axes = data.draw(st.none() | st.permutations(range(len(grid))).map(lambda a: tuple(a[:-1])))
    placement = chunk_placement(grid, kind, axes)
    ids = np.arange(len(placement), dtype=np.int64)
    positions = placement_positions(grid, kind, axes, ids)
    np.testing.assert_array_equal(placement[positions], ids)
    np.testing.assert_array_equal(placement_chunks(grid, kind, axes, positions), ids)


@pytest.mark.parametrize("rank", [20, 22, 32])
@pytest.mark.parametrize("kind", ["hilbert", "morton"])
def test_placing_a_chunk_of_a_curve_of_many_axes_costs_no_step_per_sibling(rank, kind):
    """On a grid of side 2 the curve is the whole cube: a chunk's position is its key.
    Counting the ``2**d - 1`` siblings of each level one by one took 16-44 s at 20
    axes and never ended at 32; a sibling box at a time takes milliseconds."""
    grid = (2,) * rank
    points = np.array([(0,) * rank, (1,) * rank, (1,) + (0,) * (rank - 1), (0, 1) * (rank // 2)])
    keys = hilbert_encode(points, 1) if kind == "hilbert" else morton_encode(points, (1,) * rank)
    ids = np.ravel_multi_index(tuple(points.T), grid)
    start = time.perf_counter()
    positions = placement_positions(grid, kind, None, ids)
    chunks = placement_chunks(grid, kind, None, keys.astype(np.int64))
    assert time.perf_counter() - start < 1.0
    np.testing.assert_array_equal(positions, keys.astype(np.int64))
    np.testing.assert_array_equal(chunks, ids)
    # a grid cut short along one axis (a cube of side 4, 64 bits at 32 axes):
    # checked against the inverse
    cut = (*grid[:-1], 3)
    some = np.array([0, 1, math.prod(cut) // 3, math.prod(cut) - 1])
    np.testing.assert_array_equal(
        placement_chunks(cut, kind, None, placement_positions(cut, kind, None, some)), some
    )
