"""How opening a file and reading one region scale with the number of chunks.

Run ``python benchmarks/index_scale.py`` (``--quick`` for the two smallest sizes); it
prints Markdown.

For files of about 10^3, 10^4, 10^5 and 10^6 chunks of 8 x 8 float32, mostly the
fill value (NaN) with about 1% of the chunks holding data, scattered, and a few
inside the region read: the write time, the file size, and the requests and bytes
of opening the file plus reading one 100 x 100 region, counted by a request-logging
byte source.  The same for an all-fill variable of 10^6 chunks.  The peer is a
sharded Zarr store (format 3, shards of 32 x 32 chunks, empty chunks not written) of
the same data, opened with xarray and read through a request-logging store.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import zarr

import xarray_hurray as xh
from xarray_hurray.io import LocalFileSource
from xarray_hurray.testing import CountingSource, CountingStore

CHUNK = 8
"""Chunk side: 64 float32 elements, 256 bytes, per chunk."""

SHARD = 32 * CHUNK
"""Zarr shard side: 32 x 32 chunks per shard."""

REGION = (slice(1000, 1100), slice(2000, 2100))
"""The region read: 100 x 100 elements, about 13 x 13 chunks."""

GRID_SIDES = (32, 100, 317, 1000)
"""Chunk grids of about 10^3, 10^4, 10^5 and 10^6 chunks."""


def dataset(grid_side: int, fill_only: bool = False) -> xr.Dataset:
    """A NaN field of ``grid_side`` squared chunks, about 1% of them filled with data,
    scattered, and some under :data:`REGION` where the field reaches it."""
    side = grid_side * CHUNK
    values = np.full((side, side), np.nan, dtype="f4")
    if not fill_only:
        rng = np.random.default_rng(grid_side)
        count = max(grid_side * grid_side // 100, 1)
        rows = rng.integers(0, grid_side, count)
        cols = rng.integers(0, grid_side, count)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            values[r * CHUNK : (r + 1) * CHUNK, c * CHUNK : (c + 1) * CHUNK] = rng.random(
                (CHUNK, CHUNK), dtype="f4"
            )
        values[1020:1030, 2040:2090] = 1.0  # real chunks inside the region, if it is there
    return xr.Dataset({"v": (("y", "x"), values)})


def region(side: int) -> tuple[slice, slice]:
    """:data:`REGION`, moved inside an array of ``side`` elements where needed."""
    return tuple(slice(min(s.start, side - 100), min(s.start, side - 100) + 100) for s in REGION)  # type: ignore[return-value]


def hurray_costs(path: Path, key: tuple[slice, slice], expected: np.ndarray) -> dict[str, Any]:
    """Requests and bytes of opening ``path`` with xarray and reading ``key``.  Bytes
    are those served: the first read asks for 64 KiB, and a smaller file returns less."""
    size = path.stat().st_size
    source = CountingSource(LocalFileSource(path))
    ds = xr.open_dataset(source, engine="hurray")
    opened = len(source.requests)
    got = ds["v"][key].values
    np.testing.assert_array_equal(got, expected)
    served = [min(stop, size) - start for start, stop in source.requests]
    return {
        "open_requests": opened,
        "open_bytes": sum(served[:opened]),
        "read_requests": len(served) - opened,
        "read_bytes": sum(served[opened:]),
        # the requests of one call go out together: one round trip per call
        "round_trips": len(source.batches),
        "requests": [(start, min(stop, size)) for start, stop in source.requests],
    }


def peak_mib(path: Path, key: tuple[slice, slice], whole_order: bool) -> float:
    """Peak memory (MiB, numpy's allocations included) of opening ``path`` and reading
    ``key`` with the container reader; with ``whole_order``, as the reader did before
    it placed a region's chunks directly: the placement order and its inverse
    computed for the whole grid."""
    tracemalloc.start()
    try:
        reader = xh.open_reader(path)
        if whole_order:
            _ = reader.variable("v").position
        reader.read("v", key)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def over_http(path: Path, key: tuple[slice, slice], latency: float) -> tuple[float, int]:
    """Opening ``path`` over HTTP and reading ``key``, served by
    :class:`latency_server.LatencyServer` with ``latency`` seconds before each
    response: the best of 3 wall times, and the round trips on the wire (waves of
    requests: a request arriving more than ``latency / 2`` after the first of its
    wave waited for an answer, so starts the next wave)."""
    from latency_server import LatencyServer

    best, waves = float("inf"), 0
    with LatencyServer(path.parent, latency=latency) as server:
        url = server.url(path.name)
        xr.open_dataset(url, engine="hurray").close()  # warm the HTTP client up
        for _ in range(3):
            server.reset()
            start = time.perf_counter()
            with xr.open_dataset(url, engine="hurray") as ds:
                ds["v"][key].load()
            best = min(best, time.perf_counter() - start)
            first = -float("inf")
            waves = 0
            for arrival in server.arrivals:
                if arrival - first > latency / 2:
                    waves, first = waves + 1, arrival
    return best, waves


def zarr_costs(path: Path, key: tuple[slice, slice], expected: np.ndarray) -> dict[str, int]:
    """Requests and bytes of opening the Zarr store ``path`` with xarray and reading
    ``key``."""
    store = CountingStore(zarr.storage.LocalStore(path, read_only=True))
    ds = xr.open_dataset(store, engine="zarr", consolidated=True, chunks=None)
    opened = (store.log.requests, store.log.bytes_read)
    got = ds["v"][key].values
    np.testing.assert_array_equal(got, expected)
    return {
        "open_requests": opened[0],
        "open_bytes": opened[1],
        "read_requests": store.log.requests - opened[0],
        "read_bytes": store.log.bytes_read - opened[1],
    }


def write_zarr(ds: xr.Dataset, path: Path) -> None:
    encoding = {"v": {"chunks": (CHUNK, CHUNK), "shards": (SHARD, SHARD)}}
    ds.to_zarr(path, mode="w", zarr_format=3, encoding=encoding, consolidated=True)


def timed(fn: Callable[[], object]) -> float:
    """Wall time of one call of ``fn``, in seconds (a write is measured once)."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def random_regions(
    path: Path, values: np.ndarray, count: int, seed: int
) -> tuple[list[int], list[int]]:
    """Requests and bytes of opening ``path`` and reading each of ``count`` random
    100 x 100 regions (seeded), each through a fresh open."""
    rng = np.random.default_rng(seed)
    requests, sizes = [], []
    for _ in range(count):
        y, x = (int(rng.integers(0, n - 99)) for n in values.shape)
        key = (slice(y, y + 100), slice(x, x + 100))
        costs = hurray_costs(path, key, values[key])
        requests.append(costs["open_requests"] + costs["read_requests"])
        sizes.append(costs["open_bytes"] + costs["read_bytes"])
    return requests, sizes


