"""Text through to_hurray and back: missing strings stay missing, bytes, character
arrays, fixed-width text, and variable names as xarray's other backends take them."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.errors import HurrayTypeError


def roundtrip(ds: xr.Dataset, path, **kwargs) -> xr.Dataset:
    xh.to_hurray(ds, path, **kwargs)
    return xr.open_dataset(path, engine="hurray")


def missing(values) -> list[bool]:
    return pd.isnull(np.asarray(values, dtype=object)).tolist()


@pytest.mark.parametrize(
    "values",
    [
        ["a", None, "c"],
        ["a", None, ""],  # the empty string is a value: the fill value must differ
        ["", "\x01", None, "\x01\x01"],  # so are the next candidates
        [None, "é", np.nan, pd.NA],
        [b"ab", None, b"", b"cdef"],
    ],
)
def test_missing_elements_of_object_text_come_back_missing(tmp_path, values):
    data = np.empty(len(values), dtype=object)
    data[:] = values
    with roundtrip(xr.Dataset({"s": ("x", data)}), tmp_path / "s.hurray") as out:
        got = out["s"].values.tolist()
        assert missing(got) == missing(values)
        assert [g for g, m in zip(got, missing(values), strict=True) if not m] == [
            v for v in values if not pd.isnull(v)
        ]


@pytest.mark.parametrize("text", ["\x00", "x\x00", "\x00\x00y\x00"])
@pytest.mark.parametrize("dask", [False, True], ids=["numpy", "dask"])
def test_a_scalar_string_keeps_its_trailing_nul_characters(tmp_path, text, dask):
    """A 0-d string was stored as numpy's str array of it, which drops trailing NULs:
    "\\x00" read back as "" (found by the generated round trips)."""
    ds = xr.Dataset({"s": ((), np.array(text, dtype=object))})
    with roundtrip(ds.chunk() if dask else ds, tmp_path / "s.hurray") as out:
        assert out["s"].values.item() == text


def test_missing_strings_are_stored_as_a_cf_fill_value(tmp_path):
    ds = xr.Dataset({"s": ("x", np.array(["a", None, ""], dtype=object))})
    xh.to_hurray(ds, tmp_path / "s.hurray")
    with xr.open_dataset(tmp_path / "s.hurray", engine="hurray", mask_and_scale=False) as raw:
        assert raw["s"].attrs["_FillValue"] == "\x01"
        assert raw["s"].values.tolist() == ["a", "\x01", ""]


@pytest.mark.parametrize("na", [None, pd.NA])
def test_string_dtype_missing_values_come_back_missing(tmp_path, na):
    ds = xr.Dataset({"pandas": ("x", pd.array(["ab", None, ""], dtype="string"))})
    if hasattr(np.dtypes, "StringDType"):  # numpy >= 2.0
        strings = np.array(["ab", na, ""], dtype=np.dtypes.StringDType(na_object=na))
        ds["numpy"] = ("x", strings)
    with roundtrip(ds, tmp_path / "s.hurray") as out:
        for name in ds:
            assert out[name].isnull().values.tolist() == [False, True, False]
            assert out[name].values[[0, 2]].tolist() == ["ab", ""]


def test_dask_strings_with_missing_values_are_refused_naming_the_variable(tmp_path):
    # a lazy array of str, as a file read with chunks={} gives (dask object arrays of
    # no declared element type are loaded whole to find it, as xarray's backends do)
    vlen = xr.coding.strings.create_vlen_dtype(str)
    data = da.from_array(np.array(["a", None, "c", "d"], dtype=vlen), chunks=2)
    ds = xr.Dataset({"names": ("x", data)})
    with pytest.raises(ValueError, match=r"variable 'names' holds missing strings .*_FillValue"):
        xh.to_hurray(ds, tmp_path / "s.hurray")
    assert not list(tmp_path.iterdir())
    # a fill value the caller chooses is the way to write them lazily
    encoding = {"names": {"_FillValue": "?"}}
    with roundtrip(ds, tmp_path / "s.hurray", encoding=encoding) as out:
        assert missing(out["names"].values) == [False, True, False, False]


@pytest.mark.parametrize(
    ("values", "kind", "encoding"),
    [
        ([{"a": 1}, {"b": 2}], "dict", {}),
        ([{"a": 1}, None], "dict", {}),  # a missing element: the search for a fill value
        ([{"a": 1}, None], "dict", {"meta": {"_FillValue": "?"}}),  # the check of one given
        ([[1], [2, 3]], "list", {}),
        (["a", {"b"}], "set", {}),
        ([object(), "b"], "object", {}),
    ],
)
def test_objects_no_stored_type_holds_are_refused_naming_the_variable(
    tmp_path, values, kind, encoding
):
    data = np.empty(len(values), dtype=object)
    data[:] = values
    ds = xr.Dataset({"meta": ("x", data), "ok": ("x", np.arange(len(values)))})
    with pytest.raises(
        HurrayTypeError, match=rf"variable 'meta' holds Python objects of type {kind}"
    ):
        xh.to_hurray(ds, tmp_path / "o.hurray", encoding=encoding)
    assert not list(tmp_path.iterdir())


def test_a_fill_value_that_is_also_a_value_is_refused_or_chosen_anew(tmp_path):
    ds = xr.Dataset({"s": ("x", np.array(["a", None, "?"], dtype=object))})
    with pytest.raises(ValueError, match=r"variable 's': _FillValue '\?' is also the value"):
        xh.to_hurray(ds, tmp_path / "s.hurray", encoding={"s": {"_FillValue": "?"}})
    # read back, then given a real "" where the file's fill value was "": a new one
    with roundtrip(ds.assign(s=ds["s"].fillna("")), tmp_path / "a.hurray") as first:
        assert first["s"].encoding.get("_FillValue") is None
    with roundtrip(ds, tmp_path / "b.hurray") as read:
        assert read["s"].encoding["_FillValue"] == ""
        edited = read.load().copy(deep=True)
    edited["s"][0] = ""
    with roundtrip(edited, tmp_path / "c.hurray") as out:
        assert out["s"].values[[0, 2]].tolist() == ["", "?"]
        assert missing(out["s"].values) == [False, True, False]


def test_bytes_are_stored_fixed_width_and_keep_their_fill_value(tmp_path):
    values = np.array([b"ab", b"cdef", np.nan], dtype=object)
    ds = xr.Dataset({"b": ("t", values, {}, {"_FillValue": b"X"})})
    with roundtrip(ds, tmp_path / "b.hurray") as out:
        assert out["b"].encoding["_FillValue"] == b"X"
        assert out["b"].values[:2].tolist() == [b"ab", b"cdef"]
        assert missing(out["b"].values) == [False, False, True]


@pytest.mark.parametrize("dtype", ["S3", "U3"])
def test_fixed_width_text_keeps_its_shape_and_type(tmp_path, dtype):
    data = np.array([["foo", "ba"], ["", "baz"]], dtype=dtype)
    with roundtrip(xr.Dataset({"t": (("y", "x"), data)}), tmp_path / "t.hurray") as out:
        assert out["t"].shape == (2, 2)
        assert out["t"].dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out["t"].values, data)
    assert xh.open_reader(tmp_path / "t.hurray").variable("t").dtype == dtype


def test_dtype_s1_asks_for_a_character_array(tmp_path):
    ds = xr.Dataset({"t": ("x", ["ab", "cdé"])})
    with roundtrip(ds, tmp_path / "t.hurray", encoding={"t": {"dtype": "S1"}}) as out:
        xr.testing.assert_identical(out, ds)
        assert out["t"].encoding["_Encoding"] == "utf-8"
    stored = xh.open_reader(tmp_path / "t.hurray").variable("t")
    assert (stored.dtype, stored.dims, stored.shape) == ("S1", ("x", "string4"), (2, 4))


def test_a_variable_named_none_roundtrips(tmp_path):
    ds = xr.Dataset({None: ("x", [1, 2])})
    with roundtrip(ds, tmp_path / "n.hurray") as out:
        xr.testing.assert_identical(out, ds)


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        (0, TypeError, "Invalid name 0 .*must be either a string or None"),
        ((4, 5), TypeError, r"Invalid name \(4, 5\) .*string or None"),
        ("", ValueError, "Invalid name '' .*string must be length 1 or greater"),
    ],
)
def test_invalid_names_are_refused_as_xarray_refuses_them(tmp_path, name, error, message):
    with pytest.raises(error, match=message):
        xh.to_hurray(xr.Dataset({name: ("x", [1.0])}), tmp_path / "n.hurray")
