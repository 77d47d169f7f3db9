"""Out-of-core writes with Dask: ``to_hurray`` against ``to_zarr``.

A dask-backed float32 field several times larger than a stated memory cap is
written with 1 and 2 Dask threads by ``to_hurray`` and by ``to_zarr`` (Zarr
format 3, unsharded, not consolidated), with the same chunks and the same
compressor (zstd, level 0).  Each write runs in a fresh subprocess, which reports
its wall time and its peak resident memory (``getrusage`` max RSS, imports and
all); a subprocess that only builds the dask graph gives the baseline.  Both
writers compute the same source: a smooth function of the position plus a little
noise, generated chunk by chunk, so no writer ever holds the dataset.

Usage::

    python benchmarks/out_of_core.py           # 2 GiB dataset, 512 MiB cap
    python benchmarks/out_of_core.py --quick   # 8 MiB dataset, 2 MiB cap, smoke run
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


def source(side: int, chunk: int):
    """The dataset: ``side x 2 side`` float32 in ``chunk x chunk`` dask chunks."""
    import dask.array as da
    import numpy as np
    import xarray as xr

    def block(block_info=None):
        (y0, y1), (x0, x1) = block_info[None]["array-location"]
        y, x = np.ogrid[y0:y1, x0:x1]
        noise = np.random.default_rng(y0 * 2 * side + x0).standard_normal((y1 - y0, x1 - x0))
        field = np.sin(y / 700.0) * np.cos(x / 500.0) + 0.01 * noise
        return field.astype("f4")

    grid = ((chunk,) * (side // chunk), (chunk,) * (2 * side // chunk))
    field = da.map_blocks(block, chunks=grid, dtype="f4")
    return xr.Dataset({"v": (("y", "x"), field)})


def child(writer: str, threads: int, side: int, chunk: int, target: Path, window: int) -> None:
    """Run one write in this process and print its time and peak RSS as JSON."""
    import dask
    from zarr.codecs import ZstdCodec

    import xarray_hurray as xh

    ds = source(side, chunk)
    start = time.perf_counter()
    with dask.config.set(scheduler="threads", num_workers=threads):
        if writer == "hurray":
            xh.to_hurray(ds, target, codecs={"id": "zstd", "level": 0}, window=window)
        elif writer == "zarr":
            encoding = {"v": {"chunks": (chunk, chunk), "compressors": [ZstdCodec(level=0)]}}
            ds.to_zarr(target, mode="w", encoding=encoding, zarr_format=3, consolidated=False)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps({"seconds": seconds, "peak": peak}))


def run_child(writer: str, threads: int, args: argparse.Namespace, target: Path) -> dict:
    """One write in a fresh interpreter; its JSON report."""
    command = [sys.executable, __file__, "--child", writer, str(threads), str(args.side)]
    command += [str(args.chunk), str(target), str(args.window)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def stored_size(path: Path) -> int:
    """Bytes of a file or of every file under a directory."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 MiB dataset")
    parser.add_argument("--window", type=int, default=4, help="chunks in flight per worker")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        writer, threads, side, chunk, target, window = args.child
        child(writer, int(threads), int(side), int(chunk), Path(target), int(window))
        return
    args.side, args.chunk, cap = (1024, 128, 2 * MIB) if args.quick else (16384, 512, 512 * MIB)
    data_bytes = 2 * args.side**2 * 4
    chunk_bytes = args.chunk**2 * 4
    print(
        f"({args.side}, {2 * args.side}) float32 = {data_bytes / MIB:.0f} MiB, "
        f"chunks {args.chunk} x {args.chunk} ({chunk_bytes / MIB:.2f} MiB), zstd level 0; "
        f"memory cap {cap / MIB:.0f} MiB (dataset / cap = {data_bytes / cap:.0f}); "
        f"window {args.window} chunks per worker\n"
    )
    print("| threads | writer | seconds | MB/s | hurray / zarr | peak RSS MiB | RSS target MiB |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    work = Path(tempfile.mkdtemp(prefix="out-of-core-"))
    try:
        baseline = run_child("none", 1, args, work / "none")
        for threads in (1, 2):
            target_rss = 2 * threads * args.window * chunk_bytes + 300 * MIB
            results = {}
            for writer in ("hurray", "zarr"):
                path = work / f"t.{writer}"
                results[writer] = run_child(writer, threads, args, path)
                results[writer]["size"] = stored_size(path)
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            ratio = results["zarr"]["seconds"] / results["hurray"]["seconds"]
            for writer, result in results.items():
                rate = data_bytes / result["seconds"] / 1e6
                print(
                    f"| {threads} | {writer} | {result['seconds']:.1f} | {rate:.0f} | "
                    f"{f'{ratio:.2f}x' if writer == 'hurray' else ''} | "
                    f"{result['peak'] / MIB:.0f} | "
                    f"{target_rss / MIB:.0f} |"
                )
        print(
            f"\nBaseline (imports and graph, no write): peak RSS {baseline['peak'] / MIB:.0f} MiB; "
            f"stored sizes: hurray {results['hurray']['size'] / 1e6:.1f} MB, "
            f"zarr {results['zarr']['size'] / 1e6:.1f} MB"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
