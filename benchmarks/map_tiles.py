"""Requests and bytes of map tiles over a 50 ms link: titiler.xarray with and without
the level-aware reader on a Hurray pyramid, and rio-tiler's GeoZarr reader on the
``to_zarr`` pyramid of the same field.

The field is global, EPSG:4326, 1440 x 720 cells of 0.25° (float32, a NaN box), with
two coarser levels (0.5°, 1°), written by ``to_hurray(..., overviews=2)`` and by
``to_zarr(..., overviews=2)`` with their defaults, and served by
:class:`latency_server.LatencyServer` (``--latency``, 50 ms a request).  Each reader
runs in a fresh process, as a tile server answers its first request, and reads, with
a new reader per tile as titiler makes one per request:

- a z0 tile (the whole Earth; the level-aware reader reads the 1° level),
- a z1 tile (a middle zoom: the 0.5° level),
- a z3 tile (full resolution: level 0),

each of them first (the file opened too) and then its neighbour to the east (the
same zoom, the next request of a pan; at z0 the same tile again).  The readers:

- *titiler.xarray, engine="hurray"*: titiler.xarray's ``Reader`` with an opener of
  ``xr.open_dataset(url, engine="hurray")``, the reader a user writes without this
  package's: level 0 at every zoom, the file opened for every tile;
- *level-aware* (``xarray_hurray.maps.HurrayReader``): the level for the tile, the
  file kept open between tiles;
- *rio-tiler GeoZarr* (``rio_tiler.experimental.zarr.GroupReader`` on
  ``zarr.open_group(store URL)``, the group opened for every tile): its own level
  choice from the ``multiscales`` metadata.

Requests and bytes (response bodies) are counted by the server; round trips are the
waves of requests that depend on each other (``round_trips.waves``).

Usage (Python >= 3.12 with the ``maps`` extra: titiler.xarray, rio-tiler[zarr])::

    python benchmarks/map_tiles.py            # 50 ms
    python benchmarks/map_tiles.py --quick    # a smaller field, for the smoke test
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

sys.path.insert(0, str(Path(__file__).parent))
from latency_server import LatencyServer
from round_trips import waves

import xarray_hurray as xh

WKT_4326 = (
    'GEOGCRS["WGS 84",DATUM["World Geodetic System 1984",ELLIPSOID["WGS 84",6378137,'
    '298.257223563]],CS[ellipsoidal,2],AXIS["latitude",north],AXIS["longitude",east],'
    'ANGLEUNIT["degree",0.0174532925199433],ID["EPSG",4326]]'
)

TILES = {"z0": (0, 0, 0), "z1 (middle)": (1, 1, 0), "z3 (full resolution)": (3, 4, 2)}
"""The tiles, as (z, x, y); each is followed by its neighbour to the east (z0, which
has none, by itself again)."""

READERS = ("titiler.xarray, engine='hurray'", "level-aware HurrayReader", "rio-tiler GeoZarr")


def field(step: float) -> xr.Dataset:
    """The global field of ``step``-degree cells, with a NaN box and a CF grid mapping."""
    lat = np.arange(90 - step / 2, -90, -step)
    lon = np.arange(-180 + step / 2, 180, step)
    values = (np.cos(np.radians(lat))[:, None] * np.sin(np.radians(2 * lon))).astype("f4")
    values[np.outer((lat > 30) & (lat < 40), (lon > 10) & (lon < 30))] = np.nan
    return xr.Dataset(
        {
            "t": (("lat", "lon"), values, {"grid_mapping": "crs"}),
            "crs": ((), 0, {"crs_wkt": WKT_4326}),
        },
        coords={
            "lat": ("lat", lat, {"units": "degrees_north"}),
            "lon": ("lon", lon, {"units": "degrees_east"}),
        },
    )


def child(reader: str, url: str) -> None:
    """Read every tile and its neighbour with ``reader``; print the time before each."""
    warnings.simplefilter("ignore")
    from titiler.xarray.io import Reader

    from xarray_hurray.maps import HurrayReader

    def plain_open(src: str, group: str | None = None, **kwargs: Any) -> xr.Dataset:
        return xr.open_dataset(src, engine="hurray", group=group, decode_coords="all", **kwargs)

    def tile(z: int, x: int, y: int) -> None:
        if reader == READERS[0]:
            with Reader(url, "t", opener=plain_open) as found:
                found.tile(x, y, z)
        elif reader == READERS[1]:
            with HurrayReader(url, "t") as found:
                found.tile(x, y, z)
        else:
            import zarr
            from rio_tiler.experimental.zarr import GroupReader

            with GroupReader(zarr.open_group(url, mode="r")) as found:
                found.tile(x, y, z, variables=["t"])

    import rio_tiler.experimental.zarr  # noqa: F401  (imports are not counted)
    import zarr  # noqa: F401

    marks = []
    for z, x, y in TILES.values():
        for step in (0, 1):
            marks.append(time.perf_counter())
            tile(z, (x + step) % 2**z, y)
    marks.append(time.perf_counter())
    print(json.dumps(marks))


def run(server: LatencyServer, reader: str, url: str) -> list[dict[str, float]]:
    """Requests, bytes and round trips of each tile read by ``reader`` in a fresh
    process."""
    server.reset()
    out = subprocess.run(
        [sys.executable, __file__, "--child", reader, url], capture_output=True, text=True
    )
    if out.returncode:
        raise RuntimeError(f"{reader} failed:\n{out.stderr}")
    marks = json.loads(out.stdout.strip().splitlines()[-1])
    time.sleep(server.latency)
    log = server.log
    found = []
    for start, stop in itertools.pairwise(marks):
        mine = [(t, size) for t, _, size in log if start <= t < stop]
        found.append(
            {
                "requests": len(mine),
                "bytes": sum(size for _, size in mine),
                "waves": waves([t for t, _ in mine], server.latency),
            }
        )
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--quick", action="store_true", help="a 1° field, for the smoke test")
    parser.add_argument("--child", nargs=2, metavar=("READER", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    warnings.simplefilter("ignore")
    step = 1.0 if args.quick else 0.25
    with tempfile.TemporaryDirectory() as where:
        root = Path(where)
        ds = field(step)
        # factors given: a 1° field (--quick) fits a chunk at level 1 already
        xh.to_hurray(ds, root / "global.hurray", overviews=[2, 4])
        xh.to_zarr(ds, root / "global.zarr", overviews=[2, 4])
        sizes = {
            name: sum(f.stat().st_size for f in (root / name).rglob("*") if f.is_file())
            for name in ("global.zarr",)
        } | {"global.hurray": (root / "global.hurray").stat().st_size}
        results = {}
        with LatencyServer(root, latency=args.latency) as server:
            for reader in READERS:
                name = "global.zarr" if reader == READERS[2] else "global.hurray"
                results[reader] = run(server, reader, server.url(name))
    load = os.getloadavg()
    cells = f"{ds.sizes['lon']} x {ds.sizes['lat']}"
    print(
        f"global EPSG:4326 field of {cells} cells of {step}° (float32), levels of "
        f"{2 * step}° and {4 * step}°; Hurray file {sizes['global.hurray'] / 1e6:.2f} MB, "
        f"Zarr store {sizes['global.zarr'] / 1e6:.2f} MB; latency "
        f"{args.latency * 1000:.0f} ms; load average {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f}\n"
    )
    print("| tile | reader | requests | MB | round trips | next tile: requests | MB |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for k, tile in enumerate(TILES):
        for reader in READERS:
            first, following = results[reader][2 * k], results[reader][2 * k + 1]
            print(
                f"| {tile} | {reader} | {first['requests']} | {first['bytes'] / 1e6:.3f} | "
                f"{first['waves']} | {following['requests']} | "
                f"{following['bytes'] / 1e6:.3f} |"
            )
    plain, aware = results[READERS[0]], results[READERS[1]]
    print("\nlevel-aware reader against titiler.xarray with engine='hurray' (first tiles):")
    for k, tile in enumerate(TILES):
        ratio_requests = plain[2 * k]["requests"] / max(aware[2 * k]["requests"], 1)
        ratio_bytes = plain[2 * k]["bytes"] / max(aware[2 * k]["bytes"], 1)
        print(f"  {tile}: {ratio_requests:.1f}x fewer requests, {ratio_bytes:.1f}x fewer bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
