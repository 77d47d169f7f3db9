"""The golden Hurray file: its bytes and its content are fixed for a format version.

When the format changes on purpose, bump ``xarray_hurray.container.VERSION`` and
regenerate the file with ``python tests/container/test_hurray_golden.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import VERSION, ContainerReader
from xarray_hurray.io import open_source

GOLDEN = Path(__file__).parents[1] / "data" / "hurray_file_golden.hurray"


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


def write_golden(path: Path) -> None:
    """Write the golden dataset with fixed, codec-free settings."""
    xh.to_hurray(
        golden_dataset(),
        path,
        codecs=None,
        encoding={
            "field": {"chunks": (4, 4)},
            "counts": {"chunks": (3, 5), "chunk_order": "morton"},
            "names": {"chunks": (2,), "layout": "row-major"},
        },
    )


def test_golden_file_is_of_the_current_version():
    reader = ContainerReader(open_source(GOLDEN))
    assert reader.header.version == VERSION, "regenerate the golden file for the new version"


def test_writing_gives_the_golden_bytes(tmp_path):
    write_golden(tmp_path / "new.hurray")
    assert (tmp_path / "new.hurray").read_bytes() == GOLDEN.read_bytes(), (
        "the bytes of a write changed: bump the format VERSION and regenerate the golden file"
    )


def test_golden_file_holds_the_golden_dataset():
    with xr.open_dataset(GOLDEN, engine="hurray") as ds:
        xr.testing.assert_identical(ds.load(), golden_dataset())
        assert ds["field"].encoding["layout"] == {
            "name": "hilbert",
            "hilbert_rank": 2,
            "hilbert_order": 2,
        }
        assert ds["counts"].encoding["layout"] == {"name": "morton", "morton_bits": [2, 3]}


if __name__ == "__main__":
    write_golden(GOLDEN)
