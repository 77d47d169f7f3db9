"""The CRS is never dropped: every writer (``to_hurray``, ``to_zarr``, ``hurray convert``,
``hurray refs``) keeps ``grid_mapping`` and ``coordinates`` where xarray keeps them, in
the attributes or in the encoding (``decode_coords="all"``, rioxarray's way), so that
rioxarray reads back the CRS, the GeoTransform and the encoded nodata the netCDF path
(xarray's ``to_netcdf``, then ``open_dataset``) gives."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import geo_fields
import numpy as np
import pytest
import xarray as xr
from reference_readers import reads_local_references

import xarray_hurray as xh
from xarray_hurray.cli import main

rioxarray = pytest.importorskip("rioxarray")

# rioxarray's own use of affine's `*` for a matrix product
pytestmark = pytest.mark.filterwarnings("ignore:Use `@` matmul:PendingDeprecationWarning")


def global_field() -> xr.Dataset:
    """The global EPSG:4326 field of the GeoZarr tests at 0.25 degree (north up, a NaN
    box), its CRS written by rioxarray."""
    return geo_fields.global_field(0.25).rio.write_crs("EPSG:4326")


def utm_field() -> xr.Dataset:
    """The UTM 32N grid of the GeoZarr tests (its grid mapping ``crs`` named in the
    encoding) as an elevation model stored as int16 with nodata -9999 (CF's
    ``_FillValue``, rioxarray's encoded nodata), with the latitude and longitude of
    each cell as auxiliary coordinates (CF's ``coordinates``), its CRS written by
    rioxarray."""
    from pyproj import Transformer

    ds = geo_fields.utm_field()
    values = (ds.dem.values % 3000).astype("int16")
    values[10:20, 5:30] = -9999
    to_degrees = Transformer.from_crs(32632, 4326, always_xy=True)
    lon, lat = to_degrees.transform(*np.meshgrid(ds.x.values, ds.y.values))
    ds["dem"] = ds.dem.copy(data=values)
    ds = ds.assign_coords(
        lat=(("y", "x"), lat, {"units": "degrees_north"}),
        lon=(("y", "x"), lon, {"units": "degrees_east"}),
    )
    ds["dem"] = ds.dem.rio.write_nodata(-9999, encoded=False)
    return ds.rio.write_crs("EPSG:32632")


FIELDS = {"t": global_field, "dem": utm_field}
"""Each field by the name of its variable."""


@contextmanager
def opened(path: Path | str, engine: str, **kwargs: object) -> Iterator[xr.Dataset]:
    """``path`` opened as rioxarray opens netCDF: with ``decode_coords="all"``, which
    moves ``grid_mapping`` into the encoding."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # zarr's consolidated note
        ds = xr.open_dataset(path, engine=engine, decode_coords="all", **kwargs)
    with ds:
        yield ds


def georeference(ds: xr.Dataset, name: str) -> tuple[object, ...]:
    """What rioxarray reads of the variable ``name``: its CRS, GeoTransform, encoded
    nodata and nodata (NaN as the text ``"nan"``, which compares equal), where the grid
    mapping was found, and the coordinates of the dataset and of the variable."""
    var = ds[name]
    nodata = [var.rio.encoded_nodata, var.rio.nodata]
    return (
        var.rio.crs,
        var.rio.transform(),
        *("nan" if value is not None and np.isnan(value) else value for value in nodata),
        var.encoding.get("grid_mapping"),
        sorted(map(str, ds.coords)),
        sorted(map(str, var.coords)),
    )


Writer = Callable[[xr.Dataset, Path, Path, str], Path]
"""Writes the source (opened, and its file) into a folder; what it wrote."""


def _writer(
    write: Callable[..., object], suffix: str, chunked: bool = False, **kwargs: object
) -> Writer:
    """A writer by ``write(src, out, **kwargs)`` of ``out.<suffix>``, and of an
    encoding of the variable's chunks where ``chunked``."""

    def run(src: xr.Dataset, source: Path, tmp: Path, name: str) -> Path:
        out = tmp / f"out.{suffix}"
        encoding = {"encoding": {name: {"chunks": (64, 64)}}} if chunked else {}
        write(src, out, **kwargs, **encoding)
        return out

    return run


def _convert_to(suffix: str) -> Writer:
    def convert(src: xr.Dataset, source: Path, tmp: Path, name: str) -> Path:
        out = tmp / f"out.{suffix}"
        assert main(["convert", str(source), str(out)]) == 0
        return out

    return convert


def _refs(src: xr.Dataset, source: Path, tmp: Path, name: str) -> Path:
    hurray = _writer(xh.to_hurray, "hurray")(src, source, tmp, name)
    assert main(["refs", str(hurray), "-o", str(tmp / "refs.json")]) == 0
    return tmp / "refs.json"


GIVEN_ENCODING = ("to_hurray encoding=", "to_zarr encoding=")
"""The writers given an encoding of the variable, which replaces its own (its packing
and fill value too, as with xarray's writers) but not its ``grid_mapping``."""

WRITERS: dict[str, tuple[Writer, str]] = {
    "to_hurray": (_writer(xh.to_hurray, "hurray"), "hurray"),
    "to_hurray encoding=": (_writer(xh.to_hurray, "hurray", chunked=True), "hurray"),
    "to_zarr": (_writer(xh.to_zarr, "zarr"), "zarr"),
    "to_zarr encoding=": (_writer(xh.to_zarr, "zarr", chunked=True), "zarr"),
    "to_hurray overviews=": (_writer(xh.to_hurray, "hurray", overviews=1), "hurray"),
    "to_zarr overviews=": (_writer(xh.to_zarr, "zarr", overviews=1), "zarr"),
    "convert .hurray": (_convert_to("hurray"), "hurray"),
    "convert .zarr": (_convert_to("zarr"), "zarr"),
    "convert .nc": (_convert_to("nc"), "h5netcdf"),
    "refs": (_refs, "refs"),
}
"""Each writer: how it writes the source opened with ``decode_coords="all"`` (or, for
``convert``, the netCDF file itself), and the engine that opens what it wrote (a
pyramid's level 0: the others have transforms of their own)."""


@pytest.fixture(scope="module", params=list(FIELDS))
def field(request, tmp_path_factory):
    """A field's variable name, its netCDF file written by xarray, that file opened
    with ``decode_coords="all"``, and what the netCDF path gives: the georeference
    and values read back from a copy written by xarray's own ``to_netcdf``."""
    name = request.param
    folder = tmp_path_factory.mktemp(name)
    FIELDS[name]().to_netcdf(folder / "source.nc", engine="h5netcdf")
    with opened(folder / "source.nc", "h5netcdf") as src:
        src.to_netcdf(folder / "netcdf.nc", engine="h5netcdf")
        with opened(folder / "netcdf.nc", "h5netcdf") as netcdf:
            expected = georeference(netcdf, name), netcdf[name].values
        # the truth has a CRS, and the variable holding it as a coordinate
        assert expected[0][0] is not None and expected[0][4] in expected[0][5]
        yield name, folder / "source.nc", src, expected


@pytest.mark.parametrize(
    "writer",
    [pytest.param(w, marks=reads_local_references) if w == "refs" else w for w in WRITERS],
)
def test_a_round_trip_keeps_the_crs_the_transform_and_the_nodata(tmp_path, capsys, field, writer):
    name, source, src, (expected, expected_values) = field
    write, engine = WRITERS[writer]
    out = write(src, source, tmp_path, name)
    capsys.readouterr()
    if engine == "refs":
        options = {"storage_options": {"fo": str(out)}, "consolidated": False}
        context = opened("reference://", "zarr", backend_kwargs=options)
    elif "overviews" in writer:
        context = opened(out, engine, group="0")
    else:
        context = opened(out, engine)
    with context as back:
        found = georeference(back, name)
        if writer in GIVEN_ENCODING:  # unpacked: the fill value is NaN
            found, expected = found[:2] + found[4:], expected[:2] + expected[4:]
        assert found == expected
        assert np.array_equal(back[name].values, expected_values, equal_nan=True)
