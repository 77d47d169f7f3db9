"""Maps and analysis on one cube: every read pattern, locally and over a link of 50 ms,
on the cube as ``to_hurray`` writes it with no encoding, against Zarr written each
peer's usual way.

The cube is ``(time, y, x)`` float32 (``--steps`` x ``--side`` squared, 48 x 2048
squared by default: 768 MiB), a smooth field with noise and an all-NaN corner (a
land mask: 1/16 of every step), zstd level 3 everywhere.  It is written as:

- *hurray default*: ``to_hurray(ds, path)`` with no encoding (its chunks and chunk
  order are the defaults under test);
- *zarr per-step shards*: Zarr v3 by ``Dataset.to_zarr``, one shard per time step
  holding inner chunks of the default's shape (zarr's own sharding, row-major inner
  order): how Zarr stores of time steps are usually written;
- *zarr same chunks*: Zarr v3 by ``Dataset.to_zarr``, unsharded, in the default's
  chunks;
- *h5netcdf* (local reads only): netCDF-4 by ``to_netcdf(engine="h5netcdf")`` in the
  default's chunks (the zstd filter of hdf5plugin).

``--candidates`` writes, instead of the peers, this package's candidate layouts of
the choice of docs/choosing-a-layout.md: the default; chunks of 1 x 128 x 128 and
1 x 512 x 512 (the curve over y and x, steps one after another); 1 x 256 x 256 with
the curve over time, y and x; and the chunks the writer chose before (48 x 64 x 64,
the curve over every axis).

The patterns, each through xarray from a fresh ``open_dataset`` (``engine="hurray"``,
or ``"zarr"`` consolidated with fsspec's HTTP file system, or ``"h5netcdf"``):

- *map step*: one whole step (``isel(time=k)``);
- *tile*: a 256 x 256 tile of one step, on the tile grid;
- *window*: a 512 x 512 box off the tile grid, every step;
- *pixel drill*: the whole series at one pixel;
- *bulk*: every value (``.values``, no dask).

Remote reads go to :class:`latency_server.LatencyServer` (50 ms before each answer, no
bandwidth cap), which counts each step's requests, bytes and *waves* (a request
arriving more than half a latency after the first of its wave starts a new one); the
open's own waves are counted apart from the read's.  The bytes are also given against
the read's *own bytes*: the stored bytes of the chunks the selection touches in the
default file.  Local reads are of files in the page cache.  Each step runs
``--runs`` times, the systems taking turns, and its median wall time is reported (the
best too), with each system's time as a ratio to the default's; each round starts
with the next system.  The bulk read is also
compared with its floor: every stored chunk of the default file decompressed into a
buffer of the thread's and copied to its place in a new array, every missing chunk's
place filled with NaN, on every CPU (``throughput.py``'s "placed").

``--against CHECKOUT`` reads the default file instead with this checkout's package and
with the package of another checkout (a fresh process per read for both, its imports
left out of the times): the figures of a change against the code before it.

Usage::

    python benchmarks/cube_reads.py                  # 48 x 2048², 5 runs
    python benchmarks/cube_reads.py --against ../main   # this code against main's
    python benchmarks/cube_reads.py --candidates     # the layouts of the choice
    python benchmarks/cube_reads.py --quick          # small, for the smoke test
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

sys.path.insert(0, str(Path(__file__).parent))
from latency_server import LatencyServer
from round_trips import waves
from throughput import LEVEL, on_every_thread

import xarray_hurray as xh
from xarray_hurray import open_reader

warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")

TILE = 256
"""The side of a map tile, and of the default chunks."""

DEFAULT = "hurray default"
THIS = "hurray default, this checkout (fresh process)"
OTHER = "hurray default, the other checkout (fresh process)"
"""The rows of ``--against``: the default file read by each checkout's package."""
PEERS = ("zarr per-step shards", "zarr same chunks", "h5netcdf")
CANDIDATES: dict[str, dict[str, Any]] = {
    "hurray 1 x 128 x 128": {"chunks": (1, 128, 128)},
    "hurray 1 x 512 x 512": {"chunks": (1, 512, 512)},
    "hurray 1 x 256 x 256, curve over (time, y, x)": {
        "chunks": (1, 256, 256),
        "chunk_axes": ("time", "y", "x"),
    },
    "hurray 48 x 64 x 64 (the chunks chosen before)": {"chunks": (48, 64, 64)},
}
"""The candidate layouts of ``--candidates``, by their encoding of ``v``."""


