"""Pans of map tiles asked for one by one, at every level of a pyramid: this package
against GDAL reading a Cloud-Optimized GeoTIFF, over a link of 50 ms.

One float32 field (``--side`` squared, a smooth function with a little noise) is
written as a Hurray file with overviews (``to_hurray(..., overviews=N)``, chunks of
``--tile`` squared) and as a COG by GDAL's COG driver (rasterio's wheels; zstd, the
same tiles, average overviews; ``js_tiles.write_cog``).  Both are served by
:class:`latency_server.LatencyServer`, which waits ``--latency`` before each answer.

Each reader runs in a process of its own per run (its library imported before any
timing, so that no run inherits another's caches), and at each level of the pyramid
opens the level, then reads a *pan*: 16 tiles of ``--tile`` squared side by side,
one after another, as a map client asks for them while the view moves: along the
middle row of the level from its first column, and down the middle column from its
first row (on a level fewer than 16 tiles wide or high, as many tiles as it has that
way).  The readers:

- *hurray reader*: ``open_reader(url)``, then ``reader.read(f"{level}/t", box)``;
- *hurray xarray*: ``xr.open_dataset(url, engine="hurray", group=level)``, then
  ``ds.t.isel(y=..., x=...).values``;
- *GDAL*: ``rasterio.open(url)`` (``overview_level`` for the coarser levels, with
  ``GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR``), then ``src.read(1, window=...)``.

The server counts the requests of each step (by their arrival between the step's
start and end, on the clock every process shares) and their *waves* (a request
arriving more than half a latency after the first of its wave starts a new one).
Every tile is checked against the same tile read from the local file by the same
library.  The figures are the median and the best of ``--runs`` runs, the readers
taking turns.  Targets (issue 45): a pan in fewer requests than GDAL's and less time,
at every level.

Usage::

    python benchmarks/pans.py                # 8192 squared, tiles of 256, 5 overviews
    python benchmarks/pans.py --quick        # small, for the smoke test
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

READERS = ("hurray reader", "hurray xarray", "GDAL")
PAN = 16
"""Tiles of a pan."""

DIRECTIONS = ("row", "column")
"""The ways a pan goes: along a row of tiles (which a COG stores back to back) or a
column."""

GDAL_ENV = {"GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR"}


def field(side: int) -> np.ndarray:
    """A smooth float32 field with a little noise (compressing as measured data does)."""
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side
    noise = np.random.default_rng(0).standard_normal((side, side)).astype(np.float32)
    return (np.sin(9 * y) * np.cos(7 * x) + y + 0.01 * noise).astype(np.float32)


def pan_tiles(shape: tuple[int, int], tile: int, along: str) -> list[tuple[int, int]]:
    """The ``(row, column)`` of each tile of a pan over a level of ``shape``: ``along``
    the middle ``"row"`` or ``"column"``, from its start, :data:`PAN` tiles or as many
    as the level has that way."""
    rows, cols = -(-shape[0] // tile), -(-shape[1] // tile)
    if along == "row":
        return [(rows // 2, c) for c in range(min(PAN, cols))]
    return [(r, cols // 2) for r in range(min(PAN, rows))]


def write_files(root: Path, side: int, tile: int, overviews: int) -> list[tuple[int, int]]:
    """The Hurray pyramid and the COG of the field; the shape of each level."""
    import xarray as xr
    from js_tiles import write_cog

    from xarray_hurray import open_reader, to_hurray

    values = field(side)
    ds = xr.Dataset({"t": (("y", "x"), values)})
    to_hurray(
        ds, root / "field.hurray", overviews=overviews, encoding={"t": {"chunks": (tile, tile)}}
    )
    write_cog(values, root / "field.tif", tile, overviews)
    reader = open_reader(root / "field.hurray")
    return [tuple(reader.variable(f"{k}/t").shape) for k in range(overviews + 1)]  # type: ignore[misc]


# --- the children: one reader, every level -------------------------------------------


def _hurray_reader(url: str) -> tuple[Any, Any]:
    from xarray_hurray import open_reader

    opened: list[Any] = []

    def open_level(level: int) -> Any:
        if not opened:  # the file once, as a map client keeps it open
            opened.append(open_reader(url))
        return opened[0], f"{level}/t"

    def read(opened: Any, y: slice, x: slice) -> np.ndarray:
        reader, name = opened
        out: np.ndarray = reader.read(name, (y, x))
        return out

    return open_level, read


def _hurray_xarray(url: str) -> tuple[Any, Any]:
    import xarray as xr

    def open_level(level: int) -> Any:
        return xr.open_dataset(url, engine="hurray", group=str(level)).t

    def read(var: Any, y: slice, x: slice) -> np.ndarray:
        return np.asarray(var.isel(y=y, x=x).values)

    return open_level, read


def _gdal(url: str) -> tuple[Any, Any]:
    import rasterio
    from rasterio.windows import Window

    env = rasterio.Env(**GDAL_ENV)
    env.__enter__()

    def open_level(level: int) -> Any:
        return rasterio.open(url, overview_level=level - 1) if level else rasterio.open(url)

    def read(src: Any, y: slice, x: slice) -> np.ndarray:
        window = Window(x.start, y.start, x.stop - x.start, y.stop - y.start)
        return np.asarray(src.read(1, window=window))

    return open_level, read


OPENERS = {"hurray reader": _hurray_reader, "hurray xarray": _hurray_xarray, "GDAL": _gdal}


def child(reader: str, url: str, shapes: list[list[int]], tile: int, along: str) -> dict[str, Any]:
    """Open each level and pan over it ``along`` a row or a column: the windows of each
    step (the shared clock) and the sum of each tile read (checked by the parent)."""
    open_level, read = OPENERS[reader](url)
    levels = []
    for level, shape in enumerate(shapes):
        start = time.perf_counter()
        opened = open_level(level)
        opened_at = time.perf_counter()
        sums = []
        for r, c in pan_tiles((shape[0], shape[1]), tile, along):
            values = read(opened, slice(r * tile, (r + 1) * tile), slice(c * tile, (c + 1) * tile))
            sums.append(float(values.astype(np.float64).sum()))
        levels.append(
            {"open": (start, opened_at), "pan": (opened_at, time.perf_counter()), "sums": sums}
        )
    return {"levels": levels}


def expected_sums(
    root: Path, shapes: list[tuple[int, int]], tile: int, along: str
) -> dict[str, list[list[float]]]:
    """The sum of each tile of the pans ``along`` a row or a column read from the local
    files: Hurray's levels by its reader, the COG's by GDAL."""
    import rasterio
    from rasterio.windows import Window

    from xarray_hurray import open_reader

    reader = open_reader(root / "field.hurray")
    hurray, gdal = [], []
    for level, shape in enumerate(shapes):
        tiles = pan_tiles(shape, tile, along)
        values = reader.read(f"{level}/t")
        hurray.append(
            [
                float(
                    values[r * tile : (r + 1) * tile, c * tile : (c + 1) * tile]
                    .astype(np.float64)
                    .sum()
                )
                for r, c in tiles
            ]
        )
        path = root / "field.tif"
        with rasterio.open(path, overview_level=level - 1) if level else rasterio.open(path) as src:
            gdal.append(
                [
                    float(
                        src.read(1, window=Window(c * tile, r * tile, tile, tile))
                        .astype(np.float64)
                        .sum()
                    )
                    for r, c in tiles
                ]
            )
    return {"hurray reader": hurray, "hurray xarray": hurray, "GDAL": gdal}


def in_window(log: list[tuple[float, str, int]], window: tuple[float, float]) -> list[float]:
    """Arrivals of the requests made between the window's start and end."""
    return [t for t, _, _ in log if window[0] <= t <= window[1]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=8192)
    parser.add_argument("--tile", type=int, default=256)
    parser.add_argument("--overviews", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small, for the smoke test")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        reader, url, shapes, tile, along = args.child
        print(json.dumps(child(reader, url, json.loads(shapes), int(tile), along)))
        return
    if args.quick:
        args.side, args.tile, args.overviews, args.runs = 1024, 64, 2, 1
    from latency_server import LatencyServer
    from round_trips import waves

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shapes = write_files(root, args.side, args.tile, args.overviews)
        expected = {a: expected_sums(root, shapes, args.tile, a) for a in DIRECTIONS}
        urls = {
            "hurray reader": "field.hurray",
            "hurray xarray": "field.hurray",
            "GDAL": "field.tif",
        }
        found: dict[tuple[str, str], list[list[dict[str, float]]]] = {
            (a, r): [] for a in DIRECTIONS for r in READERS
        }
        loads = []
        with LatencyServer(root, latency=args.latency) as server:
            for _ in range(args.runs):
                for along, reader in found:  # taking turns
                    server.reset()
                    command = [sys.executable, __file__, "--child", reader]
                    command += [server.url(urls[reader]), json.dumps(shapes), str(args.tile), along]
                    done = subprocess.run(
                        command, capture_output=True, text=True, env={**os.environ, **GDAL_ENV}
                    )
                    if done.returncode:
                        raise RuntimeError(f"{reader} failed:\n{done.stderr}")
                    time.sleep(args.latency)  # every request answered
                    result = json.loads(done.stdout.strip().splitlines()[-1])
                    log = server.log
                    steps = []
                    for level, step in enumerate(result["levels"]):
                        np.testing.assert_allclose(
                            step["sums"], expected[along][reader][level], rtol=1e-6
                        )
                        row: dict[str, float] = {}
                        for part in ("open", "pan"):
                            arrivals = in_window(log, step[part])
                            row[f"{part} requests"] = len(arrivals)
                            row[f"{part} waves"] = waves(arrivals, args.latency)
                            row[f"{part} ms"] = 1000 * (step[part][1] - step[part][0])
                        steps.append(row)
                    found[along, reader].append(steps)
                loads.append(os.getloadavg()[0])
    print(
        f"field {args.side}² float32, tiles {args.tile}², {args.overviews} overviews; latency "
        f"{1000 * args.latency:.0f} ms; {args.runs} runs (median, best); load average "
        f"{min(loads):.2f}-{max(loads):.2f} over the runs"
    )
    print(
        "\n| pan | level | tiles | reader | open requests | pan requests | pan waves "
        "| pan ms (median) | pan ms (best) | pan time / GDAL's (median) |"
    )
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for along in DIRECTIONS:
        for level, shape in enumerate(shapes):
            gdal = statistics.median(run[level]["pan ms"] for run in found[along, "GDAL"])
            for reader in READERS:
                runs = [run[level] for run in found[along, reader]]
                median = statistics.median(r["pan ms"] for r in runs)
                best = min(r["pan ms"] for r in runs)
                last = runs[-1]
                print(
                    f"| {along} | {level} ({shape[0]}²) "
                    f"| {len(pan_tiles(shape, args.tile, along))} | {reader} "
                    f"| {last['open requests']:.0f} | {last['pan requests']:.0f} "
                    f"| {last['pan waves']:.0f} | {median:.0f} | {best:.0f} | {median / gdal:.2f} |"
                )


if __name__ == "__main__":
    main()
