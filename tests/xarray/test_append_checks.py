"""Appends into a Hurray file (``to_hurray``) and a Zarr store (``to_zarr``) are safer
than Zarr's: index values held already and a changed coordinate without the append
dimension are refused, naming them, and attributes the variables keep as stored warn.
Each starts from a real netCDF file, read as a user reads one."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.errors import AttrsDroppedWarning, HurrayValueError


def _to_hurray(ds: xr.Dataset, target: Path, **kwargs: object) -> None:
    xh.to_hurray(ds, target, **kwargs)


def _to_zarr(ds: xr.Dataset, target: Path, **kwargs: object) -> None:
    xh.to_zarr(ds, target, **({"mode": "w"} if "append_dim" not in kwargs else {}), **kwargs)


WRITERS: dict[str, tuple[Callable[..., None], str]] = {
    "hurray": (_to_hurray, "hurray"),
    "zarr": (_to_zarr, "zarr"),
}
"""Each writer, and the engine that reads what it wrote."""


@pytest.fixture
def source(tmp_path) -> xr.Dataset:
    """Six-hourly 2 m temperature on a 0.1 degree grid in a netCDF-4 file (float32
    coordinates, packed values), opened with xarray."""
    rng = np.random.default_rng(0)
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), 275 + rng.random((4, 8, 12)), {"units": "K"})},
        coords={
            "time": pd.date_range("2024-01-01", periods=4, freq="6h"),
            "lat": 50.0 - 0.1 * np.arange(8),
            "lon": 0.1 * np.arange(12),
        },
    )
    packing = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 275.0, "_FillValue": -32767}
    encoding = {"t2m": packing, "lat": {"dtype": "float32"}, "lon": {"dtype": "float32"}}
    ds.to_netcdf(tmp_path / "source.nc", engine="h5netcdf", encoding=encoding)
    with xr.open_dataset(tmp_path / "source.nc", engine="h5netcdf") as opened:
        yield opened.load()


def later(ds: xr.Dataset, days: int = 1) -> xr.Dataset:
    return ds.assign_coords(time=ds.time + np.timedelta64(days, "D"))


@pytest.fixture(params=list(WRITERS))
def target(request, tmp_path, source):
    """The source written by each writer: its write function, the target, its engine."""
    write, engine = WRITERS[request.param]
    path = tmp_path / f"out.{engine}"
    write(source, path)
    return write, path, engine


def times(path: Path, engine: str) -> list[pd.Timestamp]:
    with xr.open_dataset(path, engine=engine) as ds:
        return list(ds.indexes["time"])


def test_an_append_of_index_values_held_already_is_refused(target, source):
    write, path, engine = target
    before = times(path, engine)
    overlapping = later(source.isel(time=slice(2, 4)), 0).isel(time=[1])  # the last time again
    overlapping = xr.concat([overlapping, later(overlapping, 1)], "time")
    with pytest.raises(HurrayValueError, match=r"append_dim='time': 1 of the values appended are "
                       r"already in the (file|store) \(2024-01-01 18:00:00; it holds 4 from "
                       r"2024-01-01 00:00:00 to 2024-01-01 18:00:00\)"):  # fmt: skip
        write(overlapping, path, append_dim="time")
    assert times(path, engine) == before


@pytest.mark.parametrize("mode", ["a", "a-"])
def test_an_append_that_changes_a_coordinate_without_the_append_dim_is_refused(
    target, source, mode
):
    write, path, engine = target
    shifted = later(source).assign_coords(lat=source.lat + 0.25)
    with pytest.raises(HurrayValueError, match=r"coordinate 'lat' differs from the one in the "
                       r"(file|store) \(lat\[0\] is 50.0 there, 50.25 here\)"):  # fmt: skip
        write(shifted, path, append_dim="time", mode=mode)
    with xr.open_dataset(path, engine=engine) as back:
        assert back.sizes["time"] == 4 and back.lat[0] == 50.0


def test_an_append_of_changed_attributes_warns_naming_them_and_keeps_the_stored(target, source):
    write, path, engine = target
    celsius = later(source)
    celsius["t2m"] = (celsius.t2m - 273.15).assign_attrs(units="degC", source="station")
    with pytest.warns(AttrsDroppedWarning, match=r"'t2m': units='degC' \(kept 'K'\), "
                      r"source='station' \(none kept\)"):  # fmt: skip
        write(celsius, path, append_dim="time")
    with xr.open_dataset(path, engine=engine) as back:
        assert back.t2m.attrs["units"] == "K" and back.sizes["time"] == 8


def test_an_append_on_the_same_grid_checks_quietly(target, source):
    # the grid's float64 values, which the file holds as float32, and attributes
    # lost on the way (none is given other values)
    write, path, engine = target
    grown = later(source).assign_coords(lat=50.0 - 0.1 * np.arange(8), lon=0.1 * np.arange(12))
    assert not np.array_equal(grown.lat.values, source.lat.values)
    grown["t2m"].attrs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", AttrsDroppedWarning)
        write(grown, path, append_dim="time")
    assert len(times(path, engine)) == 8


def test_a_pyramid_append_warns_once_and_refuses_what_every_level_would(tmp_path, source):
    path = tmp_path / "pyramid.hurray"
    xh.to_hurray(source, path, overviews=1, overview_dims=["lat", "lon"])
    with pytest.raises(HurrayValueError, match=r"append_dim='time': 4 of the values"):
        xh.to_hurray(source, path, append_dim="time")
    celsius = later(source)
    celsius["t2m"] = celsius.t2m.assign_attrs(units="degC")
    with pytest.warns(AttrsDroppedWarning) as caught:
        xh.to_hurray(celsius, path, append_dim="time")
    (message,) = [str(w.message) for w in caught]
    assert "'0/t2m': units='degC' (kept 'K'); '1/t2m': units='degC' (kept 'K')" in message
