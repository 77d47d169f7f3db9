"""Overviews: tiles at every level over a slow link, the cost of building a pyramid,
and the size the levels add.

*Tiles.*  A smooth float32 field (``--side`` squared, chunks of ``--tile``) is written
with ``to_hurray(overviews=N)``, levels down to one tile, and served by
:class:`latency_server.LatencyServer` (``--latency`` per request).  For every level,
a reader in a fresh process opens the file and reads one tile (``--tile`` squared)
of that level, on the level's tile grid and then offset by half a tile; then the
same extent of level 0 (a box ``F`` times larger).  Round trips are the waves of
requests that arrive together (see ``round_trips.waves``), counted by the server
with the bytes it sent.

*Size.*  The stored bytes of the coarser levels against level 0's, and the raw ones,
next to the geometric limit ``sum(4**-k)`` (1/3 for many factor-2 levels in 2-D).

*Build* (``--build``).  A field of ``--build-side`` squared float32 (1 GiB at the
default 16384) is stored as a Zarr v3 store (dask chunks of ``BUILD_BLOCK``), then
each method runs in its own process, its wall time and peak resident memory
measured there:

- ``hurray``: ``to_hurray(ds, overviews=N)``, every level from the one before, the
  input read twice (once for every coarser level, once as level 0 is written);
- ``zarr per level``: level 0 and ``ds.coarsen(y=F, x=F, boundary="pad").mean()``
  for every factor, each written with xarray's ``to_zarr`` (each level computed
  from level 0 again, as ``ndpyramid.pyramid_coarsen`` does);
- ``gdal`` (where rasterio imports): a tiled GeoTIFF written window by window, then
  ``build_overviews`` with ``average``.

*Kernels* (``--kernels``).  The window sums of a 2048 x 2048 float64 block for
factors 2 to 256, folded one strided view per cell of a window and reduced over the
split axes, with the ratio of the two (the kernels fold windows of at most
``resampling.FOLD_VIEWS`` cells and reduce larger ones); and the sums, minima and
modes of a 17 x 13 block for a factor of 2048, one window of the whole block (a cost
that once grew as the factor squared).

Usage::

    python benchmarks/overviews.py --kernels        # the window kernels alone
    python benchmarks/overviews.py                  # tiles and size, 50 ms a request
    python benchmarks/overviews.py --build          # and the 1 GiB build
    python benchmarks/overviews.py --quick --build  # small, for the smoke test
    python benchmarks/overviews.py --build-only     # the 1 GiB build alone
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from latency_server import LatencyServer
from round_trips import field, waves
from timing import best_time, best_times

SIDE, TILE = 4096, 256
QUICK_SIDE, QUICK_TILE = 512, 64
BUILD_SIDE, BUILD_LEVELS, BUILD_BLOCK = 16384, 6, 2048
QUICK_BUILD_SIDE, QUICK_BUILD_LEVELS, QUICK_BUILD_BLOCK = 1024, 3, 256


def levels_for(side: int, tile: int) -> int:
    """Factor-2 levels down to one tile."""
    return int(np.log2(side // tile))


def tile_boxes(side: int, tile: int, level: int) -> dict[str, tuple[int, int, int, int]]:
    """The tile of the level's grid nearest its centre, and that tile offset by half a
    tile, as ``(y0, y1, x0, x1)`` of the level."""
    n = side >> level
    centre = max((n // tile) // 2, 0) * tile
    half = tile // 2 if n > tile else 0
    aligned = (centre, min(centre + tile, n), centre, min(centre + tile, n))
    offset = (
        min(centre + half, max(n - tile, 0)),
        min(centre + half + tile, n),
        min(centre + half, max(n - tile, 0)),
        min(centre + half + tile, n),
    )
    return {"on the tile grid": aligned, "offset by half a tile": offset}


# ---- the reading process -------------------------------------------------------------


def child_read(url: str, path: str, box: list[int]) -> None:
    """Open ``url`` and read ``box`` of variable ``path``; print the step's times."""
    import xarray_hurray as xh

    start = time.perf_counter()
    reader = xh.open_reader(url)
    reader.read(path, (slice(box[0], box[1]), slice(box[2], box[3])))
    print(json.dumps({"start": start, "stop": time.perf_counter()}))


