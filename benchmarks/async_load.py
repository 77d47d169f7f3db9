"""Loading several variables over HTTP: ``Dataset.load`` against ``Dataset.load_async``.

Run ``python benchmarks/async_load.py`` (``--quick`` for a small run); it prints
Markdown.  A Hurray file of ``--variables`` float32 variables is served by the
latency-injecting HTTP server of ``latency_server.py`` on 127.0.0.1 (every request
waits ``--latency`` seconds; all responses share ``--bandwidth`` bytes per second).
Each run opens the file afresh with ``engine="hurray"`` and loads either every
variable whole or one region of each, with ``load()`` (variables one after the
other) or ``await load_async()`` (all variables awaited together); the best of
``--repeats`` runs is reported, with the requests the server answered.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr
from latency_server import LatencyServer

import xarray_hurray as xh


def dataset(variables: int, side: int) -> xr.Dataset:
    """``variables`` smooth float32 fields of ``side`` x ``side``."""
    y, x = np.mgrid[0:side, 0:side] / side
    return xr.Dataset(
        {
            f"v{i}": (("y", "x"), (np.sin((6 + i) * x) * np.cos(4 * y)).astype("f4"))
            for i in range(variables)
        }
    )


def timed(
    server: LatencyServer, url: str, pick: Callable[[xr.Dataset], xr.Dataset], use_async: bool
) -> tuple[float, int, xr.Dataset]:
    """Seconds and requests of opening ``url`` and loading ``pick`` of it."""
    server.reset()
    start = time.perf_counter()
    with xr.open_dataset(url, engine="hurray") as opened:
        part = pick(opened)
        loaded = asyncio.run(part.load_async()) if use_async else part.load()
    return time.perf_counter() - start, server.requests, loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--variables", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.050, help="seconds per request")
    parser.add_argument("--bandwidth", type=float, default=100e6, help="bytes per second")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    side, chunk = (256, 64) if args.quick else (2048, 256)
    ds = dataset(args.variables, side)
    work = Path(tempfile.mkdtemp(prefix="hurray-async-"))
    try:
        run(args, ds, work, side, chunk)
    finally:
        shutil.rmtree(work)


def run(args: argparse.Namespace, ds: xr.Dataset, work: Path, side: int, chunk: int) -> None:
    """Write the file into ``work``, serve it and print the table."""
    path = work / "data.hurray"
    xh.to_hurray(ds, path, encoding={name: {"chunks": (chunk, chunk)} for name in ds.data_vars})
    box = {"y": slice(side // 3, side // 3 + 2 * chunk), "x": slice(side // 5, side // 5 + chunk)}
    workloads: dict[str, Callable[[xr.Dataset], xr.Dataset]] = {
        "every variable whole": lambda d: d,
        "a region of every variable": lambda d: d.isel(box),
    }
    print(
        f"Python {platform.python_version()}, xarray {xr.__version__}; {args.variables} "
        f"float32 variables of {side} x {side}, chunks {chunk} x {chunk}, zstd "
        f"({path.stat().st_size / 1e6:.1f} MB); HTTP on 127.0.0.1 with "
        f"{1e3 * args.latency:.0f} ms per request and {args.bandwidth / 1e6:.0f} MB/s "
        f"shared; best of {args.repeats}, opening included\n"
    )
    print("| workload | load s | load_async s | speedup | requests (load, async) |")
    print("|---|---:|---:|---:|---|")
    with LatencyServer(work, latency=args.latency, bandwidth=args.bandwidth) as server:
        url = server.url(path.name)
        for label, pick in workloads.items():
            expected = pick(ds)
            best = {}
            for use_async in (False, True):
                runs = []
                for _ in range(args.repeats):
                    seconds, requests, loaded = timed(server, url, pick, use_async)
                    xr.testing.assert_identical(loaded, expected)
                    runs.append((seconds, requests))
                best[use_async] = min(runs)
            (sync_s, sync_n), (async_s, async_n) = best[False], best[True]
            print(
                f"| {label} | {sync_s:.3f} | {async_s:.3f} | {sync_s / async_s:.2f}x "
                f"| {sync_n}, {async_n} |"
            )


if __name__ == "__main__":
    main()