def cube(steps: int, side: int) -> xr.Dataset:
    """The cube: a smooth field with noise, NaN over the corner of a quarter of each
    side (all of its tiles), with time, y and x coordinates."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side
    base = np.sin(6 * x) * np.cos(4 * y)
    values = np.empty((steps, side, side), dtype=np.float32)
    for k in range(steps):
        values[k] = base + 0.05 * rng.standard_normal((side, side), dtype=np.float32)
    values[:, : side // 4, : side // 4] = np.nan
    return xr.Dataset(
        {"v": (("time", "y", "x"), values)},
        coords={
            "time": pd.date_range("2020-01-01", periods=steps, freq="D"),
            "y": np.linspace(60.0, 40.0, side),
            "x": np.linspace(-10.0, 10.0, side),
        },
    )


def write(system: str, ds: xr.Dataset, path: Path) -> None:
    """``ds`` written as ``system`` stores it."""
    codecs = {"id": "zstd", "level": LEVEL}
    side = ds.v.shape[1]
    tile = min(TILE, side)
    if system == DEFAULT:
        xh.to_hurray(ds, path, codecs=codecs)
    elif system in CANDIDATES:
        xh.to_hurray(ds, path, codecs=codecs, encoding={"v": CANDIDATES[system]})
    elif system.startswith("zarr"):
        from zarr.codecs import ZstdCodec

        encoding: dict[str, Any] = {
            "chunks": (1, tile, tile),
            "compressors": [ZstdCodec(level=LEVEL)],
        }
        if system == "zarr per-step shards":
            encoding["shards"] = (1, side, side)
        ds.to_zarr(path, mode="w", encoding={"v": encoding}, zarr_format=3, consolidated=True)
    else:
        import hdf5plugin

        encoding = {"chunksizes": (1, tile, tile), **hdf5plugin.Zstd(clevel=LEVEL)}
        ds.to_netcdf(path, engine="h5netcdf", encoding={"v": encoding})


def suffix(system: str) -> str:
    if system.startswith("zarr"):
        return ".zarr"
    return ".nc" if system == "h5netcdf" else ".hurray"


def file_name(system: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in system) + suffix(system)


def opener(system: str, target: str) -> Callable[[], xr.Dataset]:
    """A fresh open of ``target`` as ``system`` opens it."""
    if system.startswith("zarr"):
        options = {"skip_instance_cache": True} if target.startswith("http") else None
        return lambda: xr.open_dataset(
            target, engine="zarr", consolidated=True, storage_options=options
        )
    if system == "h5netcdf":
        import hdf5plugin  # noqa: F401  (registers the zstd filter)

        return lambda: xr.open_dataset(target, engine="h5netcdf")
    return lambda: xr.open_dataset(target, engine="hurray")


def patterns(steps: int, side: int) -> dict[str, dict[str, Any]]:
    """Each pattern's ``isel`` of ``v``."""
    tile, mid = min(TILE, side), side // 2
    box = min(2 * tile, side // 2)
    off = tile // 3
    return {
        "map step": {"time": steps // 2},
        "tile": {"time": steps // 2, "y": slice(mid, mid + tile), "x": slice(mid - tile, mid)},
        "window": {
            "y": slice(mid - box // 2 + off, mid + box // 2 + off),
            "x": slice(mid - box // 2 - off, mid + box // 2 - off),
        },
        "pixel drill": {"y": mid + off, "x": mid - off},
        "bulk": {},
    }


def own_bytes(path: Path, key: dict[str, Any], shape: tuple[int, ...]) -> int:
    """The stored bytes of the chunks of the Hurray file ``path`` that ``key`` touches."""
    from xarray_hurray.container.select import OuterSelection

    reader = open_reader(path)
    var = reader.variable("v")
    full = tuple(key.get(d, slice(None)) for d in var.dims)
    ids = OuterSelection.build(full, shape, var.chunks).chunk_ids()
    return int(reader.entries("v", ids)["size"].astype(np.int64).sum())


def warm(path: Path) -> None:
    """Read every byte of the file or store at ``path``, so that a local read of it
    finds them in the page cache (a file written long before may have left it)."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for name in files:
        with open(name, "rb") as file:
            while file.read(8 * 2**20):
                pass


def floor_reader(path: Path) -> Callable[[], float]:
    """The decode-and-place floor of a whole read of ``v`` in the Hurray file ``path``:
    seconds for every stored chunk (read beforehand) to be decompressed into a buffer
    of the thread's and copied to its place in a new array, and every missing chunk's
    place filled with the fill, on every CPU."""
    import zstandard

    reader = open_reader(path)
    var = reader.variable("v")
    entries = reader.index("v")
    grid = var.grid_shape
    items = []
    with open(path, "rb") as file:
        for chunk_id in range(math.prod(grid)):
            corner = np.unravel_index(chunk_id, grid)
            box = tuple(
                slice(int(i) * c, min((int(i) + 1) * c, n))
                for i, c, n in zip(corner, var.chunks, var.shape, strict=True)
            )
            size = int(entries["size"][chunk_id])
            frame = (
                os.pread(file.fileno(), size, int(entries["offset"][chunk_id])) if size else None
            )
            items.append((frame, box))
    local = threading.local()

    def place(result: np.ndarray, item: tuple[bytes | None, tuple[slice, ...]]) -> None:
        frame, box = item
        if frame is None:
            result[box] = np.nan
            return
        if not hasattr(local, "buffer"):
            local.d = zstandard.ZstdDecompressor()
            local.buffer = np.empty(math.prod(var.chunks) * 4, dtype=np.uint8)
        size = local.d.stream_reader(frame, read_across_frames=False).readinto(local.buffer)
        chunk = local.buffer[:size].view(np.float32).reshape(var.chunks)
        block = result[box]
        block[...] = chunk[tuple(slice(0, n) for n in block.shape)]

    def placed() -> float:
        result = np.empty(var.shape, dtype=np.float32)
        return on_every_thread(os.cpu_count() or 1, items, lambda item: place(result, item))

    return placed


def measure(
    system: str, target: str, key: dict[str, Any], server: LatencyServer | None
) -> dict[str, float]:
    """One fresh open and read of ``key``: wall time, and over ``server`` the requests,
    bytes and waves of the open and of the read."""
    if server is not None:
        server.reset()
    start = time.perf_counter()
    ds = opener(system, target)()
    opened = time.perf_counter()
    values = ds.v.isel(key).values
    done = time.perf_counter()
    ds.close()
    return timed(server, start, opened, done, float(np.nansum(values, dtype=np.float64)))


def timed(
    server: LatencyServer | None, start: float, opened: float, done: float, checksum: float
) -> dict:
    """A read's times (``time.perf_counter()`` at its start, once opened and when done)
    and, over ``server``, the requests, waves and bytes of its open and of its read."""
    out = {"ms": 1000 * (done - start), "read ms": 1000 * (done - opened)}
    if server is not None:
        time.sleep(server.latency)  # every request answered
        log = server.log
        for part, (a, b) in (("open", (start, opened)), ("read", (opened, done))):
            inside = [entry for entry in log if a <= entry[0] <= b]
            out[f"{part} requests"] = len(inside)
            out[f"{part} waves"] = waves([entry[0] for entry in inside], server.latency)
            out[f"{part} bytes"] = sum(entry[2] for entry in inside)
    out["checksum"] = checksum
    return out


CHILD = """
import json, sys, time, warnings
import numpy as np
import xarray as xr
import xarray_hurray
warnings.simplefilter("ignore")
target = sys.argv[1]
key = {d: slice(*v) if isinstance(v, list) else v for d, v in json.loads(sys.argv[2]).items()}
xr.open_dataset(target, engine="hurray").close()  # xarray's engines found, connections made
start = time.perf_counter()
ds = xr.open_dataset(target, engine="hurray")
opened = time.perf_counter()
values = ds.v.isel(key).values
done = time.perf_counter()
print(json.dumps([start, opened, done, float(np.nansum(values, dtype=np.float64))]))
"""
"""A fresh process's open and read of one pattern, with the package of its path (after
an untimed open, as :func:`measure`'s process has opened each file before)."""


def measure_child(
    checkout: str | None, target: str, key: dict[str, Any], server: LatencyServer | None
) -> dict[str, float]:
    """:func:`measure` in a fresh process importing the package from ``checkout`` (None:
    this one), its imports left out of the times."""
    if server is not None:
        server.reset()
    env = dict(os.environ)
    package = checkout or str(Path(xh.__file__).parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package, env.get("PYTHONPATH")]))
    plain = {d: [k.start, k.stop] if isinstance(k, slice) else k for d, k in key.items()}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, target, json.dumps(plain)],
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode:
        raise RuntimeError(f"a reading child failed:\n{done.stderr}")
    start, opened, finished, checksum = json.loads(done.stdout.strip().splitlines()[-1])
    return timed(server, start, opened, finished, checksum)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=48)
    parser.add_argument("--side", type=int, default=2048)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--candidates", action="store_true", help="the layouts of the choice")
    parser.add_argument("--patterns", help="the patterns to read, comma-separated (all)")
    parser.add_argument("--places", default="local,remote", help="local, remote or both")
    parser.add_argument(
        "--against",
        metavar="CHECKOUT",
        help="also read the default file with the package of another checkout (a fresh "
        "process per read, as this checkout's reads are then too)",
    )
    parser.add_argument("--quick", action="store_true", help="small, for the smoke test")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.side, args.runs = 6, 512, 1
    systems = [DEFAULT, *(CANDIDATES if args.candidates else PEERS)]
    if args.against:
        systems = [THIS, OTHER]
    keys = patterns(args.steps, args.side)
    if args.patterns:
        keys = {name: keys[name] for name in args.patterns.split(",")}
    places = args.places.split(",")
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        root = Path(tmp)
        ds = cube(args.steps, args.side)
        for system in systems:
            if system not in (THIS, OTHER):
                write(system, ds, root / file_name(system))
        if args.against:
            write(DEFAULT, ds, root / file_name(DEFAULT))
        shape = ds.v.shape
        del ds
        default_path = root / file_name(DEFAULT)
        needed = {name: own_bytes(default_path, key, shape) for name, key in keys.items()}
        floor = floor_reader(default_path) if "bulk" in keys and "local" in places else None
        floors: list[float] = []
        found: dict[tuple[str, str, str], list[dict[str, float]]] = {}
        loads = []
        with LatencyServer(root, latency=args.latency) as server:
            where = {p: on for p, on in (("local", None), ("remote", server)) if p in places}
            for system in systems:  # imports and connections before any timing
                if system not in ("h5netcdf", THIS, OTHER):
                    opener(system, server.url(file_name(system)))().close()
            for run in range(args.runs):
                # taking turns, each round starting with the next system: no system is
                # always the first after a change of pattern
                order = systems[run % len(systems) :] + systems[: run % len(systems)]
                for name, key in keys.items():
                    for place, on in where.items():
                        for system in order:
                            if system == "h5netcdf" and on is not None:
                                continue  # h5netcdf reads local files here
                            name_of = file_name(DEFAULT if system in (THIS, OTHER) else system)
                            path = root / name_of
                            if on is None:
                                warm(path)
                            target = str(path) if on is None else on.url(name_of)
                            if system in (THIS, OTHER):
                                checkout = args.against if system == OTHER else None
                                got = measure_child(checkout, target, key, on)
                            else:
                                got = measure(system, target, key, on)
                            found.setdefault((name, place, system), []).append(got)
                    if floor is not None and name == "bulk":
                        floors.append(floor())
                loads.append(os.getloadavg()[0])
        # every system read the same values
        for (name, _, system), runs in found.items():
            reference = found[name, places[0], systems[0]][0]["checksum"]
            assert math.isclose(runs[0]["checksum"], reference, rel_tol=1e-6), (name, system)
    report(args, systems, keys, needed, found, floors, shape, loads)


def report(
    args: argparse.Namespace,
    systems: list[str],
    keys: dict[str, Any],
    needed: dict[str, int],
    found: dict[tuple[str, str, str], list[dict[str, float]]],
    floors: list[float],
    shape: tuple[int, ...],
    loads: list[float],
) -> None:
    """Print the tables."""
    print(
        f"cube {shape} float32, zstd {LEVEL}; latency {1000 * args.latency:.0f} ms; "
        f"{args.runs} runs, median wall time (best); load average "
        f"{min(loads):.2f}-{max(loads):.2f} over the runs\n"
    )
    print(
        "| pattern | system | open + read waves | read requests | read waves "
        "| MB fetched | / own bytes | ms remote | / first row's | ms local | / first row's |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")

    def median_ms(name: str, place: str, system: str) -> float | None:
        runs = found.get((name, place, system))
        return None if runs is None else statistics.median(r["ms"] for r in runs)

    for name in keys:
        for system in systems:
            cells = [name, system]
            remote = found.get((name, "remote", system))
            if remote is None:
                cells += ["", "", "", "", ""]
            else:
                last = remote[-1]
                cells += [
                    f"{last['open waves'] + last['read waves']:.0f}",
                    f"{last['read requests']:.0f}",
                    f"{last['read waves']:.0f}",
                    f"{last['read bytes'] / 1e6:.1f}",
                    f"{last['read bytes'] / needed[name]:.2f}",
                ]
            for place in ("remote", "local"):
                ms, base = median_ms(name, place, system), median_ms(name, place, systems[0])
                if ms is None or base is None:
                    cells += ["", ""]
                else:
                    best = min(r["ms"] for r in found[name, place, system])
                    cells += [f"{ms:.0f} ({best:.0f})", f"{ms / base:.2f}"]
            print("| " + " | ".join(cells) + " |")
    if not floors:
        return
    raw = math.prod(shape) * 4 / 2**20
    bulk = statistics.median(r["read ms"] for r in found["bulk", "local", systems[0]]) / 1000
    floor = statistics.median(floors)
    print(
        f"\nBulk, local, numpy path: the default file read at {raw / bulk:.0f} MiB/s (median "
        f"read, the open left out); its decode-and-place floor, measured in each round, "
        f"{raw / floor:.0f} MiB/s (median; best {raw / min(floors):.0f}): the read at "
        f"{floor / bulk:.2f} of the floor's speed."
    )
    for system in systems[1:]:
        if ("bulk", "local", system) in found:
            other = statistics.median(r["read ms"] for r in found["bulk", "local", system]) / 1000
            print(f"- {system}: {raw / other:.0f} MiB/s; default's speed / its: {other / bulk:.2f}")


if __name__ == "__main__":
    main()
