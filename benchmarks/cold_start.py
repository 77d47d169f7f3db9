"""A cold process: start Python, import, open a file over HTTP, read one tile, exit.

Each row is a new interpreter timed by its parent from start to exit, over the
latency-injecting server of ``latency_server.py`` (``--latency`` seconds before each
reply, 50 ms by default):

- ``import numpy`` alone, the peer every figure is given against;
- the reader: ``xarray_hurray.open_reader(url)`` and ``reader.read`` of one tile;
- xarray with this engine: ``xr.open_dataset(url, engine="hurray")`` and the tile's
  values (no explicit import of this package: xarray finds the engine, and for an
  engine named by a string that is not one of its own it imports the engine module
  of every installed package that has one, rioxarray's and cfgrib's among them);
- the same with the engine given as its class (``engine=HurrayBackendEntrypoint``),
  which xarray takes without loading the other engines;
- xarray with zarr: ``xr.open_dataset(url, engine="zarr", consolidated=True)`` of the
  same data as a Zarr v3 store, through fsspec's HTTP file system, and the tile;
- ``hurray --help`` and ``hurray info FILE`` of the local file (``python -m
  xarray_hurray``, the same code as the ``hurray`` script).

The last column is the time from the end of a child's main code to its exit (the
interpreter's shutdown), for the children that say when that was.

The field is 1024 x 1024 float32 with coordinates ``y`` and ``x``, stored in chunks
of 256 x 256, zstd; the tile is one chunk, checked in the child against the values
written.  The rows take turns, round after round, so that each meets the same share
of a shared machine's quiet and busy moments; the figures are the best and the
median of the rounds.  The children write and use bytecode caches (in a temporary
directory), as an installed package has them, and one untimed run of each row
precedes the timed ones.

Usage::

    python benchmarks/cold_start.py                 # five rounds at 50 ms
    python benchmarks/cold_start.py --quick         # two rounds
    python benchmarks/cold_start.py --latency 0.002 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from latency_server import LatencyServer

SIDE = 1024
CHUNK = 256
TILE = (slice(256, 512), slice(512, 768))
"""The tile read: one stored chunk, away from the edges."""

NUMPY = "numpy"
READER = "reader"
XARRAY_HURRAY = "xarray, engine hurray"
XARRAY_CLASS = "xarray, engine class"
XARRAY_ZARR = "xarray, zarr consolidated"
HELP = "hurray --help"
INFO = "hurray info FILE"

TARGETS = {
    READER: ("import numpy + 0.35 s", lambda t: t[NUMPY] + 0.35),
    HELP: ("import numpy + 0.75 s", lambda t: t[NUMPY] + 0.35 + 0.4),
    XARRAY_HURRAY: ("0.8 x zarr's", lambda t: 0.8 * t[XARRAY_ZARR]),
    XARRAY_CLASS: ("0.8 x zarr's", lambda t: 0.8 * t[XARRAY_ZARR]),
}
"""The figures each row is held to, of figures of the same statistic and run."""


def field() -> np.ndarray:
    """The values written: each cell's row-major number, exact in float32."""
    return np.arange(SIDE * SIDE, dtype="f4").reshape(SIDE, SIDE)


def write_data(directory: Path) -> None:
    """``data.hurray`` and ``data.zarr`` (Zarr v3, consolidated) of the same field."""
    import xarray as xr

    import xarray_hurray as xh

    coords = {"y": np.arange(SIDE, dtype="f8"), "x": np.arange(SIDE, dtype="f8")}
    ds = xr.Dataset({"v": (("y", "x"), field())}, coords=coords)
    xh.to_hurray(ds, directory / "data.hurray", encoding={"v": {"chunks": (CHUNK, CHUNK)}})
    with warnings.catch_warnings():
        # zarr's note that consolidated metadata is not yet part of the v3 spec
        warnings.simplefilter("ignore")
        ds.chunk({"y": CHUNK, "x": CHUNK}).to_zarr(
            directory / "data.zarr", mode="w", consolidated=True, zarr_format=3
        )


CHILD = {
    READER: (
        "import xarray_hurray as xh\n"
        "tile = xh.open_reader(URL).read('v', TILE)\n"
    ),
    XARRAY_HURRAY: (
        "import xarray as xr\n"
        "tile = xr.open_dataset(URL, engine='hurray').v[TILE].values\n"
    ),
    XARRAY_CLASS: (
        "import xarray as xr\n"
        "from xarray_hurray.xarray.entrypoint import HurrayBackendEntrypoint\n"
        "tile = xr.open_dataset(URL, engine=HurrayBackendEntrypoint).v[TILE].values\n"
    ),
    XARRAY_ZARR: (
        "import xarray as xr\n"
        "tile = xr.open_dataset(URL, engine='zarr', consolidated=True).v[TILE].values\n"
    ),
}  # fmt: skip
"""What each reading child runs (``URL`` and ``TILE`` given); each then checks ``tile``."""


