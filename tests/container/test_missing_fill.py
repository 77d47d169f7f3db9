"""Missing chunks read as the fill value, filled where they are by tasks beside the
decoding (or, where most of a read's chunks are missing, the whole result at once):
values against numpy's, and which elements the fills write."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xarray_hurray as xh
from xarray_hurray.container import open_reader
from xarray_hurray.container.decode import fills as fill_tasks
from xarray_hurray.container.select import OuterSelection

SHAPE, CHUNKS = (3, 40, 36), (1, 8, 8)
GRID = tuple(-(-n // c) for n, c in zip(SHAPE, CHUNKS, strict=True))


def _write(path, missing: np.ndarray) -> np.ndarray:
    """The values of a file whose chunks flagged in ``missing`` (a boolean grid) hold
    only NaN, which the writer leaves out."""
    values = np.arange(np.prod(SHAPE), dtype="f4").reshape(SHAPE)
    for chunk in zip(*np.nonzero(missing), strict=True):
        box = tuple(slice(i * c, (i + 1) * c) for i, c in zip(chunk, CHUNKS, strict=True))
        values[box] = np.nan
    ds = xr.Dataset({"v": (("t", "y", "x"), values)})
    xh.to_hurray(ds, path, encoding={"v": {"chunks": CHUNKS}}, mode="w")
    return values


keys = st.tuples(
    st.one_of(st.integers(0, SHAPE[0] - 1), st.just(slice(None))),
    st.one_of(
        st.builds(slice, st.integers(0, 20), st.integers(20, SHAPE[1]), st.integers(1, 3)),
        st.lists(st.integers(0, SHAPE[1] - 1), min_size=1, max_size=6).map(np.array),
    ),
    st.builds(slice, st.integers(0, 18), st.integers(18, SHAPE[2])),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    missing=st.lists(st.booleans(), min_size=int(np.prod(GRID)), max_size=int(np.prod(GRID))),
    key=keys,
)
def test_reads_of_grids_with_missing_chunks_equal_numpy(tmp_path, missing, key):
    values = _write(tmp_path / "m.hurray", np.array(missing).reshape(GRID))
    got = open_reader(tmp_path / "m.hurray").read("v", key)
    np.testing.assert_array_equal(
        got,
        values[
            np.ix_(*(np.atleast_1d(np.arange(n)[k]) for k, n in zip(key, SHAPE, strict=True)))
        ].reshape(got.shape),
    )


@pytest.mark.parametrize("missing_count", [3, 40])
def test_missing_chunks_are_filled_where_they_are(tmp_path, missing_count):
    rng = np.random.default_rng(missing_count)
    missing = np.zeros(int(np.prod(GRID)), dtype=bool)
    missing[rng.choice(missing.size, missing_count, replace=False)] = True
    values = _write(tmp_path / "m.hurray", missing.reshape(GRID))
    reader = open_reader(tmp_path / "m.hurray")
    selection = OuterSelection.build((slice(1, 3), slice(None), slice(None)), SHAPE, CHUNKS)
    touched = selection.chunk_ids()
    stored = np.flatnonzero(~missing[touched])
    out = np.full(selection.out_shape, -1.0, dtype="f4")  # what the fills leave alone
    fills = fill_tasks(out, selection, stored, len(touched), reader._codec("v"), batch=4)
    for task in fills:
        assert task() is None
    expected = values[1:3].copy()
    if len(stored) >= len(touched) - len(stored):
        # a task per four missing chunks, writing their places and nothing else
        assert len(fills) == -(-(len(touched) - len(stored)) // 4)
        expected[~np.isnan(expected)] = -1.0
    else:
        # most chunks missing: the whole result filled at once, no task left
        assert fills == []
        expected[...] = np.nan
    np.testing.assert_array_equal(out, expected)
