"""Peak memory and time of a large chunk: writing it, and reading ten elements of it.

Three files of one float32 variable stored as one chunk:

- ``random``: 8192 x 8192 uniform random values (256 MiB, which zstd barely
  compresses), written by ``to_hurray`` with its defaults;
- ``smooth``: the same size, a smooth field rounded to hundredths (compresses well);
- ``bomb``: 32768 x 16384 (2 GiB, the most one chunk may decode to), stored as a
  zstd frame of 16,384 RLE blocks made by hand (64 KiB), single-segment (its window
  is its whole content) or declaring a 2 MiB window.

Each step runs in a fresh process, which reports the growth of its peak resident
memory over the step (``getrusage`` max RSS after the step, less before it: imports
and the input array are before) and the step's wall time.  A read takes row 0 or the
last row, columns 0 to 9.  The physical floor of a read is its stored chunk (a read
checks the chunk's bytes whole) plus its result; the table gives the growth against
the stored bytes.

Usage::

    python benchmarks/large_chunk.py                   # the package installed
    python benchmarks/large_chunk.py --package DIR     # the steps import DIR's package
    python benchmarks/large_chunk.py --quick           # 16 MiB and 128 MiB, smoke run
    python benchmarks/large_chunk.py --only bomb --first-row   # one read of each frame
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# the files are built by the installed package; the steps import the one --package names
from xarray_hurray.testing.frames import one_chunk_file, rle_frame

MIB = 2**20

STEP = r"""
import json, resource, sys, time
import numpy as np

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

kind, path, side = sys.argv[1], sys.argv[2], int(sys.argv[3])
import xarray as xr
import xarray_hurray as xh
if kind in ("random", "smooth"):
    if kind == "random":
        field = np.random.default_rng(0).random((side, side), dtype="f4")
    else:
        # in place: no temporary field raises the peak before the write
        axis = np.arange(side, dtype="f4")
        field = np.multiply.outer(np.sin(axis / 700), np.cos(axis / 500))
        field *= 20
        np.round(field, 2, out=field)
    ds = xr.Dataset({"v": (("y", "x"), field)})
    before = peak()
    start = time.perf_counter()
    xh.to_hurray(ds, path, encoding={"v": {"chunks": field.shape}})
else:
    reader = xh.open_reader(path)
    before = peak()
    start = time.perf_counter()
    reader.read("v", (int(sys.argv[4]), slice(0, 10)))
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "grown": peak() - before}))
"""


def step(env: dict[str, str], *args: object) -> dict[str, float]:
    """Run one step in a fresh process; its seconds and the growth of its peak RSS."""
    done = subprocess.run(
        [sys.executable, "-c", STEP, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
        cwd=tempfile.gettempdir(),  # not a checkout, whose package ``-c`` would import
    )
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1]}
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--package", help="a folder whose xarray_hurray the steps import")
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument(
        "--only", choices=["field", "bomb"], help="the 256 MiB fields or the 2 GiB frames alone"
    )
    parser.add_argument(
        "--first-row", action="store_true", help="read row 0 alone, not also the last"
    )
    args = parser.parse_args()
    env = dict(os.environ)
    if args.package:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.package, env.get("PYTHONPATH")]))
    side = 2048 if args.quick else 8192
    bomb = (2**12, 2**13) if args.quick else (2**15, 2**14)
    print(f"load average {os.getloadavg()[0]:.2f}; package {args.package or 'installed'}")
    print("| file | step | grown MiB | stored MiB | grown / stored | seconds |")
    print("|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        files = []
        for kind in ("random", "smooth") if args.only != "bomb" else ():
            path = Path(folder) / f"{kind}.hurray"
            result = step(env, kind, path, side)
            files.append((kind, path, side))
            show(kind, "write", result, path.stat().st_size)
        for window in (None, 2**21) if args.only != "field" else ():
            name = "bomb, single-segment" if window is None else "bomb, 2 MiB window"
            path = Path(folder) / f"bomb-{window}.hurray"
            one_chunk_file(path, bomb, rle_frame(4 * bomb[0] * bomb[1], 0x42, window))
            files.append((name, path, bomb[0]))
        for name, path, rows in files:
            for row in (0,) if args.first_row else (0, rows - 1):
                result = step(env, "read", path, 0, row)
                show(name, f"read row {row}, 10 elements", result, path.stat().st_size)


def show(name: str, what: str, result: dict, stored: int) -> None:
    if "error" in result:
        print(f"| {name} | {what} | {result['error']} | | | |")
        return
    grown = result["grown"] / MIB
    print(
        f"| {name} | {what} | {grown:.0f} | {stored / MIB:.2f} | "
        f"{result['grown'] / stored:.2f} | {result['seconds']:.3f} |"
    )


if __name__ == "__main__":
    main()
