"""A pyramid against GDAL's: building it, and reading a tile of it in a cold process
and in a warm one.

The field is ``--side`` squared float32 (8192 by default: 256 MiB), smooth with
noise, 10% of its cells NaN (missing) at random, made in the process that uses it.

*Build* (``--build``).  Each build runs in a fresh process, the rows taking turns
round after round: the field is made, the process's peak resident memory is reset
(``/proc/self/clear_refs``), its resident memory then is the *input* (the field, and
the modules the maker of the field has loaded: numpy and xarray, or rasterio), and
the build is timed to the end of its write:

- ``hurray``: ``to_hurray(ds, path, overviews=[2, 4, ..., 2**N])`` of the field in
  memory, as a user writes it (default tiles of 256 x 256), zstd level 3 (the
  factors are given: ``overviews=6`` is refused at 8192, where level 5 is one tile);
- ``gdal``: rasterio writes a tiled GeoTIFF (256 x 256 tiles, zstd level 3, NaN
  as nodata) and builds its overviews with ``average`` (``gdaladdo``'s work), GDAL's
  default settings otherwise.

The *overhead* is the peak resident memory less the input; the target is an
overhead at most 1.1 times GDAL's, for 2, 4 and 6 levels, and a time at or below
GDAL's.

*Tiles* (``--tiles``).  Both pyramids of 6 levels are served by
:class:`latency_server.LatencyServer` (``--latency`` per request).  A cold process
imports, opens and reads one 256 x 256 tile of level 2 near its centre:

- ``numpy``: ``import numpy`` alone;
- ``reader``: ``xarray_hurray.open_reader(url).read("2/v", box)``;
- ``xarray``: ``xr.open_datatree(url, engine="hurray")``, ``tree.hurray.level(2)``
  and the tile's values (no import of this package: xarray finds the engine, and
  for an engine named by a string that is not one of its own it imports every
  installed package's engine module: rioxarray's and cfgrib's with the test extra);
- ``xarray, engine class``: the same with the engine given as its class
  (``engine=HurrayBackendEntrypoint``), which xarray takes without loading the other
  engines;
- ``gdal``: ``rasterio.open(url, overview_level=1)`` (level 2 is GDAL's second
  overview) with ``GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR`` and a window read.

The target is the ``xarray`` process within 1.5 times the ``gdal`` one.  (Where
rasterio does not import, the GDAL rows are left out, and the ratios with them.)
Then, in
one process, the 64 tiles of an 8 x 8 block of level 2 of the local file are read
one by one, warm (each read once before): through ``tree.hurray.level(2)`` and the
tile's values, and through ``ContainerReader.read``; the target is the first
within 2 times the second.  Each tile is checked against the reader's.

Usage::

    python benchmarks/pyramid_gdal.py --build --tiles     # everything
    python benchmarks/pyramid_gdal.py --quick --build --tiles   # small, for a smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from latency_server import LatencyServer

SIDE, QUICK_SIDE = 8192, 1024
TILE = 256
LEVEL = 2
"""The level the tiles are read from."""


def make_field(side: int) -> np.ndarray:
    """The field: smooth with noise, 10% NaN, made a band of rows at a time (no
    temporary as large as the field)."""
    out = np.empty((side, side), dtype="f4")
    rng = np.random.default_rng(0)
    x = np.arange(side) / side
    band = 512
    for y0 in range(0, side, band):
        y = (np.arange(y0, min(y0 + band, side)) / side)[:, None]
        rows = np.sin(6 * x)[None, :] * np.cos(4 * y) + 0.05 * rng.standard_normal((len(y), side))
        rows[rng.random(rows.shape) < 0.1] = np.nan
        out[y0 : y0 + len(y)] = rows
    return out


def memory() -> dict[str, int]:
    """This process's resident memory and its peak, in bytes."""
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) * 1024
    return found


def hurray_dataset(values: np.ndarray) -> Any:
    import xarray as xr

    side = values.shape[0]
    coords = {"y": np.arange(side, dtype="f8") + 0.5, "x": np.arange(side, dtype="f8") + 0.5}
    return xr.Dataset({"v": (("y", "x"), values)}, coords=coords)


def write_hurray(values: np.ndarray, path: str, levels: int) -> None:
    import xarray_hurray as xh

    codecs = {"id": "zstd", "level": 3}
    factors = [2**k for k in range(1, levels + 1)]
    xh.to_hurray(hurray_dataset(values), path, overviews=factors, codecs=codecs)


def has_gdal() -> bool:
    """Whether rasterio, and so GDAL, imports here (the ``bench`` extra)."""
    try:
        import rasterio  # noqa: F401
    except ImportError:
        return False
    return True


def write_gdal(values: np.ndarray, path: str, levels: int) -> None:
    import rasterio
    from rasterio.enums import Resampling

    side = values.shape[0]
    profile = {
        "driver": "GTiff", "width": side, "height": side, "count": 1, "dtype": "float32",
        "tiled": True, "blockxsize": TILE, "blockysize": TILE, "compress": "zstd",
        "zstd_level": 3, "nodata": float("nan"), "BIGTIFF": "IF_SAFER",
    }  # fmt: skip
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(values, 1)
        dst.build_overviews([2**k for k in range(1, levels + 1)], Resampling.average)


