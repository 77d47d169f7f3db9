"""Round trips per open and per region read over a real socket, against the limit.

One smooth float32 field is stored with the same chunks and codec (zstd, level 0) as
a Hurray file (Hilbert chunk order) and as Zarr v3 arrays, unsharded and sharded.
The files are served by :class:`latency_server.LatencyServer`, which waits
``--latency`` seconds before answering each request and sends all response bodies
over one link of ``--bandwidth`` bytes per second.  Each reader runs in its own
process (its library and fsspec's HTTP file system imported before any timing):

- *first open*: the first open of the file in that process, the fsspec file system
  and its connection made then; *next open*: opening it again;
- *region reads*: a fixed set of unaligned boxes read from the open array.

Each step is reported in round trips (wall time / latency), next to its limit: one
round trip plus the bytes the reader fetched over the bandwidth.  Requests and bytes
are counted by the server.  ``--python`` runs the Zarr readers again with another
interpreter (for instance one with the newest zarr-python; it needs zarr, fsspec,
aiohttp and numpy).

Usage::

    python benchmarks/round_trips.py                     # 50 ms, 50 MB/s
    python benchmarks/round_trips.py --python /path/to/venv/bin/python
    python benchmarks/round_trips.py --quick             # small, for the smoke test
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

SIDE, CHUNK, SHARD = 2048, 128, 1024
QUICK_SIDE, QUICK_CHUNK, QUICK_SHARD = 256, 32, 128


def boxes(side: int) -> dict[str, tuple[int, int, int, int]]:
    """Unaligned boxes ``(y0, y1, x0, x1)``: three squares and a strip."""
    s = side // 16
    return {
        f"{s}x{s}": (3 * s + 5, 4 * s + 5, 5 * s + 3, 6 * s + 3),
        f"{4 * s}x{4 * s}": (2 * s + 7, 6 * s + 7, 7 * s + 1, 11 * s + 1),
        f"{10 * s}x{10 * s}": (s + 3, 11 * s + 3, 4 * s + 9, 14 * s + 9),
        f"{s}x{side} (strip)": (9 * s + 2, 10 * s + 2, 0, side),
    }


def field(side: int) -> np.ndarray:
    """A smooth field with a little noise: compressible, but not trivially."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:side, 0:side] / side
    values = np.sin(6 * x) * np.cos(4 * y) + 0.05 * rng.standard_normal((side, side))
    return values.astype("f4")


def write_files(root: Path, values: np.ndarray, chunk: int, shard: int) -> None:
    """The Hurray file and the two Zarr arrays, with the same chunks and codec."""
    import xarray as xr
    import zarr
    from zarr.codecs import ZstdCodec

    import xarray_hurray as xh

    ds = xr.Dataset({"v": (("y", "x"), values)})
    codec = {"id": "zstd", "level": 0}
    xh.to_hurray(
        ds, root / "field.hurray", encoding={"v": {"chunks": (chunk, chunk)}}, codecs=codec
    )
    for name, shards in (("unsharded", None), ("sharded", (shard, shard))):
        array = zarr.create_array(
            store=str(root / f"{name}.zarr"),
            shape=values.shape,
            dtype=values.dtype,
            chunks=(chunk, chunk),
            shards=shards,
            compressors=[ZstdCodec(level=0)],
            zarr_format=3,
        )
        array[...] = values


# ---- the reading process -------------------------------------------------------------


