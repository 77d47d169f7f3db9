"""How a variable finds where its chunks are placed: along the curve chunk by chunk
for a few, from a table of the whole grid once reads have asked for enough of them
(a Dask task per chunk asks for one at a time), and never a table sent along when
the description is pickled for a worker."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from xarray_hurray.container import VariableMeta, metadata
from xarray_hurray.container.metadata import DIRECT_PLACEMENT
from xarray_hurray.layout import RowMajorLayout


def variable(order: str) -> VariableMeta:
    # a grid of 40 x 24 chunks: not a power of two along either axis
    return VariableMeta(
        name="v", dims=("y", "x"), shape=(160, 72), dtype="float32", chunks=(4, 3),
        layout=RowMajorLayout(), chunk_order=order,
    )  # fmt: skip


@pytest.mark.parametrize("order", ["hilbert", "morton", "row-major"])
def test_chunk_by_chunk_positions_match_the_placement(order):
    truth = np.argsort(variable(order).placement)  # position of each row-major chunk
    var = variable(order)
    found = [int(var.positions(np.array([k]))[0]) for k in range(var.chunk_count)]
    np.testing.assert_array_equal(found, truth)
    back = [int(var.chunk_ids(np.array([p]))[0]) for p in range(var.chunk_count)]
    np.testing.assert_array_equal(back, variable(order).placement)


def test_the_table_is_made_once_enough_chunks_were_placed_one_by_one():
    var = variable("hilbert")
    few = var.chunk_count // DIRECT_PLACEMENT  # 15 of 960
    for k in range(few):
        var.positions(np.array([k]))
    assert "position" not in var.__dict__  # a region read keeps to the curve
    var.positions(np.array([few]))
    assert "position" in var.__dict__


def test_a_grid_past_the_tallied_size_keeps_to_the_curve_chunk_by_chunk(monkeypatch):
    # a stand-in for a giant grid: 960 chunks counted as too many to tally
    monkeypatch.setattr(metadata, "TALLIED_GRID", 959)
    var = variable("morton")
    truth = np.argsort(variable("morton").placement)
    for k in range(var.chunk_count):
        assert int(var.positions(np.array([k]))[0]) == truth[k]
    assert "position" not in var.__dict__ and "placement" not in var.__dict__
    # one call asking for many still makes the table, as before
    var.positions(np.arange(var.chunk_count // DIRECT_PLACEMENT + 1))
    assert "position" in var.__dict__


def test_a_pickled_variable_leaves_its_tables_behind():
    var = variable("hilbert")
    bare = len(pickle.dumps(var))
    var.positions(np.arange(var.chunk_count))
    assert "position" in var.__dict__
    sent = pickle.dumps(var)
    assert len(sent) == bare
    copy = pickle.loads(sent)
    assert copy == var
    np.testing.assert_array_equal(copy.positions(np.arange(5)), var.position[:5])
