"""Golden files of every element type, codec, layout and chunk order, read
identically, for ever.

The files under ``tests/data/hurray_1_3_*.hurray`` named below were written by the
format 1.3 writer from the datasets below (``python
tests/container/test_hurray_golden_types.py`` writes them), with the codecs of the
format (zstd, lz4, zlib, blosc), whose bytes depend on the codec libraries' versions:
they are read, never written again (``test_hurray_golden.py`` holds the file the
writer reproduces byte for byte).  Every value is built from integer arithmetic so
that the expected datasets do not depend on a random number generator or a math
library.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from xarray_hurray.container import VERSION, open_reader

DATA = Path(__file__).parents[1] / "data"


def dtypes_dataset() -> xr.Dataset:
    """Every element type, edge chunks, an empty and a scalar variable, strings,
    times and typed attributes."""
    n = np.arange(7 * 9).reshape(7, 9)
    ds = xr.Dataset(
        {
            "f4": (("y", "x"), (n / 8 - 3).astype("f4")),
            "f8": (("y", "x"), n * 1e-3 - 0.02),
            "f2": (("y", "x"), (n / 4).astype("f2")),
            "c8": (("y", "x"), (n + 1j * (n % 5)).astype("c8")),
            "c16": (("y",), np.arange(7) - 2.5j),
            "i1": (("y", "x"), ((n * 37) % 256 - 128).astype("i1")),
            "i2": (("y", "x"), (n * 1021 - 30000).astype("i2")),
            "i4": (("y", "x"), (n * 7919 * 1000).astype("i4")),
            "i8": (("x",), (np.arange(9) - 4) * 2**60),
            "u1": (("y", "x"), (n * 3 % 256).astype("u1")),
            "u2": (("x",), (np.arange(9) * 8191).astype("u2")),
            "u4": (("x",), (np.arange(9) * 2**29).astype("u4")),
            "u8": (("x",), np.arange(9, dtype="u8") * 2**61),
            "b": (("y", "x"), n % 3 == 0),
            "text": (("k",), np.array(["", "a", "héllo", "🌍 wörld", "x" * 33], dtype=object)),
            "fixed": (("k",), np.array(["ab", "c", "", "déf", "g"], dtype="U3")),
            "raw": (("k",), np.array([b"a", b"bc", b"", b"d\x00e", b"fgh"], dtype="S3")),
            "empty": (("e", "x"), np.zeros((0, 9), dtype="i4")),
            "scalar": ((), np.float64(-0.0)),
            "nan": (("x",), np.where(np.arange(9) % 2, np.nan, np.arange(9.0))),
            "elapsed": (("k",), pd.to_timedelta(np.arange(5) * 90, "s").to_numpy()),
        },
        coords={
            "time": ("y", pd.date_range("1999-12-30", periods=7, freq="12h")),
            "x": np.arange(9, dtype="i2") * 10,
        },
        attrs={
            "title": "element types",
            "i": np.int16(-7),
            "f": np.array([0.5, np.inf, -np.inf], dtype="f8"),
            "nested": [1, [2, "three"]],
            "none": "",
        },
    )
    ds["f4"].attrs = {"units": "K", "valid_range": np.array([-3.0, 5.0], dtype="f4")}
    return ds


DTYPES_ENCODING = {
    "f4": {"chunks": (4, 4), "codecs": "zstd"},
    "f8": {"chunks": (3, 4), "codecs": "lz4", "layout": "morton"},
    "f2": {"chunks": (7, 9), "codecs": None},
    "c8": {"chunks": (2, 8), "codecs": "zlib", "layout": "row-major"},
    "c16": {"chunks": (4,), "codecs": "blosc"},
    "i1": {"chunks": (4, 4), "codecs": None, "chunk_order": "morton"},
    "i2": {"chunks": (5, 2), "codecs": "blosc", "chunk_order": "row-major"},
    "i4": {"chunks": (8, 8), "codecs": "zstd"},
    "b": {"chunks": (2, 2), "codecs": "zlib"},
    "text": {"chunks": (2,), "codecs": "zstd"},
    "fixed": {"chunks": (3,), "codecs": None},
    "raw": {"chunks": (4,), "codecs": "lz4"},
    "empty": {"chunks": (1, 4)},
}


def layouts_dataset() -> xr.Dataset:
    """Three- and four-dimensional variables in every layout and chunk order, with
    chunk axes, chunks larger than the array and partial edge chunks everywhere."""
    n = np.arange(5 * 12 * 10).reshape(5, 12, 10)
    return xr.Dataset(
        {
            "hilbert3": (("t", "y", "x"), (n % 251).astype("f4")),
            "morton3": (("t", "y", "x"), (n * 3 % 65521).astype("u2")),
            "rowmajor3": (("t", "y", "x"), n.astype("i8") - 300),
            "timeaxes": (("t", "y", "x"), (n / 2).astype("f8")),
            "big_chunk": (("y", "x"), n[0].astype("i4")),
            "four": (("a", "t", "y", "x"), np.stack([n, -n]).astype("i2")),
        },
        attrs={"title": "layouts"},
    )


LAYOUTS_ENCODING = {
    "hilbert3": {"chunks": (4, 4, 4), "layout": "hilbert", "codecs": "zstd"},
    "morton3": {"chunks": (2, 5, 3), "layout": "morton", "chunk_order": "morton"},
    "rowmajor3": {"chunks": (3, 3, 3), "layout": "row-major", "chunk_order": "row-major"},
    "timeaxes": {"chunks": (1, 4, 4), "chunk_axes": ("y", "x"), "codecs": "lz4"},
    "big_chunk": {"chunks": (16, 16), "codecs": None},
    "four": {"chunks": (1, 2, 4, 4), "layout": "morton", "chunk_axes": ("y", "x", "t")},
}


def nested_attrs_dataset() -> xr.Dataset:
    """Typed attributes inside lists, at every depth: the writer stores each numpy item
    of a list as a typed object."""
    ds = xr.Dataset(
        {"v": (("x",), np.arange(6, dtype="i2"))},
        attrs={
            "levels": [np.array([1.5, 2.5], dtype="f4"), np.bool_(True), "text"],
            "deep": [1, [np.uint16(7), [np.array([[1, 2], [3, 4]], dtype="i8")]], []],
        },
    )
    ds["v"].attrs = {
        "flag_values": [np.int8(0), np.int8(1), np.int8(2)],
        "valid_range": [np.float64(-1.5), np.float64(np.inf)],
        "pairs": [np.complex64(1 - 2j), np.array(["ab", "c"], dtype="U2")],
    }
    return ds


GOLDEN_TYPES = {
    "hurray_1_3_dtypes.hurray": (dtypes_dataset, DTYPES_ENCODING),
    "hurray_1_3_layouts.hurray": (layouts_dataset, LAYOUTS_ENCODING),
    "hurray_1_3_nested_attrs.hurray": (nested_attrs_dataset, {"v": {"chunks": (4,)}}),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_TYPES))
def test_a_golden_file_reads_identically(name):
    path = DATA / name
    make, encoding = GOLDEN_TYPES[name]
    assert open_reader(path).version == VERSION
    with xr.open_dataset(path, engine="hurray") as ds:
        xr.testing.assert_identical(ds.load(), make())
        for var, settings in encoding.items():
            assert ds[var].encoding["chunks"] == settings["chunks"]


def _same_attr(got: object, expected: object) -> bool:
    """Whether two attribute values are equal with the same types, at every depth
    (``assert_identical`` takes ``np.int8(1)`` for ``1``)."""
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(map(_same_attr, got, expected))
        )
    if isinstance(expected, np.ndarray | np.generic):
        return (
            type(got) is type(expected)
            and got.dtype == expected.dtype
            and np.array_equal(got, expected)
        )
    return type(got) is type(expected) and got == expected


def test_typed_attributes_inside_lists_keep_their_types():
    expected = nested_attrs_dataset()
    with xr.open_dataset(DATA / "hurray_1_3_nested_attrs.hurray", engine="hurray") as ds:
        for got, want in ((ds.attrs, expected.attrs), (ds["v"].attrs, expected["v"].attrs)):
            assert set(got) == set(want)
            for key, value in want.items():
                assert _same_attr(got[key], value), key


@pytest.mark.parametrize("name", sorted(GOLDEN_TYPES))
def test_regions_of_a_golden_file_read_as_numpy_does(name):
    make, _ = GOLDEN_TYPES[name]
    expected = make()
    reader = open_reader(DATA / name)
    for var in reader.metadata.variables:
        if var.dtype == "string" or var.name not in expected or not var.shape:
            continue
        truth = xr.conventions.encode_cf_variable(expected[var.name].variable).values
        key = tuple(slice(n // 3, max(n - 1, n // 3)) for n in var.shape)
        np.testing.assert_array_equal(reader.read(var.name, key), truth[key])


if __name__ == "__main__":  # run once, by the format 1.3 writer; kept for the record
    import xarray_hurray as xh

    for file_name, (make_dataset, settings) in GOLDEN_TYPES.items():
        xh.to_hurray(make_dataset(), DATA / file_name, encoding=settings)
