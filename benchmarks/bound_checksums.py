"""What binding checksums to their place costs the paths that read and write chunks.

Format 1.3 stores the checksum of each chunk, index page and page table as the
CRC-32C of its bytes exclusive-or the CRC-32C of its place's key
(docs/spec/container.md, "Checksums bound to their place").  This measures, in one
run, each path where the places are computed and the places' share of it:

- a whole read of a variable of many small codec-free chunks (the most chunks per
  byte: where a cost per chunk shows most), against the places of all its chunks
  computed at once (``Places.chunks``, what the reader's index does for a read);
- reads of one whole chunk each (a Dask task's, ``chunks={}``), against one place
  each (``Places.chunk``);
- the write of that variable, against binding every page of it
  (``index.bound_page``, what the writers do when they pack the pages).

Every figure is the best of ``--repeats`` runs, the path and its binding taking
turns.

Usage::

    python benchmarks/bound_checksums.py            # 2048 x 2048 float32, chunks 16 x 16
    python benchmarks/bound_checksums.py --quick    # 512 x 512, a second or two
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr
from timing import best_times

import xarray_hurray as xh
from xarray_hurray.container.checksum import Places
from xarray_hurray.container.format import PAGE_ENTRIES
from xarray_hurray.container.index import bound_page

CHUNK = 16
"""Chunk side: 256 float32 elements, 1 KiB, per chunk."""

TASKS = 2000
"""Whole chunks read one at a time."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=2048, help="field side (float32)")
    parser.add_argument("--quick", action="store_true", help="a 512 x 512 field")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    side = 512 if args.quick else args.side
    values = np.random.default_rng(0).random((side, side), dtype="f4")
    ds = xr.Dataset({"v": (("y", "x"), values)})
    work = Path(tempfile.mkdtemp(prefix="bound-checksums-"))
    try:
        path = work / "v.hurray"

        def write() -> None:
            xh.to_hurray(ds, path, codecs=None, encoding={"v": {"chunks": (CHUNK, CHUNK)}})

        write()
        reader = xh.open_reader(path)
        var = reader.variable("v")
        places = Places("v", var.grid_shape)
        ids = np.arange(var.chunk_count, dtype=np.int64)
        entries = reader.entries("v", var.placement)  # in placement order, as packed
        grid = var.grid_shape
        one = [
            (slice(r * CHUNK, (r + 1) * CHUNK), slice(c * CHUNK, (c + 1) * CHUNK))
            for r, c in zip(*np.unravel_index(ids[:TASKS], grid), strict=True)
        ]

        def read_whole() -> None:
            xh.open_reader(path).read("v")

        def read_tasks() -> None:
            for key in one:
                reader.read("v", key)

        def bind_pages() -> None:
            for page in range(-(-var.chunk_count // PAGE_ENTRIES)):
                rows = entries[page * PAGE_ENTRIES : (page + 1) * PAGE_ENTRIES]
                bound_page(var, places, page, rows)

        times = best_times(
            args.repeats,
            read_whole,
            lambda: places.chunks(ids),
            read_tasks,
            lambda: [places.chunk(int(i)) for i in ids[:TASKS]],
            write,
            bind_pages,
        )
        rows = [
            (f"read whole ({var.chunk_count:,} chunks)", times[0], times[1]),
            (f"read one whole chunk at a time ({TASKS:,} reads)", times[2], times[3]),
            (f"write ({var.chunk_count:,} chunks)", times[4], times[5]),
        ]
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"{side}² float32 in chunks of {CHUNK}², no codec; load average {load}\n")
        print("| path | path ms | its places ms | places' share |")
        print("|---|---:|---:|---:|")
        for name, total, binding in rows:
            print(f"| {name} | {total * 1e3:.1f} | {binding * 1e3:.2f} | {binding / total:.1%} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
