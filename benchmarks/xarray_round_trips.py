"""Requests and round trips of opens and tiles through xarray, Hurray against Zarr.

The same data is written as a Hurray file and as a consolidated Zarr v3 store, and
served by :class:`latency_server.LatencyServer`, which waits ``--latency`` seconds
(50 ms by default) before answering each request (``TCP_NODELAY`` on).  Each step
runs in this process, through xarray: ``engine="hurray"`` on the file's URL, and
``engine="zarr"`` (consolidated, fsspec's HTTP file system) on the store's URL:

- *open (time, y, x)*: ``open_dataset`` of a field with time, y and x coordinates;
- *open_datatree pyramid*: ``open_datatree`` of a pyramid of 6 levels;
- *open_datatree / open_groups, tree of groups*: a tree of ``--groups`` (100)
  small groups, each with its own coordinates;
- *tile, level k*: a fresh ``open_datatree`` of the pyramid, then a tile of
  ``TILE`` squared of level ``k`` (``.isel(...).values``);
- *open + pan of 16 tiles*: a fresh ``open_dataset`` of level 0, then 16 tiles side
  by side along x, one after another.

Each step is reported as the requests the server answered, the waves of requests
(a request arriving more than half a latency after the first of its wave starts a
new one: the round trips that depend on each other) and the wall time in latencies
(what the user waits, Python's own time included).  ``--runs`` repeats every step
and reports the median wall time.  Targets (issue 39): an open through xarray in at
most 2 requests and 1 round trip; a tile of every level from a fresh open in 2.

Usage::

    python benchmarks/xarray_round_trips.py             # 50 ms, 3 runs
    python benchmarks/xarray_round_trips.py --quick     # small, for the smoke test
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
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

import xarray_hurray as xh

FACTORS = [2, 4, 8, 16, 32]
"""The pyramid's coarser levels: with level 0, 6 levels."""