def spread(label: str, requests: list[int], sizes: list[int]) -> str:
    """A table row of :func:`random_regions`' figures."""
    counts = np.bincount(requests)
    shares = ", ".join(f"{n}: {c}" for n, c in enumerate(counts.tolist()) if c)
    return (
        f"| {label} | {min(requests)} | {int(np.median(requests))} | {max(requests)} "
        f"| {shares} | {kib(max(sizes))} |"
    )


def kib(n: int) -> str:
    return f"{n / 1024:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the two smallest sizes")
    parser.add_argument("--no-zarr", action="store_true", help="skip the Zarr peer")
    parser.add_argument(
        "--zarr-max-chunks",
        type=int,
        default=10**6,
        help="measure the Zarr peer only up to this many chunks (its write is slow)",
    )
    parser.add_argument("--max-chunks", type=int, default=10**6, help="largest file measured")
    parser.add_argument(
        "--show-requests",
        action="store_true",
        help="after the table, the byte ranges each open+read requested, per file",
    )
    parser.add_argument(
        "--random-regions",
        type=int,
        default=0,
        help="after the table, open+read requests of this many random 100 x 100 regions "
        "per file (0: not measured)",
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=0.0,
        help="also time open+read over HTTP from a local server adding this many seconds "
        "per request (0: not measured)",
    )
    args = parser.parse_args()
    sides = [s for s in (GRID_SIDES[:2] if args.quick else GRID_SIDES) if s * s <= args.max_chunks]
    work = Path(tempfile.mkdtemp(prefix="index-scale-"))
    print(f"zarr {zarr.__version__}, xarray {xr.__version__}, numpy {np.__version__}\n")
    http = (
        f" | HTTP s ({args.latency * 1000:g} ms/request) | HTTP round trips" if args.latency else ""
    )
    print(
        "| chunks | stored | file KiB | write s | open+read requests | open+read KiB "
        f"| (open / read requests) | round trips | read peak MiB (whole order){http} "
        "| zarr requests | zarr KiB | zarr write s |"
    )
    print(
        "|---:|---:|---:|---:|---:|---:|---|---:|---:|"
        + ("---:|---:|" if http else "")
        + "---:|---:|---:|"
    )
    cases = [(side, False) for side in sides] + [(sides[-1], True)]
    shown: list[str] = []
    spreads: list[str] = []
    try:
        for side, fill_only in cases:
            ds = dataset(side, fill_only)
            key = region(side * CHUNK)
            expected = ds["v"].values[key]
            path = work / f"{side}.hurray"
            encoding = {"v": {"chunks": (CHUNK, CHUNK)}}
            seconds = timed(partial(xh.to_hurray, ds, path, encoding=encoding))
            stored = int(np.count_nonzero(xh.open_reader(path).index("v")["size"]))
            ours = hurray_costs(path, key, expected)
            row = [
                f"{side * side:,}" + (" (all fill)" if fill_only else ""),
                f"{stored:,}",
                kib(path.stat().st_size),
                f"{seconds:.2f}",
                str(ours["open_requests"] + ours["read_requests"]),
                kib(ours["open_bytes"] + ours["read_bytes"]),
                f"{ours['open_requests']} / {ours['read_requests']}",
                str(ours["round_trips"]),
            ]
            peak_mib(path, key, False)  # caches filled once, outside the measure
            row.append(f"{peak_mib(path, key, False):.1f} ({peak_mib(path, key, True):.1f})")
            if args.latency:
                seconds_http, waves = over_http(path, key, args.latency)
                row += [f"{seconds_http:.3f}", str(waves)]
            if args.random_regions and not fill_only:
                counts = random_regions(path, ds["v"].values, args.random_regions, side)
                spreads.append(spread(row[0], *counts))
            ranges = ", ".join(f"[{a}, {b})" for a, b in ours["requests"])
            shown.append(f"- {row[0]} chunks: {ranges}")
            if args.no_zarr or side * side > args.zarr_max_chunks:
                row += ["n/a"] * 3
            else:
                store = work / f"{side}.zarr"
                zarr_seconds = timed(partial(write_zarr, ds, store))
                peer = zarr_costs(store, key, expected)
                row += [
                    str(peer["open_requests"] + peer["read_requests"]),
                    kib(peer["open_bytes"] + peer["read_bytes"]),
                    f"{zarr_seconds:.2f}",
                ]
                shutil.rmtree(store)
            path.unlink()
            print("| " + " | ".join(row) + " |", flush=True)
        if args.show_requests:
            print("\nByte ranges requested by open+read:\n")
            print("\n".join(shown))
        if spreads:
            print(f"\nOpen+read of {args.random_regions} random 100 x 100 regions per file:\n")
            print("| file | fewest requests | median | most | requests: regions | max KiB |")
            print("|---|---:|---:|---:|---|---:|")
            print("\n".join(spreads))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
