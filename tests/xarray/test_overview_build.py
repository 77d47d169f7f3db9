"""The computation of a pyramid's levels (xarray/overview_build.py) and its contract
with the write: the values do not depend on blocks, passes or the order the levels
are stored in, against a brute-force numpy coarsening; a build holds blocks, not
levels; ``tree.hurray.level`` by number."""

from __future__ import annotations

import tracemalloc

import dask
import dask.array as da
import hypothesis.strategies as st
import numpy as np
import pytest
import xarray as xr
from hypothesis import assume, given, settings
from test_overviews import brute_pyramid, field

import xarray_hurray as xh
from xarray_hurray.container import front
from xarray_hurray.errors import HurrayTypeError, HurrayValueError
from xarray_hurray.xarray import overview_build
from xarray_hurray.xarray.overview_write import new_pyramid
from xarray_hurray.xarray.request import LevelsRequest

METHODS = ["mean", "min", "max", "mode", "nearest"]


def _values(shape, method, seed):
    return field(shape, "int" if method == "mode" else "float", seed=seed)


def _levels(tree: xr.DataTree) -> list[np.ndarray]:
    return [np.asarray(tree[name]["v"].values) for name in list(tree.children)[1:]]


@settings(max_examples=25, deadline=None)
@given(
    ny=st.integers(1, 40),
    nx=st.integers(1, 40),
    steps=st.lists(st.sampled_from([2, 3, 4]), min_size=1, max_size=4),
    chunk=st.integers(1, 17),
    side=st.sampled_from([4, 6, 16, 1024]),
    method=st.sampled_from(METHODS),
    seed=st.integers(0, 2**16),
)
def test_levels_are_the_same_whatever_the_blocks_and_passes(
    ny, nx, steps, chunk, side, method, seed
):
    """Dask blocks of any size, on windows or not, and blocks small enough that the
    levels take several passes (``BLOCK_SIDE``), give the values of the arrays in
    memory bit for bit, and those are the brute force's."""
    factors = list(np.cumprod(steps).tolist())
    assume(factors[-1] < 2 * max(ny, nx))  # a larger factor is refused
    values = _values((ny, nx), method, seed)
    ds = xr.Dataset({"v": (("y", "x"), values)})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(overview_build, "BLOCK_SIDE", side)
        held = _levels(xh.multiscale(ds, factors, dims=["y", "x"], resampling=method))
        lazy = xh.multiscale(ds.chunk({"y": chunk, "x": chunk}), factors, resampling=method)
        lazy_levels = _levels(lazy)
    for got, want in zip(lazy_levels, held, strict=True):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(held, brute_pyramid(values, [0, 1], factors, method), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


def test_one_task_per_block_computes_every_level():
    """Storing every level in one computation runs the chain of each block of level 0
    once: the source's blocks are each computed once, whatever the number of levels."""
    calls = []

    def block(block_info=None):
        calls.append(block_info[None]["chunk-location"])
        (y0, y1), (x0, x1) = block_info[None]["array-location"]
        return np.arange(y0 * 64 + x0, y0 * 64 + x0 + (y1 - y0) * (x1 - x0), dtype="f4").reshape(
            y1 - y0, x1 - x0
        )

    source = da.map_blocks(block, chunks=((16,) * 4, (16,) * 4), dtype="f4")
    ds = xr.Dataset({"v": (("y", "x"), source)})
    tree = xh.multiscale(ds, [2, 4, 8, 16])
    dask.compute(*[tree[name]["v"].data for name in ("1", "2", "3", "4")])
    assert sorted(calls) == sorted({c for c in calls}) and len(calls) == 16


@pytest.mark.parametrize("side", [512, 1024])
def test_a_build_holds_blocks_not_levels(side):
    """The temporaries of a build in memory are those of the blocks being coarsened
    (one worker here: one block), whatever the size of the field; the levels'
    whole arrays were the size of level 0 in float64 before."""
    values = field((side, side), "float", seed=1)
    ds = xr.Dataset({"v": (("y", "x"), values)})
    block = 128
    with pytest.MonkeyPatch.context() as patch, dask.config.set(num_workers=1):
        patch.setattr(overview_build, "BLOCK_SIDE", block)
        tracemalloc.start()
        try:
            tree = xh.multiscale(ds, [2, 4, 8, 16])
            held, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    # a block's float64 sums, its mask and counts, its coarser parts: under 4 blocks
    # of float64; and the graph's own bookkeeping, a few KiB a block (about 4 with
    # today's dask, 13 with dask 2024.11): far under the whole level in float64, twice
    # the field's bytes
    blocks = (side // block) ** 2
    assert peak - held < 4 * block * block * 8 + blocks * 16 * 2**10, (peak - held) / 2**20
    assert tree["4"]["v"].shape == (-(-side // 16),) * 2


def test_stored_levels_read_their_files_alone(tmp_path):
    """The contract of the levels with the write: once stored, no coarser level is
    computed from the source, so a write may store them in any order."""
    values = field((40, 30), "float", seed=2)
    ds = xr.Dataset({"v": (("y", "x"), da.from_array(values, chunks=8))})
    tree = xh.multiscale(ds, [2, 4])
    source_keys = set(dict(ds["v"].data.__dask_graph__()))
    stored, _ = new_pyramid(ds, LevelsRequest([2, 4]), {}, lambda: str(tmp_path))
    for name in ("1", "2"):
        keys = set(dict(stored[name]["v"].data.__dask_graph__()))
        assert not keys & source_keys
        np.testing.assert_array_equal(stored[name]["v"].values, tree[name]["v"].values)
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".npy", ".npy"]


@pytest.mark.parametrize("chunks", [None, 8, 5])
def test_levels_written_in_any_order_are_the_brute_force(tmp_path, monkeypatch, chunks):
    """The variables placed in the reverse of the usual order (the coarsest level
    first, level 0 last), with the coarse levels small enough for the front of the
    file: the levels are those of the brute force."""
    placed = front.placement_order
    monkeypatch.setattr(
        "xarray_hurray.container.head.placement_order", lambda meta: placed(meta)[::-1]
    )
    monkeypatch.setattr("xarray_hurray.write.plan.placement_order", lambda m: placed(m)[::-1])
    values = field((40, 30), "float", seed=3)
    ds = xr.Dataset({"v": (("y", "x"), values)})
    if chunks is not None:
        ds = ds.chunk({"y": chunks, "x": chunks})
    path = tmp_path / "p.hurray"
    xh.to_hurray(ds, path, overviews=[2, 4, 8])
    with xr.open_datatree(path, engine="hurray") as tree:
        np.testing.assert_array_equal(tree["0"]["v"].values, values)
        expected = brute_pyramid(values, [0, 1], [2, 4, 8], "mean")
        for got, want in zip(_levels(tree), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


def test_small_coarse_levels_go_to_the_front(tmp_path):
    """Front placement knows nothing of pyramids: a small coarse level is stored
    right after the head, as any small variable."""
    values = field((256, 256), "float", seed=4)
    ds = xr.Dataset({"v": (("y", "x"), da.from_array(values, chunks=64))})
    path = tmp_path / "p.hurray"
    xh.to_hurray(ds, path, overviews=[2, 4])
    reader = xh.open_reader(str(path))
    small = front.front_variables(reader.metadata)
    assert {"2/v", "1/v"} <= {p for p, _ in small}
    with xr.open_datatree(path, engine="hurray") as tree:
        expected = brute_pyramid(values, [0, 1], [2, 4], "mean")
        for got, want in zip(_levels(tree), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


# -- the level by number


def _pyramid(tmp_path) -> xr.DataTree:
    values = field((32, 24), "float", seed=5)
    coords = {"y": np.arange(32.0), "x": np.arange(24.0)}
    ds = xr.Dataset({"v": (("y", "x"), values)}, coords=coords)
    xh.to_hurray(ds, tmp_path / "p.hurray", overviews=[2, 4, 8])
    return xr.open_datatree(tmp_path / "p.hurray", engine="hurray")


def test_a_level_by_its_number(tmp_path):
    tree = _pyramid(tmp_path)
    for number in range(4):
        level = tree.hurray.level(number)
        assert level.attrs["overview_level"] == number
        xr.testing.assert_identical(level, tree[str(number)].to_dataset())
    assert tree.hurray.level(np.int64(2)).attrs["overview_level"] == 2
    # a mapping first is the size, as before numbers were taken
    assert tree.hurray.level({"x": 6}).attrs["overview_level"] == 2
    assert tree.hurray.level(size={"x": 6}).attrs["overview_level"] == 2
    tree.close()


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((4,), {}, HurrayValueError, "numbered 0 .the finest. to 3"),
        ((-1,), {}, HurrayValueError, "numbered 0"),
        (("2",), {}, HurrayTypeError, "by its number"),
        ((True,), {}, HurrayTypeError, "by its number"),
        ((1.0,), {}, HurrayTypeError, "by its number"),
        ((2,), {"size": {"x": 4}}, HurrayValueError, "not both"),
        (({"x": 4},), {"size": {"x": 4}}, HurrayTypeError, "size is given twice"),
        ((), {}, HurrayValueError, "give the number of the level"),
    ],
)
def test_bad_level_numbers_are_refused_naming_the_problem(tmp_path, args, kwargs, error, message):
    tree = _pyramid(tmp_path)
    with pytest.raises(error, match=message):
        tree.hurray.level(*args, **kwargs)
    tree.close()


def test_what_a_tree_holds_of_its_levels_is_read_once_and_again_when_replaced(tmp_path):
    tree = _pyramid(tmp_path)
    read = tree.hurray._read_levels()
    assert tree.hurray._read_levels() is read  # kept with the tree
    assert read.names == ("0", "1", "2", "3")
    assert read.sizes[3] == {"y": 4, "x": 3}
    assert read.spacings[1] == {"y": 2.0, "x": 2.0}
    # a tree whose levels are replaced reads them again
    tree.attrs = {**tree.attrs, "multiscales": tree.attrs["multiscales"].replace('"3"', '"2"')}
    with pytest.raises(HurrayValueError, match="names a level twice"):
        tree.hurray.level(1)
    tree.close()
