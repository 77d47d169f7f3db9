"""The level-aware titiler.xarray reader (xarray_hurray.maps) on real files: each tile
is the one titiler's own reader gives from the level the rule picks, named by hand;
files stay open, in a bounded cache that pickles empty."""

from __future__ import annotations

import pickle

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

pytest.importorskip("titiler.xarray")

from geo_fields import global_field
from titiler.xarray.io import Reader

import xarray_hurray as xh
from xarray_hurray.maps import (
    OPEN_FILES,
    HurrayReader,
    OpenFiles,
    OpenPyramid,
    open_finest,
    open_pyramid,
    tile_cell,
    tile_level,
)


@pytest.fixture(scope="module")
def pyramid(tmp_path_factory):
    """A global 0.25° field with levels of 0.5° and 1° cells."""
    path = tmp_path_factory.mktemp("maps") / "global.hurray"
    xh.to_hurray(global_field(0.25), path, overviews=2)
    return str(path)


def test_the_cell_of_a_tile_keeps_its_diagonal():
    # a z0 web-mercator tile in degrees: 360 by 170.1, 256 pixels a side
    assert tile_cell((360.0, 170.1022), (256, 256)) == pytest.approx(1.0998, abs=1e-4)
    assert tile_cell((3.0, 4.0), (3, 4)) == 1.0


@given(
    cells=st.lists(st.floats(0.01, 100), min_size=1, max_size=6, unique=True),
    wanted=st.floats(0.001, 1000),
)
def test_the_level_is_the_coarsest_no_larger_than_the_tile(cells, wanted):
    sizes = sorted(cells)
    named = {str(k): (size, size * 0.75) for k, size in enumerate(sizes)}
    fitting = [k for k, size in enumerate(sizes) if size <= wanted * (1 + 1e-9)]
    assert tile_level(named, wanted) == str(max(fitting, default=0))


@pytest.mark.parametrize("wanted", [0.1, 0.25, 0.3, 0.5, 0.5 * (1 - 1e-6), 0.99, 1.0, 7.0])
def test_a_tile_and_the_accessor_pick_the_same_level_for_a_cell_size(pyramid, wanted):
    """One rule: the level a tile of cells ``wanted`` reads is the one
    ``tree.hurray.level(resolution=...)`` gives for cells of that size."""
    opened = OpenPyramid.open(pyramid)
    picked = tile_level(opened.cells("t", None), wanted)
    by_accessor = opened.tree.hurray.level(resolution={"lon": wanted, "lat": wanted})
    assert int(picked) == by_accessor.attrs["overview_level"]


@pytest.mark.parametrize(
    ("tile", "group"),
    [((0, 0, 0), "2"), ((1, 0, 1), "1"), ((0, 1, 1), "1"), ((2, 1, 2), None), ((9, 5, 4), None)],
)
def test_each_tile_is_read_from_the_level_its_cells_call_for(pyramid, tile, group):
    with HurrayReader(pyramid, "t") as reader:
        image = reader.tile(*tile)
    expected_options = {"group": group} if group is not None else {}
    with Reader(pyramid, "t", opener=open_finest, **expected_options) as titiler_reader:
        expected = titiler_reader.tile(*tile)
    np.testing.assert_array_equal(image.array, expected.array)
    assert image.bounds == expected.bounds


def test_a_file_without_overviews_is_its_one_level(tmp_path):
    path = str(tmp_path / "flat.hurray")
    xh.to_hurray(global_field(1.0), path)
    assert open_pyramid(path).levels == ["/"]
    with HurrayReader(path, "t") as reader:
        image = reader.tile(0, 0, 0)
    with Reader(path, "t", opener=open_finest) as titiler_reader:
        np.testing.assert_array_equal(image.array, titiler_reader.tile(0, 0, 0).array)


def test_the_file_is_opened_once_for_every_reader(pyramid):
    with HurrayReader(pyramid, "t") as first, HurrayReader(pyramid, "t") as second:
        first.tile(0, 0, 0)
        second.tile(1, 1, 1)
    assert open_pyramid(pyramid) is open_pyramid(pyramid)
    assert open_pyramid(pyramid).cells("t", None) == {
        "0": (0.25, 0.25),
        "1": (0.5, 0.5),
        "2": (1.0, 1.0),
    }
    assert any(key[0] == pyramid for key in OPEN_FILES._files)


def test_the_cache_is_bounded_and_pickles_empty(tmp_path):
    paths = []
    for k in range(3):
        paths.append(str(tmp_path / f"{k}.hurray"))
        xh.to_hurray(global_field(2.0), paths[-1])
    cache = OpenFiles(maxsize=2)
    opened = [cache.get(p, lambda p=p: OpenPyramid.open(p)) for p in paths]
    assert len(cache) == 2
    assert cache.get(paths[2], pytest.fail) is opened[2]  # kept: not opened again
    again = cache.get(paths[0], lambda: OpenPyramid.open(paths[0]))
    assert again is not opened[0]  # the least recently used was put out
    copy = pickle.loads(pickle.dumps(cache))
    assert len(copy) == 0 and copy.maxsize == 2
    assert copy.get(paths[1], lambda: OpenPyramid.open(paths[1])).levels == ["/"]


def test_a_time_step_is_selected_at_every_level(tmp_path):
    ds = global_field(0.25).expand_dims(time=np.array(["2024-01-01", "2024-01-02"], "M8[ns]"))
    ds["t"] = ds["t"] + np.array([0.0, 100.0], "float32")[:, None, None]
    ds["spatial_ref"] = global_field().spatial_ref
    path = str(tmp_path / "days.hurray")
    xh.to_hurray(ds, path, overviews=2)
    sel = ["time=2024-01-02"]
    with HurrayReader(path, "t", sel=sel) as reader:
        image = reader.tile(0, 0, 0)
    with Reader(path, "t", sel=sel, group="2", opener=open_finest) as titiler_reader:
        np.testing.assert_array_equal(image.array, titiler_reader.tile(0, 0, 0).array)
    with HurrayReader(path, "t", sel=["time=2024-01-01"]) as reader:
        first = reader.tile(0, 0, 0)
    np.testing.assert_allclose(image.array, first.array + 100, atol=1e-3)
