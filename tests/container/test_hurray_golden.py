"""The golden Hurray files: their bytes and their content are fixed for a format version.

``hurray_file_golden.hurray`` was written by the format 1.0 writer and
``hurray_file_golden_1_1.hurray`` by the 1.1 writer: they are read, for ever, never
written again.  ``hurray_file_golden_1_2.hurray`` was written by the 1.2 writer
before it placed index coordinates and small variables first (container/front.py),
and is read for ever too; ``hurray_file_golden_1_2_placed.hurray`` is what the
writer writes today, the same content in the same version with its chunks placed
so.
When the format changes on purpose, bump ``xarray_hurray.container.VERSION`` and add
a new golden file for the new version (``python tests/container/test_hurray_golden.py``
writes it); never rewrite an old one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import VERSION, ContainerReader, open_reader
from xarray_hurray.container.update import StagedRewrite
from xarray_hurray.io import open_source
from xarray_hurray.testing.old_versions import write_1_1

GOLDEN = Path(__file__).parents[1] / "data" / "hurray_file_golden.hurray"
GOLDEN_1_1 = Path(__file__).parents[1] / "data" / "hurray_file_golden_1_1.hurray"
GOLDEN_1_2 = Path(__file__).parents[1] / "data" / "hurray_file_golden_1_2.hurray"
GOLDEN_1_2_PLACED = Path(__file__).parents[1] / "data" / "hurray_file_golden_1_2_placed.hurray"


def golden_dataset() -> xr.Dataset:
    """The content of the golden file."""
    ds = xr.Dataset(
        {
            "field": (("y", "x"), np.arange(64, dtype="f4").reshape(8, 8) / 4),
            "counts": (("y", "z"), np.arange(40, dtype="i2").reshape(8, 5) - 20),
            "names": (("z",), np.array(["a", "bb", "", "dé", "🌍"], dtype=object)),
            "codes": (("z",), np.array(["ab", "c", "d", "efg", "h"], dtype="U3")),
            "flag": ((), np.True_),
        },
        coords={
            "time": ("y", pd.date_range("2024-01-01", periods=8, freq="D")),
            "x": np.linspace(0.0, 7.0, 8),
        },
        attrs={"title": "golden", "answer": np.int64(42), "ratios": [0.5, 0.25]},
    )
    ds["field"].attrs["units"] = "m"
    return ds


def golden_dataset_1_1() -> xr.Dataset:
    """The content of the 1.1 golden file: the 1.0 content and a variable with
    missing chunks (two of its four chunks hold only the fill value)."""
    sparse = np.full((8, 8), np.nan, dtype="f4")
    sparse[:4, :4] = np.arange(16).reshape(4, 4)
    sparse[4:, 4:] = -1.5
    sparse[7, 7] = np.nan
    return golden_dataset().assign(sparse=(("y", "x"), sparse))


GOLDEN_ENCODING = {
    "field": {"chunks": (4, 4)},
    "counts": {"chunks": (3, 5), "chunk_order": "morton"},
    "names": {"chunks": (2,), "layout": "row-major"},
    "sparse": {"chunks": (4, 4)},
}


def golden_tree_1_2() -> xr.DataTree:
    """The content of the 1.2 golden file: the 1.1 content at the root and a group
    holding a variable of 1100 one-element chunks (two index pages), 12 stored: 11
    on the first page, one on the second."""
    long = np.full(1100, np.nan, dtype="f4")
    long[:1100:100] = np.arange(11)
    long[1050] = 42
    return xr.DataTree.from_dict(
        {
            "/": golden_dataset_1_1(),
            "/g": xr.Dataset({"long": ("n", long)}, attrs={"group": "g"}),
            "/g/h": xr.Dataset({"note": ((), "deep")}),
        }
    )


def write_golden(path: Path) -> None:
    """Write the golden content of the current version with fixed, codec-free settings
    (the layout "auto" the writer defaulted to when the file was made)."""
    encoding = {"/": GOLDEN_ENCODING, "/g": {"long": {"chunks": (1,)}}}
    xh.to_hurray(golden_tree_1_2(), path, codecs=None, encoding=encoding, layout="auto")


def test_golden_files_are_of_their_versions():
    assert ContainerReader(open_source(GOLDEN)).header.version == (1, 0)
    assert ContainerReader(open_source(GOLDEN_1_1)).version == (1, 1)
    reader = ContainerReader(open_source(GOLDEN_1_2))
    assert reader.version == VERSION, "add a golden file for the new version"


def test_writing_gives_the_golden_bytes(tmp_path):
    write_golden(tmp_path / "new.hurray")
    assert (tmp_path / "new.hurray").read_bytes() == GOLDEN_1_2_PLACED.read_bytes(), (
        "the bytes of a write changed: bump the format VERSION and add a golden file"
    )


def _rewritten(path: Path, directory: Path) -> bytes:
    """The bytes of the file at ``path`` rewritten whole (as ``compact`` does), every
    chunk copied as stored: a new file, of the current version."""
    copy = directory / "copy.hurray"
    copy.write_bytes(path.read_bytes())
    reader = open_reader(copy)
    with StagedRewrite(copy, reader, reader.metadata, {}):
        pass
    return copy.read_bytes()


def _rewritten_in_1_1(path: Path, directory: Path) -> bytes:
    """The bytes of :func:`_rewritten`, laid out again in 1.1 by the builder of 1.1
    files that tests use (the package writes the current version only)."""
    (directory / "current.hurray").write_bytes(_rewritten(path, directory))
    write_1_1(open_reader(directory / "current.hurray"), directory / "old.hurray")
    return (directory / "old.hurray").read_bytes()


@pytest.mark.parametrize(
    ("path", "rewrite", "golden"),
    [
        (GOLDEN_1_1, _rewritten_in_1_1, GOLDEN_1_1),
        (GOLDEN_1_2, _rewritten, GOLDEN_1_2_PLACED),
        (GOLDEN_1_2_PLACED, _rewritten, GOLDEN_1_2_PLACED),
    ],
    ids=["1.1", "1.2", "1.2 placed"],
)
def test_a_rewrite_in_the_files_version_gives_its_golden_bytes(tmp_path, path, rewrite, golden):
    """A rewrite writes 1.2 as today's golden file holds it (a file of the earlier
    placement gets today's), and the 1.1 files of tests are laid out exactly as the
    1.1 writer laid them out."""
    assert rewrite(path, tmp_path) == golden.read_bytes()


def test_the_1_1_golden_file_leaves_out_the_fill_chunks():
    sizes = ContainerReader(open_source(GOLDEN_1_1)).index("sparse")["size"]
    assert (sizes == 0).tolist() == [False, True, True, False]


def test_the_1_2_golden_file_lists_only_stored_chunks():
    reader = ContainerReader(open_source(GOLDEN_1_2))
    table = reader.page_table("g/long")
    # page 0: a 128-byte bitmap and 11 entries; page 1: 10 bytes of bitmap, 1 entry
    assert table["length"].tolist() == [128 + 11 * 20, 10 + 20]
    # the pages are in the first 64 KiB, read with the head
    assert (table["offset"] + table["length"] <= 65536).all()
    stored = np.flatnonzero(reader.index("g/long")["size"])
    assert stored.tolist() == [*range(0, 1100, 100), 1050]


@pytest.mark.parametrize("path", [GOLDEN_1_2, GOLDEN_1_2_PLACED], ids=["1.2", "1.2 placed"])
def test_the_1_2_golden_file_holds_the_golden_tree(path):
    with xr.open_datatree(path, engine="hurray") as tree:
        xr.testing.assert_identical(tree.load(), golden_tree_1_2())


@pytest.mark.parametrize(
    ("path", "make"), [(GOLDEN, golden_dataset), (GOLDEN_1_1, golden_dataset_1_1)]
)
def test_golden_file_holds_the_golden_dataset(path, make):
    with xr.open_dataset(path, engine="hurray") as ds:
        xr.testing.assert_identical(ds.load(), make())
        assert ds["field"].encoding["layout"] == {
            "name": "hilbert",
            "hilbert_rank": 2,
            "hilbert_order": 2,
        }
        assert ds["counts"].encoding["layout"] == {"name": "morton", "morton_bits": [2, 3]}


if __name__ == "__main__":
    write_golden(GOLDEN_1_2_PLACED)
