"""``hurray convert`` keeps what ``to_hurray`` of the opened input keeps: CF packing,
fill values, time units and calendars, attributes and values, for every output format,
on real netCDF-4, GRIB and HDF5 files."""

from __future__ import annotations

import importlib.util
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.cli import main

COMPARED_ENCODING = ("dtype", "scale_factor", "add_offset", "_FillValue", "missing_value")
COMPARED_ENCODING += ("units", "calendar")
"""The encoding keys that say how values are stored and what they mean: what every
output must keep."""

OUTPUTS = {"hurray": {"engine": "hurray"}, "nc": {"engine": "h5netcdf"}, "zarr": {"engine": "zarr"}}
"""Each output format of ``convert``, by extension, and how xarray opens it."""


def _field(rng: np.random.Generator) -> np.ndarray:
    """Four 6-hourly maps of 2 m temperature (K) with a box of missing values."""
    values = 275.0 + 10.0 * rng.standard_normal((4, 30, 40))
    values[0, :3, :5] = np.nan
    return values


def _grid() -> dict[str, object]:
    return {
        "time": pd.date_range("2024-01-01", periods=4, freq="6h"),
        "lat": np.linspace(50.0, 40.0, 30),
        "lon": np.linspace(0.0, 10.0, 40),
    }


def packed_netcdf(path: Path) -> Path:
    """A netCDF-4 file with ``t2m`` packed as int16 (scale 0.01, offset 275, fill -32767)
    and ``time`` as int32 hours since the first day: the repro of the issue."""
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), _field(np.random.default_rng(0)), {"units": "K"})},
        coords=_grid(),
        attrs={"title": "packed"},
    )
    packing = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 275.0, "_FillValue": -32767}
    times = {"dtype": "int32", "units": "hours since 2024-01-01"}
    ds.to_netcdf(path, engine="h5netcdf", encoding={"t2m": packing, "time": times})
    return path


def unpacked_netcdf(path: Path) -> Path:
    """A netCDF-4 file of float32 values with a NaN fill, a missing_value'd int field
    and times in days on a noleap calendar."""
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 50, (4, 30, 40)).astype("int32")
    ds = xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), _field(rng).astype("float32"), {"units": "K"}),
            "count": (("time", "lat", "lon"), counts, {"long_name": "stations"}),
        },
        coords=_grid(),
    )
    ds = ds.assign_coords(time=xr.date_range("2001-01-01", periods=4, calendar="noleap"))
    times = {"units": "days since 2001-01-01", "calendar": "noleap", "dtype": "int64"}
    ds.to_netcdf(
        path,
        engine="h5netcdf",
        encoding={"time": times, "count": {"_FillValue": -1}, "t2m": {"_FillValue": np.nan}},
    )
    return path


def grib(path: Path) -> Path:
    """cfgrib's example GRIB file (temperature on pressure levels, two dates), as
    xarray ships it among its test data."""
    shipped = Path(xr.__file__).parent / "tests" / "data" / "example.grib"
    if not shipped.is_file():
        pytest.skip("this xarray does not ship example.grib")
    return Path(shutil.copy(shipped, path))


def plain_hdf5(path: Path) -> Path:
    """An HDF5 file written by h5py without netCDF's conventions: no dimension scales
    (xarray names the dimensions), a packed int16 dataset with CF attributes, a
    big-endian float field and a complex one."""
    rng = np.random.default_rng(2)
    with h5py.File(path, "w") as file:
        packed = file.create_dataset("packed", data=rng.integers(-1000, 1000, (20, 30), "i2"))
        packed[0, 0] = -32768
        packed.attrs.update(
            {"scale_factor": 0.5, "add_offset": 10.0, "_FillValue": np.int16(-32768)}
        )
        packed.attrs["units"] = "m"
        file.create_dataset("big_endian", data=rng.random((20, 30)).astype(">f8"))
        file.create_dataset("complex", data=rng.random(12) + 1j * rng.random(12))
        file.attrs["history"] = "written by h5py"
    return path


