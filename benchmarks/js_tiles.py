"""Tiles of a pyramid in JavaScript, over a link of 50 ms: this package's reader
against zarrita and geotiff.js, and the viewer's first drawn view in Chromium.

One smooth float32 field (``--side`` squared, tiles of ``--tile``, ``--levels``
overviews) is written three ways: a Hurray file with overviews (``to_hurray(...,
overviews=N)``), ``hurray refs`` references to that file (read by zarrita, pinned in
js/package-lock.json), and a Cloud-Optimized GeoTIFF of the same field made by GDAL
(rasterio's wheels; zstd, the same tiles, average overviews; read by geotiff.js).  They
are served by :class:`latency_server.LatencyServer`, which waits ``--latency`` before
each answer.  ``js/bench/tiles.js`` then runs in Node.js, each reader in turn:

- *open + tile*: a fresh open of the file and one tile at the centre of every level,
  one step per level;
- *pan*: 16 tiles (4 x 4) of level 0 read at once from an open file.

Each step is reported in wall time (the fastest of ``--runs`` runs, the readers taking
turns), round trips (wall time / latency), requests and waves (requests sent together).
The targets: open plus a tile in 2 round trips at every level, and fewer requests than
both peers for the pan.  ``--browser`` also loads the viewer page from the same server
(its scripts too pay the latency) in headless Chromium and reports the time to its
first drawn view and the file's requests.

Usage::

    python benchmarks/js_tiles.py                 # 4096 squared, tiles of 256, 4 overviews
    python benchmarks/js_tiles.py --browser       # and the viewer in Chromium
    python benchmarks/js_tiles.py --quick         # small, for the smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from js_peers import HEADER, run_bench, step_row, write_cog
from latency_server import LatencyServer

from xarray_hurray import open_reader, to_hurray
from xarray_hurray.zarr.references import kerchunk_references

WEB = Path(__file__).resolve().parents[1] / "xarray_hurray" / "web"


def field(side: int) -> np.ndarray:
    """A smooth float32 field."""
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side
    return (np.sin(9 * y) * np.cos(7 * x) + y).astype(np.float32)


def write_files(root: Path, side: int, tile: int, levels: int, url: str) -> list[list[int]]:
    """The Hurray file, its references (naming ``url``) and the COG; the shape of each level."""
    values = field(side)
    ds = xr.Dataset({"t": (("y", "x"), values)})
    to_hurray(ds, root / "field.hurray", overviews=levels, encoding={"t": {"chunks": (tile, tile)}})
    reader = open_reader(root / "field.hurray")
    refs = kerchunk_references(reader, url)
    (root / "field.json").write_text(json.dumps(refs))
    write_cog(values, root / "field.tif", tile, levels)
    return [list(reader.variable(f"{k}/t").shape) for k in range(levels + 1)]


def report(results: dict[str, Any], latency: float, levels: list[list[int]]) -> None:
    """Print each reader's steps."""
    print("reader" + HEADER[6:])
    for name, result in results.items():
        steps = [
            (f"open + tile, level {k} {levels[k][0]}²", s) for k, s in enumerate(result["open"])
        ]
        for step, s in [*steps, ("pan of 16 tiles", result["pan"])]:
            print(step_row(name, step, s["seconds"], latency, s))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=4096)
    parser.add_argument("--tile", type=int, default=256)
    parser.add_argument("--levels", type=int, default=4, help="overviews")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--browser", action="store_true", help="also time the viewer")
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        help="runs of each reader (each step's fastest is reported) and page loads",
    )
    parser.add_argument("--quick", action="store_true", help="small, for the smoke test")
    args = parser.parse_args()
    if args.quick:
        args.side, args.tile, args.levels, args.runs = 1024, 128, 2, 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with LatencyServer(root, latency=args.latency) as server:
            levels = write_files(
                root, args.side, args.tile, args.levels, server.url("field.hurray")
            )
            print(
                f"field {args.side}² float32, tiles {args.tile}, {args.levels} overviews; "
                f"latency {1000 * args.latency:.0f} ms; load average "
                f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
            )
            settings = {
                "hurray": server.url("field.hurray"),
                "refs": server.url("field.json"),
                "cog": server.url("field.tif"),
                "levels": levels,
                "tile": args.tile,
                "latency": args.latency,
                "runs": args.runs,
            }
            report(run_bench("tiles.js", json.dumps(settings)), args.latency, levels)
            if args.browser:
                for part in ("src", "viewer"):
                    shutil.copytree(WEB / part, root / part)
                (root / "data").mkdir()
                os.link(root / "field.hurray", root / "data" / "field.hurray")
                page = server.url("viewer/index.html?url=/data/field.hurray")
                browser = os.environ.get("CHROMIUM", "/usr/bin/chromium")
                runs = run_bench(
                    "tiles.js",
                    "--browser",
                    json.dumps(
                        {
                            "page": page,
                            "browser": browser,
                            "runs": args.runs,
                            "latency": args.latency,
                        }
                    ),
                )
                for run in runs:
                    print(
                        f"viewer in Chromium: first view drawn {1000 * run['seconds']:.0f} ms "
                        f"after the page began to load ({run['seconds'] / args.latency:.1f} "
                        "round trips, its scripts included), "
                        f"{1000 * run['fileSeconds']:.0f} ms after the first request to the "
                        f"file ({run['fileSeconds'] / args.latency:.1f} round trips); level "
                        f"{run['level']}, {run['dataRequests']} requests to the file"
                    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
