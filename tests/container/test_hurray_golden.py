"""The golden Hurray files: their bytes and their content are fixed for a format version.

``hurray_file_golden.hurray`` was written by the format 1.0 writer: it is read, for
ever, never written again.  ``hurray_file_golden_1_1.hurray`` is what the writer
writes today.  When the format changes on purpose, bump
``xarray_hurray.container.VERSION`` and add a new golden file for the new version
(``python tests/container/test_hurray_golden.py`` writes it); never rewrite an old one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import VERSION, ContainerReader
from xarray_hurray.io import open_source

GOLDEN = Path(__file__).parents[1] / "data" / "hurray_file_golden.hurray"
GOLDEN_1_1 = Path(__file__).parents[1] / "data" / "hurray_file_golden_1_1.hurray"


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


def write_golden(path: Path) -> None:
    """Write the golden dataset of the current version with fixed, codec-free settings."""
    xh.to_hurray(golden_dataset_1_1(), path, codecs=None, encoding=GOLDEN_ENCODING)


def test_golden_files_are_of_their_versions():
    assert ContainerReader(open_source(GOLDEN)).header.version == (1, 0)
    reader = ContainerReader(open_source(GOLDEN_1_1))
    assert reader.version == VERSION, "add a golden file for the new version"


def test_writing_gives_the_golden_bytes(tmp_path):
    write_golden(tmp_path / "new.hurray")
    assert (tmp_path / "new.hurray").read_bytes() == GOLDEN_1_1.read_bytes(), (
        "the bytes of a write changed: bump the format VERSION and add a golden file"
    )


def test_the_1_1_golden_file_leaves_out_the_fill_chunks():
    sizes = ContainerReader(open_source(GOLDEN_1_1)).index("sparse")["size"]
    assert (sizes == 0).tolist() == [False, True, True, False]


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
    write_golden(GOLDEN_1_1)