INPUTS: dict[str, Callable[[Path], Path]] = {
    "packed.nc": packed_netcdf,
    "unpacked.nc": unpacked_netcdf,
    "example.grib": grib,
    "plain.h5": plain_hdf5,
}


def _same_setting(key: str, have: object, wanted: object) -> bool:
    """Whether two values of encoding ``key`` say the same: types whatever their byte
    order, time units by their unit and reference date (xarray spells the date of ``"seconds since
    1970-01-01T00:00:00"`` shorter when it encodes values in memory than from dask)."""
    if have is None or wanted is None:
        return have is wanted
    if key == "dtype":  # the byte order is the output's own (Hurray: little-endian)
        return bool(np.dtype(have).newbyteorder("<") == np.dtype(wanted).newbyteorder("<"))
    if key == "units" and isinstance(have, str) and isinstance(wanted, str) and " since " in wanted:
        unit, _, date = have.partition(" since ")
        unit_wanted, _, date_wanted = wanted.partition(" since ")
        return unit == unit_wanted and pd.Timestamp(date) == pd.Timestamp(date_wanted)
    wanted_array = np.asarray(wanted)
    return bool(
        np.array_equal(np.asarray(have), wanted_array, equal_nan=wanted_array.dtype.kind == "f")
    )


def _values_equal(a: xr.Variable, b: xr.Variable) -> bool:
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a.values, b.values, equal_nan=True))
    return bool(np.array_equal(a.values, b.values))


def compare(got: xr.Dataset, expected: xr.Dataset) -> list[str]:
    """What differs between two opened datasets: the variables, and for each its
    dimensions, type, values, attributes and the encoding keys of
    :data:`COMPARED_ENCODING`; empty when they agree."""
    found = []
    if set(got.variables) != set(expected.variables):
        return [f"variables {sorted(got.variables)} != {sorted(expected.variables)}"]
    if got.attrs != expected.attrs:
        found.append(f"attrs {got.attrs} != {expected.attrs}")
    for name, want in expected.variables.items():
        var = got.variables[name]
        if var.dims != want.dims or var.dtype != want.dtype:
            found.append(f"{name}: {var.dims} {var.dtype} != {want.dims} {want.dtype}")
            continue
        if not _values_equal(var, want):
            found.append(f"{name}: values differ")
        if var.attrs.keys() != want.attrs.keys() or any(
            not np.array_equal(var.attrs[k], want.attrs[k]) for k in want.attrs
        ):
            found.append(f"{name}: attrs {var.attrs} != {want.attrs}")
        for key in COMPARED_ENCODING:
            have, wanted = var.encoding.get(key), want.encoding.get(key)
            if not _same_setting(key, have, wanted):
                found.append(f"{name}: encoding[{key!r}] {have!r} != {wanted!r}")
    return found


# h5netcdf's note on naming the dimensions of a plain HDF5 file
@pytest.mark.filterwarnings("ignore:The 'phony_dims' kwarg")
@pytest.mark.parametrize("output", list(OUTPUTS))
@pytest.mark.parametrize("source", list(INPUTS))
def test_convert_keeps_what_to_hurray_of_the_opened_input_keeps(tmp_path, capsys, source, output):
    if source.endswith(".grib") and importlib.util.find_spec("cfgrib") is None:
        pytest.skip("cfgrib is not installed")
    path = INPUTS[source](tmp_path / source)
    reference = tmp_path / "reference.hurray"
    with xr.open_dataset(path) as opened:
        xh.to_hurray(opened, reference)
    out = tmp_path / f"out.{output}"
    assert main(["convert", str(path), str(out)]) == 0
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # zarr's consolidated note
        with (
            xr.open_dataset(out, **OUTPUTS[output]) as got,
            xr.open_dataset(reference, engine="hurray") as expected,
        ):
            assert compare(got, expected) == []