def child_build(method: str, side: int, levels: int, path: str) -> None:
    """Build one pyramid; print its time, input and peak memory as JSON."""
    if method == "hurray":
        import xarray  # noqa: F401  # the maker of the Dataset has it loaded

        write = write_hurray
    else:
        import rasterio  # noqa: F401

        write = write_gdal
    values = make_field(side)
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # the peak from here on
    before = memory()["VmRSS"]
    start = time.perf_counter()
    write(values, path, levels)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "input": before, "peak": memory()["VmHWM"]}))


def run_child(args: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, check=False
    )
    elapsed = time.perf_counter() - start
    if result.returncode:
        raise SystemExit(f"{args[:3]} failed:\n{result.stderr}")
    return elapsed, result.stdout


def build(work: Path, side: int, rounds: int) -> None:
    rows: dict[tuple[int, str], list[dict[str, Any]]] = {}
    methods = ["hurray", "gdal"] if has_gdal() else ["hurray"]
    load_before = os.getloadavg()
    for _ in range(rounds):
        for levels in (2, 4, 6):
            for method in methods:
                path = work / f"build.{method}"
                _, out = run_child(
                    [__file__, "--child-build", method, str(side), str(levels), str(path)]
                )
                rows.setdefault((levels, method), []).append(json.loads(out.splitlines()[-1]))
                path.unlink()
    load_after = os.getloadavg()
    mib = 2**20
    print(f"\n## Building a pyramid of a {side} x {side} float32 field, 10% NaN\n")
    print(
        f"{rounds} rounds, best and median; load average {load_before} before, {load_after} after"
    )
    print(f"command: python benchmarks/pyramid_gdal.py --build --rounds {rounds}\n")
    print(
        "| levels | method | seconds best / median | input MiB | peak MiB | overhead MiB "
        "| overhead / gdal's | time / gdal's |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for levels in (2, 4, 6):
        gdal = rows.get((levels, "gdal"), [])
        gdal_over = statistics.median(r["peak"] - r["input"] for r in gdal) if gdal else None
        gdal_time = statistics.median(r["seconds"] for r in gdal) if gdal else None
        for method in methods:
            found = rows[(levels, method)]
            times = [r["seconds"] for r in found]
            over = statistics.median(r["peak"] - r["input"] for r in found)
            print(
                f"| {levels} | {method} | {min(times):.2f} / {statistics.median(times):.2f} | "
                f"{statistics.median(r['input'] for r in found) / mib:.0f} | "
                f"{statistics.median(r['peak'] for r in found) / mib:.0f} | {over / mib:.0f} | "
                f"{ratio(over, gdal_over)} | {ratio(statistics.median(times), gdal_time)} |"
            )


def ratio(value: float, peer: float | None) -> str:
    return "" if peer is None else f"{value / peer:.2f}"


# ---- tiles --------------------------------------------------------------------------


def tile_box(side: int) -> tuple[int, int]:
    """The top left corner of the tile read: on the tile grid, near the level's centre."""
    level_side = -(-side // 2**LEVEL)
    corner = max((level_side // 2) // TILE * TILE, 0)
    return corner, corner


CHILD = {
    "numpy": "import numpy\n",
    "reader": (
        "import xarray_hurray as xh\n"
        "tile = xh.open_reader(URL).read(f'{LEVEL}/v', (slice(Y, Y + T), slice(X, X + T)))\n"
    ),
    "xarray": (
        "import xarray as xr\n"
        "tree = xr.open_datatree(URL, engine='hurray')\n"
        "tile = tree.hurray.level(LEVEL).v[Y : Y + T, X : X + T].values\n"
    ),
    "xarray, engine class": (
        "import xarray as xr\n"
        "from xarray_hurray.xarray.entrypoint import HurrayBackendEntrypoint\n"
        "tree = xr.open_datatree(URL, engine=HurrayBackendEntrypoint)\n"
        "tile = tree.hurray.level(LEVEL).v[Y : Y + T, X : X + T].values\n"
    ),
    "gdal": (
        "import rasterio\n"
        "from rasterio.windows import Window\n"
        "with rasterio.Env(GDAL_DISABLE_READDIR_ON_OPEN='EMPTY_DIR'):\n"
        "    with rasterio.open('/vsicurl/' + URL, overview_level=LEVEL - 1) as src:\n"
        "        tile = src.read(1, window=Window(X, Y, T, T))\n"
    ),
}  # fmt: skip
"""What each cold process runs (``URL``, ``LEVEL``, ``Y``, ``X``, ``T`` given)."""


def child_code(row: str, url: str, side: int) -> str:
    y, x = tile_box(side)
    prelude = f"URL = {url!r}\nLEVEL = {LEVEL}\nY, X, T = {y}, {x}, {TILE}\n"
    check = "" if row == "numpy" else "assert tile.shape == (T, T)\n"
    return prelude + CHILD[row] + check


def warm(path: Path, side: int, repeats: int) -> dict[str, float]:
    """Seconds a tile, best of ``repeats`` passes over 64 tiles of level 2, through
    ``level()`` and through the reader (both of the local file, each tile read once
    before), after checking that both give the same values."""
    import xarray as xr

    import xarray_hurray as xh

    y0, x0 = tile_box(side)
    level_side = -(-side // 2**LEVEL)
    boxes = [
        (slice(y, y + TILE), slice(x, x + TILE))
        for y in range(y0 - 4 * TILE, y0 + 4 * TILE, TILE)
        for x in range(x0 - 4 * TILE, x0 + 4 * TILE, TILE)
        if 0 <= y and y + TILE <= level_side and 0 <= x and x + TILE <= level_side
    ]
    reader = xh.open_reader(str(path))
    tree = xr.open_datatree(path, engine="hurray")
    name = f"{LEVEL}/v"

    def through_level() -> None:
        for box in boxes:
            tree.hurray.level(LEVEL).v[box].values  # noqa: B018

    def through_reader() -> None:
        for box in boxes:
            reader.read(name, box)

    for box in boxes:
        want = reader.read(name, box)
        got = tree.hurray.level(LEVEL).v[box].values
        np.testing.assert_array_equal(got, want)
    best = {"xarray, level()": float("inf"), "reader": float("inf")}
    for _ in range(repeats):
        for key, run in (("xarray, level()", through_level), ("reader", through_reader)):
            start = time.perf_counter()
            run()
            best[key] = min(best[key], (time.perf_counter() - start) / len(boxes))
    tree.close()
    return best


def tiles(work: Path, side: int, rounds: int, latency: float) -> None:
    values = make_field(side)
    write_hurray(values, str(work / "p.hurray"), 6)
    rows = ["numpy", "reader", "xarray", "xarray, engine class"]
    if has_gdal():
        write_gdal(values, str(work / "p.tif"), 6)
        rows.append("gdal")
    del values
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    times: dict[str, list[float]] = {row: [] for row in rows}
    load_before = os.getloadavg()
    with LatencyServer(work, latency=latency) as server:
        urls = {
            "numpy": "",
            "reader": server.url("p.hurray"),
            "xarray": server.url("p.hurray"),
            "xarray, engine class": server.url("p.hurray"),
            "gdal": server.url("p.tif"),
        }  # (the GDAL file only where GDAL wrote it)
        codes = {row: child_code(row, urls[row], side) for row in rows}
        for row in rows:  # untimed: bytecode caches
            run_child(["-c", codes[row]], env)
        for _ in range(rounds):
            for row in rows:
                times[row].append(run_child(["-c", codes[row]], env)[0])
    load_after = os.getloadavg()
    print(f"\n## A tile of level {LEVEL} of a {side} x {side} pyramid (6 levels)\n")
    print(
        f"cold processes, {rounds} rounds, {latency * 1000:g} ms a request; load average "
        f"{load_before} before, {load_after} after"
    )
    print(f"command: python benchmarks/pyramid_gdal.py --tiles --rounds {rounds}\n")
    print("| process | best s | median s | best / gdal's | median / gdal's |")
    print("|---|---:|---:|---:|---:|")
    best = {row: min(t) for row, t in times.items()}
    median = {row: statistics.median(t) for row, t in times.items()}
    for row in rows:
        print(
            f"| {row} | {best[row]:.3f} | {median[row]:.3f} | "
            f"{ratio(best[row], best.get('gdal'))} | {ratio(median[row], median.get('gdal'))} |"
        )
    found = warm(work / "p.hurray", side, 20)
    print(f"\nwarm tiles of the local file, best of 20 passes; load average {os.getloadavg()}\n")
    print("| path | ms a tile | / reader's |")
    print("|---|---:|---:|")
    for key, seconds in found.items():
        print(f"| {key} | {seconds * 1e3:.3f} | {seconds / found['reader']:.2f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true", help="the build against GDAL's")
    parser.add_argument("--tiles", action="store_true", help="cold and warm tiles")
    parser.add_argument("--quick", action="store_true", help="a small field, two rounds")
    parser.add_argument("--side", type=int, help=f"the field's side (default {SIDE})")
    parser.add_argument("--rounds", type=int, help="rounds (default 3 builds, 5 cold)")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds a request")
    parser.add_argument("--child-build", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_build:
        method, side, levels, path = args.child_build
        child_build(method, int(side), int(levels), path)
        return 0
    side = args.side or (QUICK_SIDE if args.quick else SIDE)
    with tempfile.TemporaryDirectory(prefix="pyramid-gdal-") as work_dir:
        work = Path(work_dir)
        if args.build:
            build(work, side, args.rounds or (1 if args.quick else 3))
        if args.tiles:
            tiles(work, side, args.rounds or (2 if args.quick else 5), args.latency)
    return 0


if __name__ == "__main__":
    sys.exit(main())