END = "import time\nprint('main code ended at', time.time())\n"
"""The last lines of each ``python -c`` child: its parent times the exit from here."""


def child_command(row: str, url: str, local: Path) -> list[str]:
    """The command line of one cold process of ``row``."""
    if row == NUMPY:
        return [sys.executable, "-c", "import numpy\n" + END]
    if row == HELP:
        return [sys.executable, "-m", "xarray_hurray", "--help"]
    if row == INFO:
        return [sys.executable, "-m", "xarray_hurray", "info", str(local)]
    start = (TILE[0].start, TILE[1].start)
    check = (
        f"import numpy as np\n"
        f"want = np.arange({SIDE * SIDE}, dtype='f4').reshape({SIDE}, {SIDE})[TILE]\n"
        f"assert tile.shape == want.shape and (tile == want).all(), 'wrong tile'\n"
    )
    prelude = f"URL = {url!r}\nTILE = (slice({start[0]}, {start[0] + CHUNK}), "
    prelude += f"slice({start[1]}, {start[1] + CHUNK}))\n"
    return [sys.executable, "-c", prelude + CHILD[row] + check + END]


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, float | None]:
    """Wall seconds of one process of ``command`` from start to exit, and from the end
    of its main code to its exit (None for a child that does not say when that was)."""
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    ended = time.time()
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)[:200]} failed:\n{result.stderr}")
    lines = result.stdout.splitlines()
    if lines and lines[-1].startswith("main code ended at "):
        return elapsed, ended - float(lines[-1].rpartition(" ")[2])
    return elapsed, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two rounds")
    parser.add_argument("--rounds", type=int, help="timed processes per row (default 5)")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    args = parser.parse_args()
    rounds = args.rounds or (2 if args.quick else 5)
    rows = [NUMPY, READER, XARRAY_HURRAY, XARRAY_CLASS, XARRAY_ZARR, HELP, INFO]
    with tempfile.TemporaryDirectory(prefix="hurray-cold-") as tmp:
        root = Path(tmp)
        data = root / "data"
        data.mkdir()
        write_data(data)
        env = {key: value for key, value in os.environ.items()}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        times: dict[str, list[float]] = {row: [] for row in rows}
        exits: dict[str, list[float]] = {row: [] for row in rows}
        load_before = os.getloadavg()[0]
        with LatencyServer(data, latency=args.latency) as server:
            urls = {
                READER: server.url("data.hurray"),
                XARRAY_HURRAY: server.url("data.hurray"),
                XARRAY_CLASS: server.url("data.hurray"),
                XARRAY_ZARR: server.url("data.zarr"),
            }
            commands = {
                row: child_command(row, urls.get(row, ""), data / "data.hurray") for row in rows
            }
            for row in rows:  # untimed: bytecode caches, the file system's cache
                run_once(commands[row], env)
            for _ in range(rounds):
                for row in rows:
                    elapsed, exit_time = run_once(commands[row], env)
                    times[row].append(elapsed)
                    if exit_time is not None:
                        exits[row].append(exit_time)
        load_after = os.getloadavg()[0]
    best = {row: min(found) for row, found in times.items()}
    median = {row: statistics.median(found) for row, found in times.items()}
    print(
        f"cold processes, {rounds} rounds, {args.latency * 1000:g} ms per request; "
        f"load average {load_before:.1f} before, {load_after:.1f} after"
    )
    print(f"command: python benchmarks/cold_start.py{' --quick' if args.quick else ''}")
    print()
    print(
        "| process | best s | median s | best - import numpy | target | met (best, median) "
        "| exit s, median |"
    )
    print("|---|---:|---:|---:|---|---|---:|")
    for row in rows:
        target, bound = TARGETS.get(row, ("", None))
        met = ""
        if bound is not None:
            met = ", ".join("yes" if s[row] <= bound(s) else "no" for s in (best, median))
        exit_time = f"{statistics.median(exits[row]):.3f}" if exits[row] else ""
        print(
            f"| {row} | {best[row]:.3f} | {median[row]:.3f} | "
            f"{best[row] - best[NUMPY]:+.3f} | {target} | {met} | {exit_time} |"
        )


if __name__ == "__main__":
    main()
