"""Round trips per open and per region read over a real socket, against the limit.

One smooth float32 field is stored with the same chunks and codec (zstd, level 0) as
a Hurray file (Hilbert chunk order) and as Zarr v3 arrays, unsharded and sharded.
The files are served by :class:`latency_server.LatencyServer`, which waits
``--latency`` seconds before answering each request and sends all response bodies
over one link of ``--bandwidth`` bytes per second.  Each reader runs in its own
process (its library, and for Zarr fsspec's HTTP file system, imported before any
timing; Hurray reads plain ``http`` URLs with the standard library's client):

- *first open*: the first open of the file in that process, the HTTP client and its
  connection made then; *next open*: opening it again;
- *region reads*: a fixed set of unaligned boxes read from the open array.

A second, larger Hurray file (``LARGE_SIDE`` squared, small chunks) has its index
pages outside the first 64 KiB, so a region read fetches the pages it needs and
then the chunks: two round trips after the open (format 1.1).

Each step is reported in round trips (wall time / latency), next to its limit:
the rounds of requests that depend on each other (one; two for a read that needs
index pages first) plus the bytes the region needs over the bandwidth (the stored
chunks it touches, and for Hurray's large file its index pages; a reader that reads
through gaps fetches more than that).  Requests and bytes are counted by the
server; *waves* are the groups of requests that arrive together (a request that
arrives more than half a latency after the first of its wave starts a new one).
``--python`` runs the Zarr readers again with another interpreter (for instance one
with the newest zarr-python; it needs zarr, fsspec,
aiohttp and numpy).

Usage::

    python benchmarks/round_trips.py                     # 50 ms, 50 MB/s
    python benchmarks/round_trips.py --python /path/to/venv/bin/python
    python benchmarks/round_trips.py --runs 3          # each step's fastest of 3 runs
    python benchmarks/round_trips.py --cpu             # and the client's own time
    python benchmarks/round_trips.py --quick             # small, for the smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

SIDE, CHUNK, SHARD = 2048, 128, 1024
QUICK_SIDE, QUICK_CHUNK, QUICK_SHARD = 256, 32, 128
LARGE_SIDE, LARGE_CHUNK = 4096, 32
"""The large file: 16,384 chunks, whose 16 index pages (320 kB) lie outside the head."""
QUICK_LARGE_SIDE, QUICK_LARGE_CHUNK = 512, 8


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


def write_hurray(path: Path, values: np.ndarray, chunk: int) -> None:
    """``values`` as variable ``v`` of a Hurray file, zstd level 0."""
    import xarray as xr

    import xarray_hurray as xh

    ds = xr.Dataset({"v": (("y", "x"), values)})
    codec = {"id": "zstd", "level": 0}
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (chunk, chunk)}}, codecs=codec)


def write_files(root: Path, values: np.ndarray, chunk: int, shard: int) -> None:
    """The Hurray file and the two Zarr arrays, with the same chunks and codec."""
    import zarr
    from zarr.codecs import ZstdCodec

    write_hurray(root / "field.hurray", values, chunk)
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
    """Time the steps of one reader; print as JSON the zarr version, ``[name, start,
    stop]`` per step and, for Hurray, the bytes of chunks and index pages each box
    needs."""
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
        import fsspec.implementations.http  # noqa: F401  (imports are not round trips)
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
    needed = [needed_bytes(opened, box) for box in box_list] if kind == "hurray" else []
    print(json.dumps({"version": version, "steps": steps, "needed": needed}))


def needed_bytes(reader: Any, box: list[int]) -> int:
    """Bytes of the stored chunks a box of variable ``v`` touches, plus those of the
    index pages holding their entries where the pages lie outside the first 64 KiB."""
    from xarray_hurray.cli.plan import touched_chunks
    from xarray_hurray.container.format import HEAD_SIZE, PAGE_ENTRIES

    chunk_ids = touched_chunks(reader, "v", (slice(box[0], box[1]), slice(box[2], box[3])))
    chunks = int(reader.entries("v", chunk_ids)["size"].sum())
    pages = np.unique(reader.variable("v").position[chunk_ids] // PAGE_ENTRIES)
    table = reader.page_table("v")
    starts = table["offset"][pages].astype(np.int64)
    lengths = table["length"][pages].astype(np.int64)
    return chunks + int(lengths[starts + lengths > HEAD_SIZE].sum())


# ---- the benchmark -------------------------------------------------------------------


def waves(arrivals: list[float], latency: float) -> int:
    """Groups of requests that arrive together: a request arriving more than half a
    latency after the first of the current group starts a new one."""
    count, first = 0, -float("inf")
    for t in sorted(arrivals):
        if t - first > latency / 2:
            count, first = count + 1, t
    return count


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
    needed = dict(zip([f"box {k}" for k in range(len(box_list))], report["needed"], strict=False))
    log = server.log
    rows = []
    for name, start, stop in steps:
        mine = [(t, n) for t, _, n in log if start <= t <= stop]
        fetched = sum(n for _, n in mine)
        rows.append(
            {
                "step": name,
                "seconds": stop - start,
                "requests": len(mine),
                "waves": waves([t for t, _ in mine], server.latency),
                "bytes": fetched,
                "needed": needed.get(name, fetched),
                "before_first": (min(t for t, _ in mine) - start) if mine else None,
                "version": version,
            }
        )
    return rows


def print_table(
    names: dict[str, str], results: list[tuple[str, list[dict]]], lat: float, bw: float
) -> None:
    """One row per step and reader; ``rounds`` is the limit's number of round trips."""
    print(
        "| step | reader | requests | waves | kB fetched | kB needed | ms before first request "
        "| round trips | limit | round trips / limit |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for step, label_of_step in names.items():
        for label, rows in results:
            row = next(r for r in rows if r["step"] == step)
            trips = row["seconds"] / lat
            limit = row["rounds"] + row["needed"] / bw / lat
            before = "" if row["before_first"] is None else f"{row['before_first'] * 1e3:.1f}"
            print(
                f"| {label_of_step} | {label} | {row['requests']} | {row['waves']} | "
                f"{row['bytes'] / 1e3:.1f} | {row['needed'] / 1e3:.1f} | {before} | "
                f"{trips:.2f} | {limit:.2f} | {trips / limit:.2f} |"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--bandwidth", type=float, default=50e6, help="bytes per second")
    parser.add_argument("--python", action="append", default=[], help="more zarr interpreters")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="run every reader this many times, in turn; "
        "report each step's fastest run (on a shared machine: the least disturbed)",
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="also time Hurray's steps over a server adding "
        "no latency and no bandwidth limit (what is left is the client's own time)",
    )
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
    large_side, large_chunk = (
        (QUICK_LARGE_SIDE, QUICK_LARGE_CHUNK) if args.quick else (LARGE_SIDE, LARGE_CHUNK)
    )
    named, large_named = boxes(side), boxes(large_side)
    box_list = [list(b) for b in named.values()]
    large_boxes = [list(b) for b in large_named.values()]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_files(root, field(side), chunk, shard)
        write_hurray(root / "large.hurray", field(large_side), large_chunk)
        readers = [(sys.executable, "hurray", "field.hurray")]
        for python in [sys.executable, *args.python]:
            readers += [(python, "zarr", "unsharded.zarr"), (python, "zarr", "sharded.zarr")]
        readers.append((sys.executable, "hurray", "large.hurray"))
        load = [os.getloadavg()[0]]
        runs: list[list[list[dict]]] = []
        with LatencyServer(root, latency=args.latency, bandwidth=args.bandwidth) as server:
            for _ in range(args.runs):
                runs.append(
                    [
                        run_reader(
                            python,
                            kind,
                            server.url(path),
                            large_boxes if path == "large.hurray" else box_list,
                            server,
                        )
                        for python, kind, path in readers
                    ]
                )
                load.append(os.getloadavg()[0])
        client: list[list[list[dict]]] = []
        if args.cpu:  # Hurray's readers again, the server adding no time
            with LatencyServer(root, latency=0.0, bandwidth=None) as server:
                for _ in range(args.runs):
                    client.append(
                        [
                            run_reader(sys.executable, "hurray", server.url(path), boxes_, server)
                            for path, boxes_ in (
                                ("field.hurray", box_list),
                                ("large.hurray", large_boxes),
                            )
                        ]
                    )
                    load.append(os.getloadavg()[0])
    fastest = fastest_steps(runs)
    results = []
    for (_, kind, path), rows in zip(readers[:-1], fastest, strict=False):
        label = "hurray" if kind == "hurray" else f"zarr {rows[0]['version']} {path[:-5]}"
        results.append((label, [{**r, "rounds": 1} for r in rows]))
    # a read of the large file needs its index pages, then its chunks
    large = [{**r, "rounds": 2 if r["step"].startswith("box") else 1} for r in fastest[-1]]
    lat, bw = args.latency, args.bandwidth
    print(
        f"{args.runs} run(s), the fastest of each step; 1-minute load average "
        + ", ".join(f"{x:.1f}" for x in load)
        + " (before the first run and after each).\n"
    )
    print(
        f"{side}x{side} float32, chunks {chunk}x{chunk}, zstd level 0, zarr shards "
        f"{shard}x{shard}; {lat * 1e3:g} ms per request, {bw / 1e6:g} MB/s shared link.\n"
        "Round trips = wall time / latency; limit = 1 + bytes needed / bandwidth / latency.\n"
    )
    names = {"first open": "first open", "next open": "next open"}
    names.update({f"box {k}": f"read {n}" for k, n in enumerate(named)})
    print_table(names, results, lat, bw)
    print(
        f"\nA larger Hurray file: {large_side}x{large_side} float32, chunks "
        f"{large_chunk}x{large_chunk} ({(large_side // large_chunk) ** 2} chunks), index pages "
        "outside the first 64 KiB.\nLimit of a region read = 2 (its index pages, then its "
        "chunks) + bytes needed (chunks and pages) / bandwidth / latency.\n"
    )
    names = {"first open": "first open", "next open": "next open"}
    names.update({f"box {k}": f"read {n}" for k, n in enumerate(large_named)})
    print_table(names, [("hurray", large)], lat, bw)
    if client:
        print(
            "\nHurray's steps over the same server without latency or bandwidth limit "
            "(the client's own time, ms):\n\n| step | file | ms |\n|---|---|---:|"
        )
        for (path, named_boxes), rows in zip(
            (("field.hurray", named), ("large.hurray", large_named)),
            fastest_steps(client),
            strict=True,
        ):
            labels = ["first open", *(f"read {n}" for n in named_boxes), "next open"]
            for label, row in zip(labels, rows, strict=True):
                print(f"| {label} | {path} | {row['seconds'] * 1e3:.1f} |")
    return 0


def fastest_steps(runs: list[list[list[dict]]]) -> list[list[dict]]:
    """Per reader (the inner lists of each run), each step's row from its fastest run."""
    return [
        [min(steps, key=lambda row: row["seconds"]) for steps in zip(*rows, strict=True)]
        for rows in zip(*runs, strict=True)
    ]


if __name__ == "__main__":
    raise SystemExit(main())
