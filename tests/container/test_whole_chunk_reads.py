"""Reads of one whole stored chunk (what each Dask task of ``chunks={}`` asks for),
which take a path of their own with nothing planned: every chunk of a variable, in
every element order and byte order, read alone and compared with numpy; missing,
edge and damaged chunks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import open_reader
from xarray_hurray.errors import HurrayFormatError

SHAPE, CHUNKS = (40, 36), (8, 8)


def whole_chunk_keys(shape, chunks):
    """The slices of every full chunk of the grid (edge chunks cut short excluded)."""
    for i in range(shape[0] // chunks[0]):
        for j in range(shape[1] // chunks[1]):
            yield (
                slice(i * chunks[0], (i + 1) * chunks[0]),
                slice(j * chunks[1], (j + 1) * chunks[1]),
            )


@pytest.mark.parametrize("dtype", ["<f4", ">f8", "<i2", ">u4"])
@pytest.mark.parametrize("layout", ["row-major", "morton", "hilbert"])
def test_every_whole_chunk_reads_as_numpy(tmp_path, dtype, layout):
    values = (np.arange(np.prod(SHAPE)).reshape(SHAPE) % 251).astype(dtype)
    path = tmp_path / "c.hurray"
    ds = xr.Dataset({"v": (("y", "x"), values)})
    xh.to_hurray(ds, path, encoding={"v": {"chunks": CHUNKS}}, layout=layout)
    reader = open_reader(path)
    first = None
    for key in whole_chunk_keys(SHAPE, CHUNKS):
        got = reader.read("v", key)
        np.testing.assert_array_equal(got, values[key])
        assert got.dtype == np.dtype(dtype).newbyteorder("=")
        assert got.flags.writeable
        if first is None:
            first = got
    assert first is not None
    first[...] = 0  # the caller's own: the next read of the chunk is unchanged
    np.testing.assert_array_equal(
        reader.read("v", next(whole_chunk_keys(SHAPE, CHUNKS))), values[:8, :8]
    )


def test_missing_and_edge_chunks(tmp_path):
    values = np.random.default_rng(1).standard_normal(SHAPE).astype("f4")
    values[8:16, 8:16] = np.nan  # one chunk of the fill alone: not stored
    path = tmp_path / "m.hurray"
    xh.to_hurray(xr.Dataset({"v": (("y", "x"), values)}), path, encoding={"v": {"chunks": CHUNKS}})
    reader = open_reader(path)
    np.testing.assert_array_equal(
        reader.read("v", (slice(8, 16), slice(12, 24))), values[8:16, 12:24]
    )
    # the edge: rows 32-39 of a chunk of 8 are whole, columns stop at 36 = 3 x 12
    np.testing.assert_array_equal(
        reader.read("v", (slice(32, 40), slice(24, 36))), values[32:, 24:]
    )
    np.testing.assert_array_equal(
        reader.read("v", (slice(32, None), slice(24, None))), values[32:, 24:]
    )


def test_a_damaged_whole_chunk_is_named(tmp_path):
    values = np.arange(np.prod(SHAPE), dtype="f4").reshape(SHAPE)
    path = tmp_path / "d.hurray"
    xh.to_hurray(xr.Dataset({"v": (("y", "x"), values)}), path, encoding={"v": {"chunks": CHUNKS}})
    reader = open_reader(path)
    var = reader.variable("v")
    chunk_id = 6  # row 1, column 1 of the 5 x 5 grid
    entry = reader.entries("v", np.array([chunk_id]))[0]
    data = bytearray(path.read_bytes())
    data[int(entry["offset"]) + int(entry["size"]) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert var.grid_shape == (5, 5)
    with pytest.raises(HurrayFormatError, match=f"chunk {chunk_id} of variable 'v'"):
        open_reader(path).read("v", (slice(8, 16), slice(8, 16)))


GOLDEN = Path(__file__).parents[1] / "data"


@pytest.mark.parametrize(
    "name",
    [
        "hurray_1_3_tree.hurray",
        "hurray_1_3_layouts.hurray",
        "hurray_1_3_dtypes.hurray",
    ],
)
def test_every_whole_chunk_of_the_golden_files_reads_as_the_whole_variable(name):
    reader = open_reader(GOLDEN / name)
    for path, var in reader.metadata.all_variables():
        whole = reader.read(path)
        for corner in np.ndindex(*var.grid_shape):
            key = tuple(slice(i * c, (i + 1) * c) for i, c in zip(corner, var.chunks, strict=True))
            if any(k.stop > n for k, n in zip(key, var.shape, strict=True)):
                continue  # a chunk cut short at the edge is not a whole-chunk key
            np.testing.assert_array_equal(reader.read(path, key), whole[key])


def test_a_whole_chunk_of_an_absent_index_page_reads_as_the_fill(tmp_path):
    # 2,048 chunks in row-major order: the second index page (chunks 1,024-2,047)
    # holds only chunks of the fill, so no page is stored for it
    values = np.zeros((2048, 2), dtype="f4")
    values[1024:] = np.nan
    path = tmp_path / "p.hurray"
    encoding = {"v": {"chunks": (1, 2), "chunk_order": "row-major"}}
    xh.to_hurray(xr.Dataset({"v": (("y", "x"), values)}), path, encoding=encoding)
    reader = open_reader(path)
    assert reader.page_table("v")[1]["offset"] == 0  # absent
    np.testing.assert_array_equal(reader.read("v", (slice(1500, 1501), slice(0, 2))), np.nan)
    np.testing.assert_array_equal(reader.read("v", (slice(3, 4), slice(0, 2))), 0)
