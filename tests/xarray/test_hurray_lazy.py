"""Region reads: the right values, from only the chunks they need, in few requests."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xarray_hurray as xh
from xarray_hurray.container import ContainerReader
from xarray_hurray.container.format import HEAD_SIZE
from xarray_hurray.io import LocalFileSource, MergePolicy
from xarray_hurray.testing import CountingSource


@st.composite
def axis_keys(draw, length: int):
    kind = draw(st.sampled_from(["int", "slice", "array"]))
    if kind == "int" and length:
        return draw(st.integers(-length, length - 1))
    if kind == "array" and length:
        positions = draw(st.lists(st.integers(-length, length - 1), max_size=6))
        return np.array(positions, dtype=np.int64)
    start = draw(st.none() | st.integers(-length - 2, length + 2))
    stop = draw(st.none() | st.integers(-length - 2, length + 2))
    step = draw(st.none() | st.integers(1, 4) | st.integers(-4, -1))
    return slice(start, stop, step)


def outer(array: np.ndarray, key: tuple) -> np.ndarray:
    """Outer indexing with numpy: arrays index independently, ints drop their axis."""
    result = array
    for axis in reversed(range(len(key))):
        k = key[axis]
        result = (
            np.take(result, k, axis=axis)
            if not isinstance(k, slice)
            else result[(slice(None),) * axis + (k,)]
        )
    return result


@given(
    data=st.data(),
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=20),
    layout=st.sampled_from(["auto", "morton", "row-major"]),
    order=st.sampled_from(["hilbert", "morton", "row-major"]),
    gap=st.sampled_from([0, 100, 10**9]),
)
def test_random_outer_selections_match_numpy(tmp_path_factory, data, shape, layout, order, gap):
    chunks = tuple(data.draw(st.integers(1, 8)) for _ in shape)
    array = np.arange(np.prod(shape), dtype="i4").reshape(shape)
    dims = ("a", "b", "c")[: len(shape)]
    path = tmp_path_factory.mktemp("lazy") / "r.hurray"
    ds = xr.Dataset({"v": (dims, array)})
    xh.to_hurray(ds, path, encoding={"v": {"chunks": chunks}}, layout=layout, chunk_order=order)
    reader = xh.open_reader(path, merge_policy=MergePolicy(max_gap=gap, max_request=256))
    for _ in range(3):
        key = tuple(data.draw(axis_keys(n)) for n in shape)
        np.testing.assert_array_equal(reader.read("v", key), outer(array, key))


def test_xarray_selections_are_lazy_and_right(tmp_path):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((30, 40, 50)).astype("f4")
    ds = xr.Dataset({"v": (("t", "y", "x"), data)})
    xh.to_hurray(ds, tmp_path / "s.hurray", encoding={"v": {"chunks": (8, 8, 8)}})
    out = xr.open_dataset(tmp_path / "s.hurray", engine="hurray")
    picks = {"t": [3, 1, 29], "y": slice(5, 33, 3), "x": 7}
    np.testing.assert_array_equal(out["v"].isel(picks).values, ds["v"].isel(picks).values)
    vectorized = {"y": xr.DataArray([1, 2, 39], dims="p"), "x": xr.DataArray([0, 49, 3], dims="p")}
    np.testing.assert_array_equal(out["v"].isel(vectorized).values, ds["v"].isel(vectorized).values)


def _reader(path, gap: int = 0) -> tuple[ContainerReader, CountingSource]:
    source = CountingSource(LocalFileSource(path))
    return ContainerReader(source, MergePolicy(max_gap=gap)), source


def test_open_is_one_head_read_and_an_index_is_one_more(tmp_path):
    ds = xr.Dataset({f"v{i}": (("y", "x"), np.zeros((600, 600))) for i in range(3)})
    xh.to_hurray(ds, tmp_path / "h.hurray", encoding={"v1": {"chunks": (8, 8)}})
    reader, source = _reader(tmp_path / "h.hurray")
    assert source.requests == [(0, HEAD_SIZE)]
    reader.index("v1")  # 75 * 75 chunks: 6 index pages, after the chunks
    assert len(source.requests) == 2
    reader.index("v1")  # cached
    assert len(source.requests) == 2
    # one small page, in the head: where the pages of the variables placed first go
    # as far as they fit, when not all pages do
    reader.index("v0")
    reader.index("v0")
    assert len(source.requests) == 2
    assert reader.page_table("v0")["offset"][0] < HEAD_SIZE < reader.page_table("v1")["offset"][0]


@pytest.mark.parametrize(("order", "requests"), [("hilbert", 1), ("morton", 1), ("row-major", 2)])
def test_aligned_block_of_chunks_is_one_request_along_a_curve(tmp_path, order, requests):
    data = np.random.default_rng(2).standard_normal((128, 128))
    ds = xr.Dataset({"v": (("y", "x"), data)})
    xh.to_hurray(ds, tmp_path / "b.hurray", encoding={"v": {"chunks": (16, 16)}}, chunk_order=order)
    reader, source = _reader(tmp_path / "b.hurray")
    reader.index("v")
    before = len(source.requests)
    box = (slice(32, 64), slice(96, 128))  # chunks (2..3, 6..7): an aligned 2 x 2 block
    np.testing.assert_array_equal(reader.read("v", box), data[box])
    assert len(source.requests) - before == requests


def test_only_touched_chunks_are_read(tmp_path):
    data = np.arange(64 * 64, dtype="f8").reshape(64, 64)
    ds = xr.Dataset({"v": (("y", "x"), data)})
    xh.to_hurray(ds, tmp_path / "t.hurray", encoding={"v": {"chunks": (8, 8)}}, codecs=None)
    reader, source = _reader(tmp_path / "t.hurray")
    reader.index("v")
    before = len(source.requests)
    reader.read("v", (slice(9, 10), np.array([3, 60])))
    fetched = sum(stop - start for start, stop in source.requests[before:])
    assert fetched == 2 * 8 * 8 * 8  # two uncompressed chunks of 64 float64


@pytest.mark.parametrize(
    "key",
    [
        np.array([True, False, True, False, False, False, False, True]),  # a mask, not 0/1
        np.array([1.7, 2.2]),  # would be truncated to positions 1 and 2
        np.array([[1, 2], [3, 4]]),  # would be flattened into one axis
        True,  # would be position 1
        np.array([2**64 - 1], dtype=np.uint64),  # would wrap round to -1
    ],
)
def test_keys_that_are_not_positions_are_rejected(tmp_path, key):
    ds = xr.Dataset({"v": (("y", "x"), np.arange(40).reshape(8, 5))})
    xh.to_hurray(ds, tmp_path / "k.hurray", encoding={"v": {"chunks": (3, 5)}})
    reader = xh.open_reader(tmp_path / "k.hurray")
    with pytest.raises(IndexError):
        reader.read("v", (key, slice(None)))
