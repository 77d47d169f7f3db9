"""How many runs of index pages a region reads, and where the writers put pages.

A region at most ``s`` chunks wide along each of the ``d`` axes of a Hilbert or
Morton chunk curve, with ``(2 s)^d`` at most a page of entries, has its index
entries in at most ``2^d`` runs of consecutive pages, however many chunks the
variable has (docs/spec/container.md, "Reading a region"); the writers store
a variable's pages back to back in page order, so each run is one request (a new
file's index is packed in one place, container/head.py, for the streaming and the
multipart writer alike: tests/container/test_head.py shows them byte-equal).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import open_reader
from xarray_hurray.container.format import PAGE_ENTRIES
from xarray_hurray.layout import chunk_placement


def page_runs(positions: np.ndarray) -> int:
    """Runs of consecutive page numbers among the pages holding ``positions``."""
    pages = np.unique(positions // PAGE_ENTRIES)
    return 1 + int(np.count_nonzero(np.diff(pages) != 1))


@pytest.mark.parametrize("order", ["hilbert", "morton"])
@pytest.mark.parametrize(
    "grid", [(1000, 1000), (317, 317), (300, 1700), (64, 64, 64), (50, 41, 30)]
)
def test_a_region_reads_at_most_two_to_the_d_runs_of_pages(order, grid):
    d = len(grid)
    side = int(PAGE_ENTRIES ** (1 / d)) // 2  # the widest region with (2 s)^d <= a page
    placement = chunk_placement(grid, order)
    position = np.empty(len(placement), dtype=np.int64)
    position[placement] = np.arange(len(placement))
    rng = np.random.default_rng(math.prod(grid))
    worst = 0
    for _ in range(300):
        sides = rng.integers(1, side + 1, size=d)
        corner = [int(rng.integers(0, n - s + 1)) for n, s in zip(grid, sides, strict=True)]
        box = np.ix_(*[np.arange(c, c + s) for c, s in zip(corner, sides, strict=True)])
        ids = np.ravel_multi_index(tuple(np.broadcast_arrays(*box)), grid).reshape(-1)
        worst = max(worst, page_runs(position[ids]))
    assert worst <= 2**d


def stored_pages_back_to_back(path, name: str) -> None:
    """The stored pages of ``name`` lie in page order, each right after the one
    before it (absent pages skipped)."""
    reader = open_reader(path)
    table = reader.page_table(name)
    lengths = table["length"].astype(np.int64)
    present = np.flatnonzero(table["offset"])
    assert len(present) > 1
    starts = table["offset"][present].astype(np.int64)
    assert (starts[1:] == starts[:-1] + lengths[present[:-1]]).all()


def field(side: int) -> xr.Dataset:
    """A field of ``side`` x ``side`` chunks of 4 x 4, every chunk stored."""
    values = np.arange((side * 4) ** 2, dtype="f4").reshape(side * 4, side * 4)
    return xr.Dataset({"v": (("y", "x"), values)})


ENCODING = {"v": {"chunks": (4, 4)}}


def test_the_streaming_writer_puts_pages_back_to_back(tmp_path):
    path = tmp_path / "big.hurray"
    xh.to_hurray(field(64), path, encoding=ENCODING)  # 4096 chunks: pages after the chunks
    stored_pages_back_to_back(path, "v")


def test_an_update_appends_the_pages_it_rewrites_back_to_back(tmp_path):
    path = tmp_path / "big.hurray"
    xh.to_hurray(field(64), path, encoding=ENCODING)
    before = open_reader(path).page_table("v")
    part = field(64).isel(y=slice(0, 96)) * 0
    xh.to_hurray(part, path, region={"y": slice(0, 96)})
    after = open_reader(path).page_table("v")
    rewritten = np.flatnonzero(after["offset"] != before["offset"])
    assert 1 < len(rewritten) < len(after)
    lengths = after["length"].astype(np.int64)
    starts = after["offset"][rewritten].astype(np.int64)
    # consecutive rewritten pages follow one another in the file
    consecutive = np.diff(rewritten) == 1
    assert (starts[1:][consecutive] == (starts[:-1] + lengths[rewritten[:-1]])[consecutive]).all()


def test_a_region_read_places_its_chunks_without_the_whole_order(tmp_path):
    path = tmp_path / "wide.hurray"
    values = np.zeros((400, 400), dtype="f4")  # 10,000 chunks, all fill but the region's
    values[100:132, 200:232] = 1
    xh.to_hurray(xr.Dataset({"v": (("y", "x"), values)}), path, encoding=ENCODING)
    reader = open_reader(path)
    region = (slice(100, 132), slice(200, 232))  # 64 chunks
    np.testing.assert_array_equal(reader.read("v", region), values[region])
    var = reader.variable("v")
    # neither the placement nor its inverse (8 bytes per chunk each) was computed
    assert "placement" not in var.__dict__ and "position" not in var.__dict__
