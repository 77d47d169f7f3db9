"""Hostile CF attributes and names: HurrayFormatError before xarray's decoders run."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import xarray as xr
from fuzz_cases import metadata_text, with_metadata

import xarray_hurray as xh


def hostile(tmp_path, dtype: str, data: list, attrs: dict) -> bytes:
    """A file of one variable ``v`` whose attributes are replaced by ``attrs``."""
    path = tmp_path / "cf.hurray"
    xh.to_hurray(xr.Dataset({"v": (("x",), np.array(data, dtype=dtype))}), path)
    good = path.read_bytes()
    meta = json.loads(metadata_text(good))
    meta["variables"][0]["attrs"] = attrs
    return with_metadata(good, json.dumps(meta).encode())


COMPLEX = {"dtype": "complex64", "shape": [], "data": [[1, 1]]}


@pytest.mark.parametrize(
    ("dtype", "attrs", "match"),
    [
        ("S3", {"_Encoding": "rot13"}, "'_Encoding' must be the name of a text encoding"),
        ("S3", {"_Encoding": "nope"}, "'_Encoding' must be the name of a text encoding"),
        ("S3", {"_Encoding": 5}, "'_Encoding' must be a string"),
        ("f4", {"_Encoding": "utf-8"}, "'_Encoding' must be absent, as the variable holds numbers"),
        ("i2", {"_Encoding": "ascii"}, "'_Encoding' must be absent, as the variable holds numbers"),
        ("?", {"_Encoding": "utf-8"}, "'_Encoding' must be absent, as the variable holds numbers"),
        (
            "U2",
            {"_Encoding": "utf-8"},
            "'_Encoding' must be absent, as the variable holds text, not",
        ),
        (
            "O",
            {"_Encoding": "utf-8"},
            "'_Encoding' must be absent, as the variable holds text, not",
        ),
        ("i2", {"scale_factor": "x"}, "'scale_factor' must be one real number"),
        ("i2", {"scale_factor": [1.0, 2.0]}, "'scale_factor' must be one real number"),
        ("i2", {"scale_factor": COMPLEX}, "'scale_factor' must be one real number"),
        ("i2", {"add_offset": [1, "a"]}, "'add_offset' must be one real number"),
        ("i2", {"scale_factor": 10**30}, "'scale_factor' must be one real number"),
        (
            "i2",
            {"dtype": {"dtype": "float64", "shape": [2], "data": [1, 2]}},
            "'dtype' must be a string",
        ),
        ("U2", {"scale_factor": 2}, "'scale_factor' must be absent, as the variable holds text"),
        ("O", {"add_offset": 1.5}, "'add_offset' must be absent, as the variable holds text"),
        ("i2", {"_FillValue": "x"}, "'_FillValue' must be a number"),
        ("i2", {"_FillValue": True}, "'_FillValue' must be a number"),
        ("U2", {"_FillValue": 3}, "'_FillValue' must be text"),
        ("i2", {"missing_value": ["a"]}, "'missing_value' must be a number"),
        ("i2", {"units": 5}, "'units' must be a string"),
        ("i2", {"units": "days since 2000-01-01", "calendar": 5}, "'calendar' must be a string"),
        ("i2", {"coordinates": 5}, "'coordinates' must be a string"),
        ("i2", {"_Unsigned": 5}, "'_Unsigned' must be a string"),
    ],
)
def test_hostile_cf_attributes_are_refused_by_name(tmp_path, dtype, attrs, match):
    blob = hostile(tmp_path, dtype, ["a"] if dtype[0] in "SUO" else [1], attrs)
    with pytest.raises(xh.HurrayFormatError, match=rf"variable 'v': CF attribute {match}"):
        xr.open_dataset(io.BytesIO(blob), engine="hurray")
    # the container itself reads it: only xarray's decoders need the types
    assert xh.open_reader(io.BytesIO(blob)).variable("v").attrs


@pytest.mark.parametrize(
    ("attrs", "values"),
    [
        ({"scale_factor": 2, "add_offset": 0.5, "_FillValue": 1}, [np.nan, 4.5]),
        ({"missing_value": [1, 2], "scale_factor": np.float32(3)}, [np.nan, np.nan]),
        ({"units": "seconds"}, [1, 2]),
    ],
)
def test_well_typed_cf_attributes_still_decode(tmp_path, attrs, values):
    blob = hostile(tmp_path, "i2", [1, 2], {k: xh_json(v) for k, v in attrs.items()})
    with xr.open_dataset(io.BytesIO(blob), engine="hurray") as ds:
        out = ds["v"].values
    expected = np.array(values, dtype="f8")
    if ds["v"].dtype.kind == "m":
        out, expected = out.astype("timedelta64[s]").astype("i8"), expected.astype("i8")
    np.testing.assert_allclose(out.astype("f8"), expected.astype("f8"))


def xh_json(value: object) -> object:
    """``value`` as the metadata stores it."""
    from xarray_hurray.container.attrs import encode_attr

    return encode_attr(value)


def test_time_units_xarray_cannot_parse_stay_xarrays_error(tmp_path):
    blob = hostile(tmp_path, "i2", [1], {"units": "days since blah"})
    with pytest.raises(ValueError, match="unable to decode time units"):
        xr.open_dataset(io.BytesIO(blob), engine="hurray")


def test_a_scalar_named_like_a_dimension_is_refused_by_name(tmp_path):
    path = tmp_path / "x.hurray"
    xh.to_hurray(xr.Dataset({"v": (("x",), [1, 2]), "s": ((), 5)}), path)
    good = path.read_bytes()
    meta = json.loads(metadata_text(good))
    next(v for v in meta["variables"] if v["name"] == "s")["name"] = "x"
    blob = with_metadata(good, json.dumps(meta).encode())
    assert int(xh.open_reader(io.BytesIO(blob)).read("x")) == 5  # the format holds it
    with pytest.raises(xh.HurrayFormatError, match="scalar variable 'x' is named like a dimen"):
        xr.open_dataset(io.BytesIO(blob), engine="hurray")


ENCODING_MISFITS = [
    ("float32", np.array([1.5, 2.0], "f4"), "numbers"),
    ("int64", np.array([1, 2]), "numbers"),
    ("bool", np.array([True, False]), "numbers"),
    ("datetime64", np.array(["2024-01-01", "2024-01-02"], "M8[ns]"), "numbers"),
    ("unicode", np.array(["a", "b"]), "text, not bytes"),
    ("str objects", np.array(["a", "b"], object), "text, not bytes"),
]


@pytest.mark.parametrize(
    ("data", "holds"), [c[1:] for c in ENCODING_MISFITS], ids=[c[0] for c in ENCODING_MISFITS]
)
def test_an_encoding_attribute_is_written_only_on_bytes(tmp_path, data, holds):
    path = tmp_path / "e.hurray"
    ds = xr.Dataset({"v": ("x", data, {"_Encoding": "utf-8"})})
    match = f"variable 'v': attribute '_Encoding' .* the variable holds {holds}; drop the attr"
    with pytest.raises(xh.HurrayValueError, match=match):
        xh.to_hurray(ds, path)
    assert list(tmp_path.iterdir()) == []


def test_an_encoding_attribute_on_bytes_decodes_them(tmp_path):
    path = tmp_path / "e.hurray"
    text = ["Grüße", "€uro"]
    stored = np.array([t.encode("iso8859_15") for t in text])  # S6: bytes, not UTF-8
    xh.to_hurray(xr.Dataset({"v": ("x", stored, {"_Encoding": "iso8859_15"})}), path)
    assert xh.open_reader(path).variable("v").dtype == stored.dtype
    with xr.open_dataset(path, engine="hurray") as ds:
        assert ds["v"].values.tolist() == text
        assert ds["v"].encoding["_Encoding"] == "iso8859_15"
