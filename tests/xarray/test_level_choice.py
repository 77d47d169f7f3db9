"""The one rule that picks the level of a pyramid to read
(``xarray/overview_read.py``, ``coarsest_level``), which ``tree.hurray.level`` and the
map tiles' reader both take, against a brute-force choice: every level is tried, the
one picked fits, and no coarser one does (or none fits and the finest is read)."""

from __future__ import annotations

from collections.abc import Mapping

import hypothesis.strategies as st
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings

import xarray_hurray as xh
from xarray_hurray.xarray.overview_read import coarsest_level

DIMS = ("y", "x")


def picked_by_brute_force(fits: list[bool]) -> int:
    """The coarsest level that fits, found by trying every level; the finest where
    none does."""
    return max((k for k, ok in enumerate(fits) if ok), default=0)


def fitting(
    cells: Mapping[str, float],
    sizes: Mapping[str, int],
    resolution: Mapping[str, float],
    size: Mapping[str, int],
) -> bool:
    """Whether a level of ``cells`` and ``sizes`` serves ``resolution`` and ``size``
    (a cell no larger than wanted, but for a relative 1e-9 of rounding)."""
    fine = all(cells[d] <= wanted * (1 + 1e-9) for d, wanted in resolution.items())
    return fine and all(sizes[d] >= n for d, n in size.items())


wanted_dims = st.sets(st.sampled_from(DIMS), max_size=2)


@given(
    levels=st.lists(
        st.tuples(
            st.fixed_dictionaries({d: st.floats(0.001, 1000) for d in DIMS}),
            st.fixed_dictionaries({d: st.integers(1, 5000) for d in DIMS}),
        ),
        min_size=1,
        max_size=6,
    ),
    by_resolution=wanted_dims,
    by_size=wanted_dims,
    data=st.data(),
)
def test_the_rule_is_the_brute_force_choice(levels, by_resolution, by_size, data):
    """Levels in any order of coarseness, asked for by resolution, size or both."""
    resolution = {d: data.draw(st.floats(0.001, 1000), label=d) for d in by_resolution}
    size = {d: data.draw(st.integers(1, 5000), label=d) for d in by_size}
    cells = [c for c, _ in levels]
    sizes = [n for _, n in levels]
    expected = picked_by_brute_force([fitting(c, n, resolution, size) for c, n in levels])
    assert coarsest_level(cells, resolution, sizes, size) == expected


def test_a_cell_the_wanted_size_but_for_rounding_fits():
    cells = [{"x": 0.1}, {"x": 0.2 + 1e-12}, {"x": 0.4}]
    assert coarsest_level(cells, {"x": 0.2}) == 1
    assert coarsest_level(cells, {"x": 0.2 * (1 - 1e-6)}) == 0


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A pyramid of a 64 x 48 field of cells 0.5 (y) by 0.25 (x), levels 1 to 3 twice,
    4 and 8 times coarser (level 3 has 8 by 6 cells)."""
    path = tmp_path_factory.mktemp("levels") / "p.hurray"
    values = np.arange(64 * 48, dtype="f4").reshape(64, 48)
    ds = xr.Dataset(
        {"v": (DIMS, values)},
        coords={"y": 90.0 - np.arange(64) * 0.5, "x": np.arange(48) * 0.25},
    )
    xh.to_hurray(ds, path, overviews=[2, 4, 8])
    with xr.open_datatree(path, engine="hurray") as opened:
        yield opened.load()


def _level_cells(level: xr.Dataset) -> tuple[dict[str, float], dict[str, int]]:
    """A level's cell along each dimension (the step of its coordinate: every level
    here has several cells along each) and its sizes, from its values."""
    cells = {dim: float(abs(np.diff(level[dim].values)).max()) for dim in DIMS}
    return cells, dict(level.sizes)


@settings(max_examples=60, deadline=None)
@given(
    by_resolution=wanted_dims,
    by_size=wanted_dims,
    data=st.data(),
)
def test_the_accessor_picks_the_brute_force_level_of_a_file(tree, by_resolution, by_size, data):
    if not by_resolution and not by_size:
        return  # a level is asked for by something
    resolution = {d: data.draw(st.floats(0.05, 10), label=d) for d in by_resolution}
    size = {d: data.draw(st.integers(1, 80), label=d) for d in by_size}
    levels = [_level_cells(tree[name].to_dataset()) for name in ("0", "1", "2", "3")]
    expected = picked_by_brute_force([fitting(c, n, resolution, size) for c, n in levels])
    picked = tree.hurray.level(size=size or None, resolution=resolution or None)
    assert picked.attrs["overview_level"] == expected