def cube(steps: int, side: int) -> xr.Dataset:
    """A (time, y, x) float32 field with its coordinates."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:side, 0:side] / side
    base = (np.sin(6 * x) * np.cos(4 * y)).astype("f4")
    values = base[None] + 0.05 * rng.standard_normal((steps, side, side)).astype("f4")
    return xr.Dataset(
        {"v": (("time", "y", "x"), values)},
        coords={
            "time": pd.date_range("2020-01-01", periods=steps, freq="D"),
            "y": np.linspace(60.0, 40.0, side),
            "x": np.linspace(-10.0, 10.0, side),
        },
    )


def many_groups(count: int) -> xr.DataTree:
    """``count`` groups, each a small field on coordinates of its own."""
    groups = {}
    for k in range(count):
        ds = cube(2, 16).isel(time=0, drop=True)
        groups[f"/g{k:03d}"] = ds.assign_coords(x=ds.x + k).rename(x=f"x{k}", y=f"y{k}")
    return xr.DataTree.from_dict(groups)


def write_all(root: Path, side: int, tile: int, steps: int, group_count: int) -> list[str]:
    """The three datasets as Hurray files and Zarr stores under ``root``; the pyramid's
    level names."""
    enc = {"v": {"chunks": (1, tile, tile)}}
    field = cube(steps, side)
    xh.to_hurray(field, root / "cube.hurray", encoding=enc)
    field.to_zarr(root / "cube.zarr", encoding=enc, consolidated=True, zarr_format=3)
    flat = field.isel(time=0, drop=True)
    xh.to_hurray(
        flat, root / "pyramid.hurray", overviews=FACTORS, encoding={"v": {"chunks": (tile, tile)}}
    )
    with xr.open_datatree(root / "pyramid.hurray", engine="hurray") as pyramid:
        levels = list(pyramid.children)
        loaded = pyramid.load()
    level_enc = {f"/{level}": {"v": {"chunks": (tile, tile)}} for level in levels}
    loaded.to_zarr(root / "pyramid.zarr", encoding=level_enc, consolidated=True, zarr_format=3)
    tree = many_groups(group_count)
    xh.to_hurray(tree, root / "groups.hurray")
    tree.to_zarr(root / "groups.zarr", consolidated=True, zarr_format=3)
    return levels


def opener(engine: str, server: LatencyServer) -> Callable[[str, str], Any]:
    """``open(kind, name)``: the dataset, tree or groups of the file or store ``name``
    through ``engine``, with a file system of its own for Zarr."""

    def open_(kind: str, name: str) -> Any:
        suffix = "hurray" if engine == "hurray" else "zarr"
        url = server.url(f"{name}.{suffix}")
        kwargs: dict[str, Any] = {"engine": engine}
        if engine == "zarr":
            kwargs |= {"consolidated": True, "storage_options": {"skip_instance_cache": True}}
        if kind == "dataset":
            return xr.open_dataset(url, **kwargs)
        if kind == "tree":
            return xr.open_datatree(url, **kwargs)
        return xr.open_groups(url, **kwargs)

    return open_


def steps(levels: list[str], side: int, tile: int) -> dict[str, Callable[[Any], Any]]:
    """Every step, each given an opener."""

    def tile_of(level: str) -> Callable[[Any], Any]:
        def run(open_: Any) -> np.ndarray:
            v = open_("tree", "pyramid")[level].ds.v
            y0 = max(v.shape[0] // 2 - tile // 2, 0)
            return v.isel(y=slice(y0, y0 + tile), x=slice(0, tile)).values

        return run

    def pan(open_: Any) -> list[np.ndarray]:
        v = open_("tree", "pyramid")[levels[0]].ds.v
        y0 = side // 2 - tile // 2
        count = min(16, side // tile)
        return [
            v.isel(y=slice(y0, y0 + tile), x=slice(k * tile, (k + 1) * tile)).values
            for k in range(count)
        ]

    out: dict[str, Callable[[Any], Any]] = {
        "open (time, y, x)": lambda o: o("dataset", "cube"),
        "open_datatree pyramid (6 levels)": lambda o: o("tree", "pyramid"),
        "open_datatree, tree of groups": lambda o: o("tree", "groups"),
        "open_groups, tree of groups": lambda o: o("groups", "groups"),
    }
    for k, level in enumerate(levels):
        out[f"fresh open + tile, level {k}"] = tile_of(level)
    out["fresh open + pan of 16 tiles"] = pan
    return out


def measure(server: LatencyServer, step: Callable[[Any], Any], open_: Any) -> dict[str, float]:
    """Requests, waves and wall time (in latencies) of one run of ``step``."""
    server.reset()
    start = time.perf_counter()
    step(open_)
    wall = time.perf_counter() - start
    time.sleep(server.latency)  # any late request is counted
    return {
        "requests": server.requests,
        "waves": waves(server.arrivals, server.latency),
        "trips": wall / server.latency,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--runs", type=int, default=3, help="runs of each step (median)")
    parser.add_argument("--groups", type=int, default=100, help="groups of the tree")
    parser.add_argument("--quick", action="store_true", help="small data, one run")
    args = parser.parse_args()
    side, tile, steps_n = (512, 64, 4) if args.quick else (4096, 256, 24)
    count = args.groups
    runs = 1 if args.quick else args.runs
    warnings.simplefilter("ignore")  # zarr's notes on consolidated metadata
    with tempfile.TemporaryDirectory() as where:
        root = Path(where)
        levels = write_all(root, side, tile, steps_n, count)
        rows = []
        with LatencyServer(root, latency=args.latency) as server:
            for engine in ("hurray", "zarr"):  # imports and connections before timing
                opener(engine, server)("dataset", "cube")
            for name, step in steps(levels, side, tile).items():
                found: dict[str, list[dict[str, float]]] = {"hurray": [], "zarr": []}
                for _ in range(runs):
                    for engine in found:  # interleaved
                        found[engine].append(measure(server, step, opener(engine, server)))
                rows.append((name, found))
    load = os.getloadavg()
    print(
        f"latency {args.latency * 1000:.0f} ms, {runs} run(s), median wall time, "
        f"{count} groups in the tree; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n"
    )
    print("| step | hurray requests | waves | round trips | zarr requests | waves | round trips |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, found in rows:
        cells = []
        for engine in ("hurray", "zarr"):
            last = found[engine][-1]
            trips = statistics.median(r["trips"] for r in found[engine])
            cells += [f"{last['requests']:.0f}", f"{last['waves']:.0f}", f"{trips:.1f}"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
