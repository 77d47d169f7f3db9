"""A tile of one large Hilbert-ordered chunk: the JavaScript reader against the Python
reader, each in a fresh process.

A uint8 field of ``side`` squared is written as one chunk in Hilbert element order
(zstd, ``to_hurray(..., layout="hilbert")``).  Each reader, in a process of its own
with its default settings, opens the file from the local disk and reads one tile
of ``--tile`` squared at the centre of the chunk (the open included, and whatever a
first read of the process pays for), another tile of the chunk at its corner, then
the whole field; the time of each step is reported, and the JavaScript reader's
time over the Python reader's.
The tile needs the whole chunk decoded, then only its own elements placed: the
reader that positions every element of the chunk pays for the whole chunk on the
first tile.

Usage::

    python benchmarks/js_hilbert_chunk.py                  # sides 4096 and 8192
    python benchmarks/js_hilbert_chunk.py --sides 4096 --runs 3
    python benchmarks/js_hilbert_chunk.py --js OTHER/js    # another copy of the reader
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

from xarray_hurray import to_hurray

JS = Path(__file__).resolve().parents[1] / "js"

PYTHON_READ = """
import json, sys, time
from xarray_hurray import open_reader
path, tile = sys.argv[1], int(sys.argv[2])
start = time.perf_counter()
reader = open_reader(path)
side = reader.metadata.all_variables()[0][1].shape[0]
at = side // 2
reader.read("v", (slice(at, at + tile), slice(at, at + tile)))
first = time.perf_counter() - start
start = time.perf_counter()
reader.read("v", (slice(0, tile), slice(0, tile)))
second = time.perf_counter() - start
start = time.perf_counter()
reader.read("v")
print(json.dumps({"tile": first, "another tile": second, "whole": time.perf_counter() - start}))
"""

NODE_READ = """
import { readFileSync } from "node:fs";
const [js, path, tile] = process.argv.slice(-3);
const { openHurray } = await import(`${js}/src/hurray.js`);
let start = performance.now();
const file = await openHurray(new Uint8Array(readFileSync(path)));
const side = file.variable("v").shape[0];
const at = side / 2;
await file.read("v", [[at, at + Number(tile)], [at, at + Number(tile)]]);
const first = (performance.now() - start) / 1000;
start = performance.now();
await file.read("v", [[0, Number(tile)], [0, Number(tile)]]);
const second = (performance.now() - start) / 1000;
start = performance.now();
await file.read("v");
const whole = (performance.now() - start) / 1000;
console.log(JSON.stringify({ tile: first, "another tile": second, whole }));
"""


def write(path: Path, side: int) -> None:
    """The field ``(y + 3 x) % 251`` as one Hilbert-ordered chunk."""
    y, x = np.mgrid[0:side, 0:side]
    values = ((y + 3 * x) % 251).astype("u1")
    to_hurray(
        xr.Dataset({"v": (("y", "x"), values)}),
        path,
        layout="hilbert",
        encoding={"v": {"chunks": (side, side)}},
    )


def timed(command: list[str]) -> dict[str, float]:
    """The figures a reader's process prints."""
    answer = subprocess.run(command, capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(answer.stdout.splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sides", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--tile", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3, help="runs of each; the fastest is kept")
    parser.add_argument("--js", type=Path, default=JS, help="the js/ folder of the reader to time")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; tile {args.tile}; fastest of {args.runs}")
    with tempfile.TemporaryDirectory() as work:
        script = Path(work) / "read.mjs"
        script.write_text(NODE_READ)
        for side in args.sides:
            path = Path(work) / f"hilbert-{side}.hurray"
            write(path, side)
            node = [
                timed(["node", str(script), str(args.js.resolve()), str(path), str(args.tile)])
                for _ in range(args.runs)
            ]
            python = [
                timed([sys.executable, "-c", PYTHON_READ, str(path), str(args.tile)])
                for _ in range(args.runs)
            ]
            for step in ("tile", "another tile", "whole"):
                js_s = min(run[step] for run in node)
                py_s = min(run[step] for run in python)
                print(
                    f"{side}^2, {step}: JavaScript {js_s:.2f} s, Python {py_s:.2f} s, "
                    f"ratio {js_s / py_s:.1f}"
                )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
