"""Peak memory of dask-backed writes by dask chunk size: ``to_hurray`` against ``to_zarr``.

A float32 field, ``side x side`` (16384: 1 GiB), generated block by block so that no
writer ever holds it, is stored in chunks of ``stored x stored`` (256: 256 KiB) by
both writers: ``to_hurray`` (zstd level 0) and ``to_zarr`` (Zarr format 3,
unsharded, zstd level 0, not consolidated).  It is written from dask chunks of
every size from ``2 stored`` to ``side / 2`` on a side (1 MiB to 256 MiB), squares
and 1:2 rectangles in turn, on Dask's threaded scheduler with 2 threads.  Each
write runs in a fresh process that reports its peak resident memory (``getrusage``
max RSS, imports included) and its wall time; a process that only builds the
graph gives the baseline.

Usage::

    python benchmarks/write_memory.py           # 1 GiB, 256 KiB stored chunks
    python benchmarks/write_memory.py --quick   # 64 KiB, 1 KiB stored chunks, smoke run
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIB = 2**20
THREADS = 2


def source(side: int, dask_chunks: tuple[int, int]):
    """The dataset: ``side x side`` float32, a smooth field plus noise, made block by
    block in float32 (so that making it costs each task about one block)."""
    import dask.array as da
    import numpy as np
    import xarray as xr

    def block(block_info=None):
        (y0, y1), (x0, x1) = block_info[None]["array-location"]
        rng = np.random.default_rng(y0 * side + x0)
        values = rng.standard_normal((y1 - y0, x1 - x0), dtype=np.float32)
        values *= np.float32(0.01)
        values += np.sin(np.arange(y0, y1, dtype=np.float32) / 700)[:, None]
        values += np.cos(np.arange(x0, x1, dtype=np.float32) / 500)[None, :]
        return values

    grid = tuple((c,) * (side // c) for c in dask_chunks)
    field = da.map_blocks(block, chunks=grid, dtype="f4")
    return xr.Dataset({"v": (("y", "x"), field)})


def child(writer: str, side: int, stored: int, dask_chunks: tuple[int, int], target: Path) -> None:
    """Run one write in this process and print its time and peak RSS as JSON."""
    import dask
    from zarr.codecs import ZstdCodec

    import xarray_hurray as xh

    ds = source(side, dask_chunks)
    start = time.perf_counter()
    with dask.config.set(scheduler="threads", num_workers=THREADS):
        if writer == "hurray":
            encoding = {"v": {"chunks": (stored, stored), "codecs": {"id": "zstd", "level": 0}}}
            xh.to_hurray(ds, target, encoding=encoding)
        elif writer == "zarr":
            encoding = {"v": {"chunks": (stored, stored), "compressors": [ZstdCodec(level=0)]}}
            ds.to_zarr(target, mode="w", encoding=encoding, zarr_format=3, consolidated=False)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps({"seconds": seconds, "peak": peak}))


def run_child(
    writer: str, side: int, stored: int, dask_chunks: tuple[int, int], target: Path
) -> dict[str, float]:
    """One write in a fresh interpreter; its JSON report."""
    command = [sys.executable, __file__, "--child", writer, str(side), str(stored)]
    command += [str(dask_chunks[0]), str(dask_chunks[1]), str(target)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    report: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def dask_shapes(side: int, stored: int) -> list[tuple[int, int]]:
    """Dask chunk shapes from ``2 stored`` to ``side / 2`` on a side, doubling in
    size: squares and 1:2 rectangles in turn."""
    shapes = []
    rows = 2 * stored
    while rows <= side // 2:
        shapes.append((rows, rows))
        if 2 * rows <= side // 2:
            shapes.append((rows, 2 * rows))
        rows *= 2
    return shapes


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 64 KiB field, as a smoke run")
    parser.add_argument("--side", type=int, default=16384, help="the field's side")
    parser.add_argument("--stored", type=int, default=256, help="the stored chunks' side")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        writer, side, stored, rows, columns, target = args.child
        child(writer, int(side), int(stored), (int(rows), int(columns)), Path(target))
        return
    side, stored = (128, 16) if args.quick else (args.side, args.stored)
    print(
        f"({side}, {side}) float32 = {side**2 * 4 / MIB:.0f} MiB, stored chunks "
        f"{stored} x {stored} ({stored**2 * 4 / 1024:.0f} KiB), zstd level 0, "
        f"{THREADS} threads\n"
    )
    print("| dask chunks | MiB | to_hurray peak MiB | to_zarr peak MiB | hurray / zarr |")
    print("|---|---:|---:|---:|---:|")
    work = Path(tempfile.mkdtemp(prefix="write-memory-"))
    try:
        baseline = run_child("none", side, stored, (side // 2, side // 2), work / "none")
        for shape in dask_shapes(side, stored):
            peaks = {}
            for writer in ("hurray", "zarr"):
                target = work / f"t.{writer}"
                peaks[writer] = run_child(writer, side, stored, shape, target)["peak"]
                remove(target)
            print(
                f"| {shape[0]} x {shape[1]} | {shape[0] * shape[1] * 4 / MIB:g} | "
                f"{peaks['hurray'] / MIB:.0f} | {peaks['zarr'] / MIB:.0f} | "
                f"{peaks['hurray'] / peaks['zarr']:.2f} |"
            )
        print(
            f"\nBaseline (imports and graph, no write): peak RSS {baseline['peak'] / MIB:.0f} MiB"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
