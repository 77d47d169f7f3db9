"""A map of one field in Chromium over a link of 50 ms: this package's map layer in
OpenLayers, MapLibre GL and Leaflet against OpenLayers' GeoTIFF source on a COG and
its GeoZarr source on the ``to_zarr`` pyramid.

One global field of 0.25° cells in EPSG:4326 (1440 x 720 float32, north up, a NaN
box, its CRS in a CF grid mapping) is written three ways: a Hurray file with two
overviews (``to_hurray(..., overviews=2)``), the ``xarray_hurray.to_zarr(...,
overviews=2)`` pyramid (GeoZarr metadata: OpenLayers' GeoZarr source reads it), and a
Cloud-Optimized GeoTIFF made by GDAL (rasterio's wheels: zstd, tiles of 256, two
average overviews).  :class:`latency_server.LatencyServer` serves them, and the pages,
waiting ``--latency`` before each answer.  ``js/bench/maps.js`` bundles each page
(esbuild: no module is fetched once the map starts) and loads it in headless Chromium
(WebGL through SwiftShader) at a 900 x 600 view of three zooms, each in a fresh
browser context, then pans half the view to the east.  For each page and view: the
milliseconds from the map's creation to its view rendered, the requests to the data
and their waves (the fastest of ``--runs`` runs).  OpenLayers' own settings are its
defaults; the zooms are OpenLayers' and Leaflet's (MapLibre's one less: its zoom 0
is a world of 512 pixels).

Usage::

    python benchmarks/js_maps.py              # three zooms and a pan, 3 runs
    python benchmarks/js_maps.py --quick      # one run of one zoom, for the smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from js_peers import HEADER, run_bench, step_row, write_cog
from latency_server import LatencyServer

import xarray_hurray
from xarray_hurray import to_hurray

VIEWS = [
    {"lon": 0.0, "lat": 20.0, "zoom": 2},
    {"lon": 10.0, "lat": 45.0, "zoom": 4},
    {"lon": 10.0, "lat": 45.0, "zoom": 6},
]
"""The views: the world (the coarsest levels), a continent, a country (level 0)."""

PAGES = {
    "hurray-openlayers": "this package, OpenLayers",
    "hurray-maplibre": "this package, MapLibre",
    "hurray-leaflet": "this package, Leaflet",
    "geotiff-openlayers": "COG, OpenLayers GeoTIFF",
    "geozarr-openlayers": "to_zarr, OpenLayers GeoZarr",
}


def field() -> xr.Dataset:
    """The global field: smooth, with a NaN box (10-30 N, 20-40 E), its CRS in a CF grid
    mapping (WKT of EPSG:4326 as GDAL writes it)."""
    from rasterio.crs import CRS

    lat = 89.875 - 0.25 * np.arange(720)
    lon = -179.875 + 0.25 * np.arange(1440)
    lon2, lat2 = np.meshgrid(lon, lat)
    values = (np.sin(np.radians(lon2) * 3) * 10 + lat2 / 3).astype(np.float32)
    values[(lat2 > 10) & (lat2 < 30) & (lon2 > 20) & (lon2 < 40)] = np.nan
    return xr.Dataset(
        {
            "t": (("lat", "lon"), values, {"grid_mapping": "spatial_ref", "units": "K"}),
            "spatial_ref": ((), np.int32(0), {"crs_wkt": CRS.from_epsg(4326).to_wkt()}),
        },
        coords={
            "lat": ("lat", lat, {"units": "degrees_north", "standard_name": "latitude"}),
            "lon": ("lon", lon, {"units": "degrees_east", "standard_name": "longitude"}),
        },
    )


def write_files(root: Path) -> None:
    """The Hurray file, the Zarr pyramid and the COG of the field."""
    ds = field()
    to_hurray(ds, root / "field.hurray", overviews=2)
    xarray_hurray.to_zarr(ds, root / "field.zarr", mode="w", overviews=2)
    from rasterio.transform import from_origin

    transform = from_origin(-180, 90, 0.25, 0.25)  # the field's 0.25° cells
    cog = {"crs": "EPSG:4326", "transform": transform, "nodata": float("nan")}
    write_cog(ds["t"].values, root / "field.tif", 256, 2, **cog)


def report(results: dict[str, Any], views: list[dict[str, float]], latency: float) -> None:
    """Print each page's view and pan."""
    print("page" + HEADER[4:])
    for name, label in PAGES.items():
        for k, view in enumerate(views):
            result = results[f"{name}|{k}"]
            where = f"zoom {view['zoom']:g} at {view['lon']:g}, {view['lat']:g}"
            for step, s in ((where, result["view"]), ("  then a pan of 450 px", result["pan"])):
                print(step_row(label, step, s["ms"] / 1000, latency, s))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=3, help="runs (each measure's fastest)")
    parser.add_argument("--quick", action="store_true", help="one run of one zoom")
    args = parser.parse_args()
    views = VIEWS[-1:] if args.quick else VIEWS
    runs = 1 if args.quick else args.runs
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_files(root)
        with LatencyServer(root, latency=args.latency) as server:
            print(
                f"global 0.25° field (1440 x 720 float32, 2 overviews), view 900 x 600; latency "
                f"{1000 * args.latency:.0f} ms; load average "
                f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
            )
            settings = {
                "origin": server.url("").rstrip("/"),
                "dir": str(root),
                "files": {
                    "hurray": server.url("field.hurray"),
                    "cog": server.url("field.tif"),
                    "zarr": server.url("field.zarr"),
                },
                "views": views,
                "range": [-40, 40],
                "latency": args.latency,
                "runs": runs,
                "browser": os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                "width": 900,
                "height": 600,
            }
            results = run_bench("maps.js", json.dumps(settings))
            report(results, views, args.latency)
            print(
                "load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()),
                flush=True,
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
