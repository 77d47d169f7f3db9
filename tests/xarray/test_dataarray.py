"""DataArrays written and read as xarray writes them to netCDF and Zarr: to_hurray(da),
da.hurray.to_hurray and xr.open_dataarray(engine="hurray"), checked against what
DataArray.to_netcdf and DataArray.to_zarr store for the same arrays."""

from __future__ import annotations

import warnings

import dask.array as dsa
import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh


def base(name: str | None) -> xr.DataArray:
    """A 2-D field with a coordinate ``x``, a dimension ``y`` without one, a scalar
    coordinate ``level`` and attributes, called ``name``."""
    rng = np.random.default_rng(3)
    return xr.DataArray(
        rng.standard_normal((6, 10)).astype("f4"),
        dims=("y", "x"),
        coords={"x": np.arange(10, dtype="i4") * 3, "level": 850.0},
        attrs={"units": "K", "long_name": "temperature"},
        name=name,
    )


# None: xarray's variable name; "x": a coordinate's name; "y": a dimension's name
# without a coordinate; "level": a scalar coordinate's name; "t": an ordinary name
NAMES = [None, "t", "x", "y", "level"]


def stored_name(name: str | None) -> str:
    """The variable xarray stores an array called ``name`` as (see NAMES)."""
    return name if name == "t" else "__xarray_dataarray_variable__"


def stored(path, engine: str) -> xr.Dataset:
    """The dataset a file holds, loaded."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's warnings on its own format
        with xr.open_dataset(path, engine=engine) as ds:
            return ds.load()


def as_array(path, engine: str) -> xr.DataArray:
    with xr.open_dataarray(path, engine=engine) as array:
        return array.load()


@pytest.mark.parametrize("name", NAMES)
def test_stored_as_to_netcdf_and_to_zarr_store_it(tmp_path, name):
    array = base(name)
    xh.to_hurray(array, tmp_path / "a.hurray")
    array.to_netcdf(tmp_path / "a.nc", engine="h5netcdf")
    array.to_zarr(tmp_path / "a.zarr", zarr_format=3, consolidated=True)
    ours = stored(tmp_path / "a.hurray", "hurray")
    xr.testing.assert_identical(ours, stored(tmp_path / "a.nc", "h5netcdf"))
    xr.testing.assert_identical(ours, stored(tmp_path / "a.zarr", "zarr"))
    # the variable's name and the attribute keeping the array's: xarray's own
    assert list(ours.data_vars) == [stored_name(name)]
    assert ours.attrs == ({} if name in (None, "t") else {"__xarray_dataarray_name__": name})


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("write", ["function", "accessor"])
def test_open_dataarray_gives_the_array_back(tmp_path, name, write):
    array = base(name)
    path = tmp_path / "a.hurray"
    if write == "function":
        # encoding names the stored variable, as for to_netcdf and to_zarr
        xh.to_hurray(array, path, encoding={stored_name(name): {"chunks": (4, 4)}})
    else:
        array.hurray.to_hurray(path)
    back = as_array(path, "hurray")
    xr.testing.assert_identical(back, array)
    assert back.name == name
    assert back.encoding["chunks"] == ((4, 4) if write == "function" else (6, 10))
    array.to_netcdf(tmp_path / "a.nc", engine="h5netcdf")
    xr.testing.assert_identical(back, as_array(tmp_path / "a.nc", "h5netcdf"))


def test_a_dask_backed_array_is_written_by_dask(tmp_path):
    array = base(None).chunk({"y": 3, "x": 5})
    xh.to_hurray(array, tmp_path / "a.hurray", encoding={"__xarray_dataarray_variable__": {}})
    with xr.open_dataarray(tmp_path / "a.hurray", engine="hurray", chunks={}) as back:
        assert isinstance(back.data, dsa.Array)
        xr.testing.assert_identical(back.load(), array.compute())


def test_compute_false_writes_when_computed(tmp_path):
    array = base("t")
    pending = array.hurray.to_hurray(tmp_path / "a.hurray", compute=False)
    assert not (tmp_path / "a.hurray").exists()
    pending.compute()
    xr.testing.assert_identical(as_array(tmp_path / "a.hurray", "hurray"), array)


def test_arrays_as_groups_of_one_file(tmp_path):
    """Each array in a group of its own, added to the file one by one."""
    path = tmp_path / "a.hurray"
    arrays = {"first": base(None), "second": base("x") * 2, "third": base("t") + 1}
    for group, array in arrays.items():
        xh.to_hurray(array, path, group=group, mode="a")
    for group, array in arrays.items():
        with xr.open_dataarray(path, engine="hurray", group=group) as back:
            xr.testing.assert_identical(back.load(), array)


def test_hurray_in_zarr_through_the_accessor(tmp_path):
    array = base("x")
    array.hurray.to_zarr(tmp_path / "a.zarr")
    xr.testing.assert_identical(as_array(tmp_path / "a.zarr", "zarr"), array)
    xh.to_zarr(base(None), tmp_path / "b.zarr")
    xr.testing.assert_identical(as_array(tmp_path / "b.zarr", "zarr"), base(None))


def test_an_array_named_as_its_coordinate_appends_along_it(tmp_path):
    """The stored name is xarray's, so an append with mode="a" finds the variable."""
    path = tmp_path / "a.hurray"
    array = base("x")
    first, second = array.isel(x=slice(0, 4)), array.isel(x=slice(4, None))
    xh.to_hurray(first, path, encoding={"__xarray_dataarray_variable__": {"chunks": (3, 2)}})
    xh.to_hurray(second, path, mode="a", append_dim="x")
    xr.testing.assert_identical(as_array(path, "hurray"), array)