def child(kind: str, url: str, box_list: list[list[int]]) -> None:
    """Time the steps of one reader; print the zarr version and ``[name, start, stop]``
    per step as JSON."""
    import fsspec.implementations.http  # noqa: F401  (imports are not round trips)

    steps: list[tuple[str, float, float]] = []

    def step(name: str, fn: Any) -> Any:
        start = time.perf_counter()
        result = fn()
        steps.append((name, start, time.perf_counter()))
        return result

    if kind == "hurray":
        import xarray_hurray as xh

        def open_() -> Any:
            return xh.open_reader(url)

        def read(opened: Any, box: list[int]) -> np.ndarray:
            return opened.read("v", (slice(box[0], box[1]), slice(box[2], box[3])))

    else:
        import zarr

        def open_() -> Any:
            return zarr.open_array(url, mode="r")

        def read(opened: Any, box: list[int]) -> np.ndarray:
            return opened[box[0] : box[1], box[2] : box[3]]

    opened = step("first open", open_)
    for k, box in enumerate(box_list):
        step(f"box {k}", lambda box=box: read(opened, box))
    step("next open", open_)
    version = "" if kind == "hurray" else zarr.__version__
    print(json.dumps({"version": version, "steps": steps}))


# ---- the benchmark -------------------------------------------------------------------


def run_reader(python: str, kind: str, url: str, box_list: list, server: Any) -> list[dict]:
    """Run one reader in its own process; attribute the server's requests to its steps."""
    server.reset()
    out = subprocess.run(
        [python, __file__, "--child", kind, url, json.dumps(box_list)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    steps, version = report["steps"], report["version"]
    log = server.log
    rows = []
    for name, start, stop in steps:
        mine = [(t, n) for t, _, n in log if start <= t <= stop]
        rows.append(
            {
                "step": name,
                "seconds": stop - start,
                "requests": len(mine),
                "bytes": sum(n for _, n in mine),
                "before_first": (min(t for t, _ in mine) - start) if mine else None,
                "version": version,
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--bandwidth", type=float, default=50e6, help="bytes per second")
    parser.add_argument("--python", action="append", default=[], help="more zarr interpreters")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, url, box_json = args.child
        child(kind, url, json.loads(box_json))
        return 0

    sys.path.insert(0, str(Path(__file__).parent))
    from latency_server import LatencyServer

    side, chunk, shard = (
        (QUICK_SIDE, QUICK_CHUNK, QUICK_SHARD) if args.quick else (SIDE, CHUNK, SHARD)
    )
    named = boxes(side)
    box_list = [list(b) for b in named.values()]
    names = {"first open": "first open", "next open": "next open"}
    names.update({f"box {k}": f"read {n}" for k, n in enumerate(named)})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_files(root, field(side), chunk, shard)
        readers = [(sys.executable, "hurray", "field.hurray")]
        for python in [sys.executable, *args.python]:
            readers += [(python, "zarr", "unsharded.zarr"), (python, "zarr", "sharded.zarr")]
        with LatencyServer(root, latency=args.latency, bandwidth=args.bandwidth) as server:
            results = []
            for python, kind, path in readers:
                rows = run_reader(python, kind, server.url(path), box_list, server)
                label = "hurray" if kind == "hurray" else f"zarr {rows[0]['version']} {path[:-5]}"
                results.append((label, rows))
    lat, bw = args.latency, args.bandwidth
    print(
        f"{side}x{side} float32, chunks {chunk}x{chunk}, zstd level 0, zarr shards "
        f"{shard}x{shard}; {lat * 1e3:g} ms per request, {bw / 1e6:g} MB/s shared link.\n"
        "Round trips = wall time / latency; limit = 1 + bytes / bandwidth / latency.\n"
    )
    print(
        "| step | reader | requests | kB | ms before first request | round trips | limit "
        "| round trips / limit |\n|---|---|---:|---:|---:|---:|---:|---:|"
    )
    for step in names:
        for label, rows in results:
            row = next(r for r in rows if r["step"] == step)
            trips = row["seconds"] / lat
            limit = 1 + row["bytes"] / bw / lat
            before = "" if row["before_first"] is None else f"{row['before_first'] * 1e3:.1f}"
            print(
                f"| {names[step]} | {label} | {row['requests']} | {row['bytes'] / 1e3:.1f} | "
                f"{before} | {trips:.2f} | {limit:.2f} | {trips / limit:.2f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
