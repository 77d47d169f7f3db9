"""The cost of one Dask task of ``chunks={}``: a whole stored chunk read through
xarray, against the bare work of reading it.

One float32 field (``--side`` squared, chunks of ``--chunk`` squared, zstd level 3)
is written as a Hurray file and opened with ``chunks={}``.  Each of its tasks' calls
is then run in turn in this one thread (no scheduler, so the figure is the call's
own), best of ``--repeats`` passes over every chunk, the three taking turns, in
microseconds per chunk:

- ``task``: what a task of the graph calls (dask's ``getter`` on xarray's indexing
  adapters, down to the backend);
- ``reader``: ``ContainerReader.read`` of the chunk's slices (what the backend calls);
- ``bare``: ``os.pread`` of the chunk's bytes, their CRC-32C and zstd decompression
  into a new array: the least a task does.

What ``task`` and ``reader`` add to ``bare`` is Python holding the GIL, which the
threaded scheduler's own thread waits for.

Usage::

    python benchmarks/task_cost.py                 # 8192², chunks of 256² (1,024 tasks)
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from throughput import load, make_field
from timing import best_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=8192, help="field side (float32)")
    parser.add_argument("--chunk", type=int, default=256, help="chunk side")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    import xarray as xr
    import zstandard
    from dask.array.core import getter

    import xarray_hurray as xh
    from xarray_hurray.container import open_reader
    from xarray_hurray.container.checksum import crc32c

    work = Path(tempfile.mkdtemp(prefix="task-cost-"))
    try:
        make_field(args.side, work / "field.npy")
        path = work / "field.hurray"
        ds = xr.Dataset({"v": (("y", "x"), np.load(work / "field.npy"))})
        encoding = {"v": {"chunks": (args.chunk, args.chunk)}}
        xh.to_hurray(ds, path, encoding=encoding, codecs={"id": "zstd", "level": 3})
        del ds
        lazy = xr.open_dataset(path, engine="hurray", chunks={})["v"].data
        graph = dict(lazy.__dask_graph__())
        # the graph's one array node (the indexing adapters), and each task's slices
        (adapter,) = (node for key, node in graph.items() if not isinstance(key, tuple))
        keys = [graph[key].args[1].value for key in graph if isinstance(key, tuple)]
        reader = open_reader(path)
        entries = reader.index("v")
        stored = [(int(e["offset"]), int(e["size"])) for e in entries]
        descriptor = os.open(path, os.O_RDONLY)
        decompressor = zstandard.ZstdDecompressor()
        raw_bytes = args.chunk * args.chunk * 4

        def bare(offset: int, size: int) -> np.ndarray:
            data = os.pread(descriptor, size, offset)
            crc32c(data)
            out = np.empty(raw_bytes, dtype=np.uint8)
            decompressor.stream_reader(data, read_across_frames=False).readinto(out)
            return out

        calls: dict[str, Any] = {
            "task": lambda: [getter(adapter, key) for key in keys],
            "reader": lambda: [reader.read("v", key) for key in keys],
            "bare": lambda: [bare(*where) for where in stored],
        }
        # the calls take turns, each timed pass after an untimed one
        seconds = best_times(args.repeats, *calls.values())
        micros = {name: 1e6 * s / len(keys) for name, s in zip(calls, seconds, strict=True)}
        os.close(descriptor)
        print(f"\n{args.side}² float32, chunks of {args.chunk}² ({len(keys)} tasks), zstd 3,")
        print(f"load average {load()}\n")
        print("| call | us per chunk | above bare |")
        print("|---|---:|---:|")
        for name, value in micros.items():
            print(f"| {name} | {value:.1f} | {value - micros['bare']:.1f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
