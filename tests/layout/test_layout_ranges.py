"""Box -> runs of buffer positions, checked against brute force."""

import math
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from layout_strategies import boxes, layouts_with_shapes

from xarray_hurray.layout import (
    HilbertLayout,
    LayoutError,
    MortonLayout,
    RowMajorLayout,
    merge_runs,
)


def brute_force_runs(layout, shape, lo, hi):
    """Every buffer position inside the box, merged into maximal runs."""
    inside = np.ones(shape, dtype=bool)
    inside[tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))] = False
    inside = ~inside
    positions = np.sort(layout.positions(shape).reshape(shape)[inside].astype(np.int64))
    return merge_runs(positions, positions + 1)


@given(st.data())
def test_runs_equal_brute_force(data):
    layout, shape = data.draw(layouts_with_shapes())
    lo, hi = data.draw(boxes(shape))
    runs = layout.ranges(lo, hi, shape=shape)
    assert runs.dtype == np.int64
    np.testing.assert_array_equal(runs, brute_force_runs(layout, shape, lo, hi))
    # sorted, disjoint, not touching: adjacent runs are merged
    assert np.all(runs[:, 0] < runs[:, 1])
    assert np.all(runs[1:, 0] > runs[:-1, 1])


def test_curve_layouts_know_their_extent():
    whole = HilbertLayout(2, 3).ranges((0, 0), (8, 8))
    np.testing.assert_array_equal(whole, [[0, 64]])
    quadrant = MortonLayout((2, 2)).ranges((2, 2), (4, 4))
    np.testing.assert_array_equal(quadrant, [[12, 16]])


def test_row_major_runs():
    layout = RowMajorLayout()
    np.testing.assert_array_equal(layout.ranges((1, 0), (3, 4), shape=(5, 4)), [[4, 12]])
    np.testing.assert_array_equal(layout.ranges((1, 1), (3, 3), shape=(5, 4)), [[5, 7], [9, 11]])
    np.testing.assert_array_equal(layout.ranges((), (), shape=()), [[0, 1]])


def test_large_boxes_are_not_enumerated():
    layout = HilbertLayout(3, 10)  # 2**30 positions
    lo, hi = (3, 100, 17), (1000, 900, 1020)
    start = time.perf_counter()
    runs = layout.ranges(lo, hi)
    elapsed = time.perf_counter() - start
    assert int((runs[:, 1] - runs[:, 0]).sum()) == math.prod(np.subtract(hi, lo))
    assert elapsed < 20  # enumerating 6e8 positions would take far longer


@pytest.mark.parametrize(
    ("layout", "lo", "hi", "shape", "message"),
    [
        (HilbertLayout(2, 2), (0, 0), (5, 4), None, "not a box inside shape"),
        (HilbertLayout(2, 2), (2, 0), (1, 4), None, "not a box inside shape"),
        (HilbertLayout(2, 2), (-1, 0), (1, 4), None, "not a box inside shape"),
        (HilbertLayout(2, 2), (0,), (1,), None, "rank of shape"),
        (HilbertLayout(2, 2), (0, 0), (1, 1), (4, 8), "constraint 1"),
        (RowMajorLayout(), (0,), (1,), None, "needs the chunk shape"),
    ],
)
def test_bad_boxes_are_rejected(layout, lo, hi, shape, message):
    with pytest.raises(LayoutError, match=message):
        layout.ranges(lo, hi, shape=shape)


def test_merge_runs_joins_touching_and_overlapping_runs():
    runs = merge_runs(np.array([10, 0, 4, 3]), np.array([12, 3, 6, 5]))
    np.testing.assert_array_equal(runs, [[0, 6], [10, 12]])
    assert merge_runs(np.array([]), np.array([])).shape == (0, 2)