def read_fresh(server: LatencyServer, url: str, path: str, box: tuple[int, ...]) -> dict[str, Any]:
    """Requests, waves, bytes and seconds of a fresh open and one read, in its own process."""
    server.reset()
    out = subprocess.run(
        [sys.executable, __file__, "--child-read", url, path, json.dumps(list(box))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    times = json.loads(out.strip().splitlines()[-1])
    mine = [(t, n) for t, _, n in server.log if times["start"] <= t <= times["stop"]]
    return {
        "requests": len(mine),
        "waves": waves([t for t, _ in mine], server.latency),
        "bytes": sum(n for _, n in mine),
        "seconds": times["stop"] - times["start"],
    }


def tiles(
    work: Path, side: int, tile: int, latency: float, bandwidth: float
) -> list[dict[str, Any]]:
    """The tile rows: every level, both boxes, and the same extent at level 0."""
    import xarray as xr

    import xarray_hurray as xh

    levels = levels_for(side, tile)
    ds = xr.Dataset(
        {"v": (("y", "x"), field(side))},
        coords={"y": np.arange(side, dtype="f8"), "x": np.arange(side, dtype="f8")},
    )
    path = work / "pyramid.hurray"
    codec = {"id": "zstd", "level": 0}
    xh.to_hurray(ds, path, overviews=levels, encoding={"v": {"chunks": (tile, tile)}}, codecs=codec)
    rows = []
    with LatencyServer(work, latency=latency, bandwidth=bandwidth) as server:
        url = server.url(path.name)
        for level in range(levels + 1):
            factor = 2**level
            for where, box in tile_boxes(side, tile, level).items():
                row = {"level": level, "where": where, "factor": factor}
                row["tile"] = read_fresh(server, url, f"{level}/v", box)
                full = tuple(min(b * factor, side) for b in box)
                row["full"] = read_fresh(server, url, "0/v", full)
                rows.append(row)
    return rows


def sizes(path: Path) -> list[dict[str, Any]]:
    """Stored and raw bytes of ``v`` at every level of the pyramid file."""
    import xarray_hurray as xh

    reader = xh.open_reader(path)
    rows = []
    for group_path, var in reader.metadata.all_variables():
        if group_path.endswith("/v"):
            stored = int(reader.index(group_path)["size"].sum())
            raw = int(np.prod(var.shape)) * 4
            rows.append({"level": int(group_path.split("/")[0]), "stored": stored, "raw": raw})
    return sorted(rows, key=lambda r: r["level"])


def print_tiles(rows: list[dict[str, Any]], latency: float, bandwidth: float) -> None:
    print(
        f"\n## Tiles: a fresh open and one read, {latency * 1000:.0f} ms a request, "
        f"{bandwidth / 1e6:.0f} MB/s\n"
    )
    print(
        "| level | factor | tile | round trips | requests | kB | ms | same extent at level 0: "
        "round trips | requests | kB | ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        t, f = r["tile"], r["full"]
        print(
            f"| {r['level']} | {r['factor']} | {r['where']} | {t['waves']} | {t['requests']} | "
            f"{t['bytes'] / 1e3:.0f} | {t['seconds'] * 1e3:.0f} | {f['waves']} | "
            f"{f['requests']} | {f['bytes'] / 1e3:.0f} | {f['seconds'] * 1e3:.0f} |"
        )


def print_sizes(rows: list[dict[str, Any]]) -> None:
    base = rows[0]
    stored = sum(r["stored"] for r in rows[1:]) / base["stored"]
    raw = sum(r["raw"] for r in rows[1:]) / base["raw"]
    limit = sum(4.0**-k for k in range(1, len(rows)))
    print("\n## Size of the levels against level 0\n")
    print("| level | stored kB | raw kB | stored / level 0 |")
    print("|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['level']} | {r['stored'] / 1e3:.0f} | {r['raw'] / 1e3:.0f} | "
            f"{r['stored'] / base['stored']:.4f} |"
        )
    print(
        f"\nlevels 1-{len(rows) - 1} add {stored:.4f} of level 0 stored, {raw:.4f} raw; "
        f"sum of 4**-k: {limit:.4f} (1/3 = 0.3333 for many levels)"
    )


# ---- the build -------------------------------------------------------------------


def make_input(path: Path, side: int, block: int) -> None:
    """The build's input: a smooth float32 field as a Zarr v3 store, in dask blocks."""
    import dask.array as da
    import xarray as xr

    def smooth(block_info: Any = None) -> np.ndarray:
        (y0, y1), (x0, x1) = block_info[None]["array-location"]
        rng = np.random.default_rng(y0 * side + x0)
        y, x = np.mgrid[y0:y1, x0:x1] / side
        noise = 0.05 * rng.standard_normal((y1 - y0, x1 - x0))
        return (np.sin(6 * x) * np.cos(4 * y) + noise).astype("f4")

    values = da.map_blocks(smooth, chunks=((block,) * (side // block),) * 2, dtype="f4")
    coords = {"y": np.arange(side, dtype="f8"), "x": np.arange(side, dtype="f8")}
    ds = xr.Dataset({"v": (("y", "x"), values)}, coords=coords)
    ds.to_zarr(path, mode="w", zarr_format=3, consolidated=False)


def child_build(method: str, source: str, out: str, levels: int, tile: int) -> None:
    """Build the pyramid of ``source`` by ``method``; print wall time and peak RSS."""
    import xarray as xr

    import xarray_hurray as xh

    ds = xr.open_zarr(source, consolidated=False)
    factors = [2**k for k in range(1, levels + 1)]
    start = time.perf_counter()
    if method == "hurray":
        encoding = {"v": {"chunks": (tile, tile)}}
        xh.to_hurray(
            ds, out, overviews=levels, encoding=encoding, codecs={"id": "zstd", "level": 0}
        )
    elif method == "zarr per level":
        from zarr.codecs import ZstdCodec

        block = ds["v"].data.chunksize[0]
        for k, factor in enumerate([1, *factors]):
            level = ds if k == 0 else ds.coarsen(y=factor, x=factor, boundary="pad").mean()
            # the same tiles as the Hurray file's: dask chunks whole tiles
            level = level.drop_encoding().chunk(
                {"y": max(block // factor, tile), "x": max(block // factor, tile)}
            )
            side = level.sizes["x"]
            chunks = (min(tile, side), min(tile, side))
            encoding = {"v": {"chunks": chunks, "compressors": [ZstdCodec(level=0)]}}
            level.to_zarr(
                out, group=str(k), mode="w", zarr_format=3, consolidated=False, encoding=encoding
            )
    else:
        import rasterio
        from rasterio.enums import Resampling
        from rasterio.windows import Window

        values = ds["v"].data
        side = values.shape[0]
        profile = {
            "driver": "GTiff", "width": side, "height": side, "count": 1, "dtype": "float32",
            "tiled": True, "blockxsize": tile, "blockysize": tile, "compress": "zstd",
            "BIGTIFF": "YES",
        }  # fmt: skip
        with rasterio.open(out, "w", **profile) as dst:
            block = values.chunksize[0]
            for y0 in range(0, side, block):
                for x0 in range(0, side, block):
                    part = values[y0 : y0 + block, x0 : x0 + block].compute()
                    dst.write(part, 1, window=Window(x0, y0, part.shape[1], part.shape[0]))
            dst.build_overviews(factors, Resampling.average)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_bytes": peak_rss()}))


def peak_rss() -> int:
    """This process's peak resident memory in bytes: ``VmHWM``, the high-water mark of
    its own address space.  (``ru_maxrss`` would not do: Linux carries into it the
    memory of the process that forked this one, as it was when it forked.)"""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build(work: Path, side: int, levels: int, block: int, tile: int) -> list[dict[str, Any]]:
    """The build rows: each method's time, peak RSS and output bytes."""
    source = work / "input.zarr"
    make_input(source, side, block)
    methods = ["hurray", "zarr per level"]
    try:
        import rasterio  # noqa: F401

        methods.append("gdal")
    except ImportError:
        print("rasterio does not import: no GDAL row")
    rows = []
    for method in methods:
        out = work / {"hurray": "p.hurray", "zarr per level": "p.zarr", "gdal": "p.tif"}[method]
        result = subprocess.run(
            [sys.executable, __file__, "--child-build", method, str(source), str(out),
             str(levels), str(tile)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if result.returncode:
            raise RuntimeError(f"{method} failed:\n{result.stderr}")
        row = {"method": method, **json.loads(result.stdout.strip().splitlines()[-1])}
        row["out_bytes"] = (
            sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
            if out.is_dir()
            else out.stat().st_size
        )
        row["load"] = os.getloadavg()
        rows.append(row)
        shutil.rmtree(out) if out.is_dir() else out.unlink()
    return rows


def print_build(rows: list[dict[str, Any]], side: int, levels: int) -> None:
    gib = side * side * 4 / 2**30
    print(
        f"\n## Building {levels} factor-2 levels of a {side} x {side} float32 field "
        f"({gib:.2f} GiB)\n"
    )
    print(
        "| method | seconds | peak RSS MiB | output MB | vs hurray | load average (1, 5, 15 min) |"
    )
    print("|---|---|---|---|---|---|")
    base = rows[0]["seconds"]
    for r in rows:
        load = ", ".join(f"{x:.2f}" for x in r["load"])
        print(
            f"| {r['method']} | {r['seconds']:.1f} | {r['peak_bytes'] / 2**20:.0f} | "
            f"{r['out_bytes'] / 1e6:.1f} | {r['seconds'] / base:.2f}x | {load} |"
        )


def kernels() -> None:
    """Print the timings of the window kernels (see the module's description)."""
    import xarray_hurray.xarray.resampling as kernel

    block = np.random.default_rng(0).random((2048, 2048))
    print("\nwindow sums of a 2048 x 2048 float64 block, best of 5 taken in turns")
    print("| factor | cells a window | folded, ms | reduced, ms | folded / reduced | chosen |")
    print("|---:|---:|---:|---:|---:|---|")
    for factor in (2, 3, 4, 5, 8, 16, 64, 256):
        sides = kernel.window_sides(block.shape, [0, 1], factor)
        folded, reduced = best_times(
            5,
            partial(kernel._fold, block, sides, 0.0, np.add),
            partial(np.add.reduce, kernel._split(block, sides, 0.0)[0], axis=(1, 3)),
        )
        chosen = "fold" if factor**2 <= kernel.FOLD_VIEWS else "reduce"
        print(
            f"| {factor} | {factor**2} | {folded * 1e3:.1f} | {reduced * 1e3:.1f} | "
            f"{folded / reduced:.2f} | {chosen} |"
        )
    small = np.random.default_rng(1).random((17, 13))
    print("\na 17 x 13 block, factor 2048 (one window), best of 5")
    for name, fn, values in (
        ("valid_totals", kernel.valid_totals, small),
        ("window_min", kernel.window_min, small),
        ("mode", kernel.KERNELS["mode"], (small * 4).astype(int)),
    ):
        print(f"  {name}: {best_time(5, fn, values, [0, 1], 2048, None) * 1e6:.0f} us")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for the smoke test")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds a request")
    parser.add_argument("--bandwidth", type=float, default=50e6, help="bytes a second")
    parser.add_argument("--build", action="store_true", help="also time building a pyramid")
    parser.add_argument("--build-side", type=int, help=f"default {BUILD_SIDE} (1 GiB)")
    parser.add_argument("--build-only", action="store_true", help="the build, no tiles")
    parser.add_argument("--kernels", action="store_true", help="the window kernels alone")
    parser.add_argument("--child-read", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--child-build", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_read:
        url, path, box = args.child_read
        child_read(url, path, json.loads(box))
        return 0
    if args.child_build:
        method, source, out, levels, tile = args.child_build
        child_build(method, source, out, int(levels), int(tile))
        return 0
    print(f"load average before: {os.getloadavg()}")
    if args.kernels:
        kernels()
        print(f"\nload average after: {os.getloadavg()}")
        return 0
    side, tile = (QUICK_SIDE, QUICK_TILE) if args.quick else (SIDE, TILE)
    with tempfile.TemporaryDirectory(prefix="overviews-bench-") as work_dir:
        work = Path(work_dir)
        if not args.build_only:
            rows = tiles(work, side, tile, args.latency, args.bandwidth)
            print_tiles(rows, args.latency, args.bandwidth)
            print_sizes(sizes(work / "pyramid.hurray"))
        if args.build or args.build_only:
            build_side = args.build_side or (QUICK_BUILD_SIDE if args.quick else BUILD_SIDE)
            levels = QUICK_BUILD_LEVELS if args.quick else BUILD_LEVELS
            block = QUICK_BUILD_BLOCK if args.quick else BUILD_BLOCK
            print_build(build(work, build_side, levels, block, tile), build_side, levels)
    print(f"\nload average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
