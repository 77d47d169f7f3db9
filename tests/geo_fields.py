"""Georeferenced fields for the tests of GeoZarr metadata and map tiles: a global
EPSG:4326 field with a NaN box, a UTM 32N field, and the CRS texts they name."""

from __future__ import annotations

import numpy as np
import xarray as xr

# A WKT2 text of EPSG:4326 (as PROJ writes it, shortened: the members a reader needs)
WKT2_4326 = (
    'GEOGCRS["WGS 84",DATUM["World Geodetic System 1984",ELLIPSOID["WGS 84",6378137,'
    '298.257223563,LENGTHUNIT["metre",1]]],PRIMEM["Greenwich",0,ANGLEUNIT["degree",'
    '0.0174532925199433]],CS[ellipsoidal,2],AXIS["geodetic latitude (Lat)",north,'
    'ORDER[1],ANGLEUNIT["degree",0.0174532925199433]],AXIS["geodetic longitude (Lon)",'
    'east,ORDER[2],ANGLEUNIT["degree",0.0174532925199433]],USAGE[SCOPE["Horizontal '
    'component of 3D system."],AREA["World."],BBOX[-90,-180,90,180]],ID["EPSG",4326]]'
)
# WKT1 (GDAL's) of UTM 32N: the codes of its datum, units and base CRS come first
WKT1_32632 = (
    'PROJCS["WGS 84 / UTM zone 32N",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",'
    '6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM['
    '"Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY['
    '"EPSG","9122"]],AUTHORITY["EPSG","4326"]],PROJECTION["Transverse_Mercator"],'
    'PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",9],PARAMETER['
    '"scale_factor",0.9996],PARAMETER["false_easting",500000],PARAMETER["false_northing",0],'
    'UNIT["metre",1,AUTHORITY["EPSG","9001"]],AXIS["Easting",EAST],AXIS["Northing",NORTH],'
    'AUTHORITY["EPSG","32632"]]'
)
# a CRS of no authority, in WKT2: a sphere's equirectangular projection
WKT2_CUSTOM = (
    'PROJCRS["a sphere, equirectangular",BASEGEOGCRS["a sphere",DATUM["a sphere",'
    'ELLIPSOID["sphere",6371000,0,LENGTHUNIT["metre",1]]],PRIMEM["Greenwich",0,'
    'ANGLEUNIT["degree",0.0174532925199433]],ID["EPSG",9999]],CONVERSION["Equidistant '
    'Cylindrical",METHOD["Equidistant Cylindrical",ID["EPSG",1028]],PARAMETER["Latitude '
    'of 1st standard parallel",0,ANGLEUNIT["degree",0.0174532925199433]]],CS[Cartesian,2],'
    'AXIS["(E)",east,ORDER[1],LENGTHUNIT["metre",1]],AXIS["(N)",north,ORDER[2],'
    'LENGTHUNIT["metre",1]]]'
)


NAN_BOX = (30.0, 40.0, 10.0, 30.0)
"""Where the global fields hold NaN: latitudes 30 to 40, longitudes 10 to 30."""


def box(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Whether each cell of a grid of ``lat`` by ``lon`` centres lies in :data:`NAN_BOX`."""
    south, north, west, east = NAN_BOX
    return np.outer((lat > south) & (lat < north), (lon > west) & (lon < east))


def global_field(step: float = 1.0) -> xr.Dataset:
    """A global EPSG:4326 field of ``step``-degree cells, north up, with a NaN box and
    its CRS in a CF grid mapping."""
    lat = np.arange(90 - step / 2, -90, -step)
    lon = np.arange(-180 + step / 2, 180, step)
    values = np.add.outer(lat, lon).astype("float32")
    values[box(lat, lon)] = np.nan
    return xr.Dataset(
        {
            "t": (("lat", "lon"), values, {"grid_mapping": "spatial_ref"}),
            "spatial_ref": ((), 0, {"crs_wkt": WKT2_4326}),
        },
        coords={
            "lat": ("lat", lat, {"units": "degrees_north", "standard_name": "latitude"}),
            "lon": ("lon", lon, {"units": "degrees_east", "standard_name": "longitude"}),
        },
    )


def utm_field() -> xr.Dataset:
    """A UTM 32N field of 10 m cells, its CRS in a WKT1 text and the grid mapping
    named in the encoding (as ``decode_coords="all"`` leaves it)."""
    x = 500_000 + 5 + 10 * np.arange(64)
    y = 5_000_000 - 5 - 10 * np.arange(48)
    ds = xr.Dataset(
        {"dem": (("y", "x"), np.arange(48 * 64, dtype="float32").reshape(48, 64))},
        coords={
            "x": ("x", x, {"axis": "X"}),
            "y": ("y", y, {"axis": "Y"}),
            "crs": ((), 0, {"spatial_ref": WKT1_32632}),
        },
    )
    ds["dem"].encoding["grid_mapping"] = "crs"
    return ds


def position_field(step: float) -> xr.Dataset:
    """A global EPSG:4326 field whose every cell holds its own centre, ``10000 * lat +
    lon`` (float64), with a NaN box: a map tile's pixel then says which cell, of which
    level, it was read from (:func:`cell_of`)."""
    ds = global_field(step)
    values = np.add.outer(10000 * ds.lat.values, ds.lon.values)
    values[box(ds.lat.values, ds.lon.values)] = np.nan
    return ds.assign(t=(("lat", "lon"), values, ds.t.attrs))


def cell_of(value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The latitude and longitude of the cell centre a value of
    :func:`position_field`, or of one of its coarser levels (whose means keep the
    form), holds: every such latitude is a multiple of 0.125, so ``10000 * lat`` is
    one of 1250, and ``|lon| < 625``."""
    lat = np.round(value / 1250) * 0.125
    return lat, value - 10000 * lat
