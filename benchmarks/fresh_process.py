"""The first write and read in a fresh process against the same in a warm one.

Every writer runs in new processes of its own (``python fresh_process.py --child``),
which time, on the benchmark field (the smooth field with noise of
``region_reads.py``):

- importing xarray and xarray_hurray;
- the first write of the process (``to_hurray`` or ``to_zarr``, local disk), and the
  first read of the whole file back (``engine="hurray"`` or ``open_zarr``);
- then the same write and read again in the same, now warm, process (best of two);
- whether numba was imported by then (the compiled kernels are loaded by a write that
  permutes a chunk).

Writers: ``to_hurray`` with its defaults, with ``layout="row-major"`` given, with
``layout="auto"`` (the default before: Hilbert or Morton elements), and ``to_zarr``
with its defaults.  The rounds take turns over the writers, so each gets the same
share of a shared machine's quiet and busy moments; every figure is the best over the
rounds, and the ratios are of figures from the same run.

Usage::

    python benchmarks/fresh_process.py                 # 16 MiB and 1 GiB (minutes)
    python benchmarks/fresh_process.py --quick         # 1 MiB and 4 MiB, one round
    python benchmarks/fresh_process.py --sizes 16      # MiB, repeatable
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WRITERS = {
    "to_hurray, defaults": ("hurray", {}),
    "to_hurray, layout='row-major'": ("hurray", {"layout": "row-major"}),
    "to_hurray, layout='auto' (the old default)": ("hurray", {"layout": "auto"}),
    "to_zarr, defaults": ("zarr", {}),
}


def child(writer: str, mib: int, target: Path) -> dict[str, Any]:
    """Time one fresh process's writes and reads (runs in the child)."""
    start = time.perf_counter()
    import numpy as np
    import xarray as xr

    import xarray_hurray as xh

    imported = time.perf_counter() - start
    side = math.isqrt(mib * 2**20 // 4)
    rng = np.random.default_rng(0)
    y = np.linspace(0, 1, side, dtype="f4")[:, None]
    x = np.linspace(0, 1, side, dtype="f4")[None, :]
    values = np.sin(6 * x) * np.cos(4 * y) + 0.05 * rng.standard_normal((side, side), "f4")
    ds = xr.Dataset({"v": (("y", "x"), values)})
    kind, options = WRITERS[writer]

    def write() -> float:
        begin = time.perf_counter()
        if kind == "hurray":
            xh.to_hurray(ds, target, **options)
        else:
            xh.to_zarr(ds, target, mode="w", consolidated=False, **options)
        return time.perf_counter() - begin

    def read() -> float:
        begin = time.perf_counter()
        if kind == "hurray":
            with xr.open_dataset(target, engine="hurray") as back:
                back.load()
        else:
            with xr.open_zarr(target, consolidated=False) as back:
                back.load()
        return time.perf_counter() - begin

    first_write = write()
    first_read = read()
    numba = "numba" in sys.modules
    warm_write = min(write() for _ in range(2))
    warm_read = min(read() for _ in range(2))
    return {
        "import": imported,
        "first write": first_write,
        "warm write": warm_write,
        "first read": first_read,
        "warm read": warm_read,
        "numba": numba,
    }


def run_child(writer: str, mib: int, target: Path) -> dict[str, Any]:
    """Run :func:`child` in a new interpreter; its measurements."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", writer, str(mib), str(target)],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ,
    )
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 and 4 MiB, one round")
    parser.add_argument("--sizes", type=int, action="append", help="MiB of the field")
    parser.add_argument("--rounds", type=int, help="processes per writer and size")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        writer, mib, target = args.child
        print(json.dumps(child(writer, int(mib), Path(target))))
        return
    sizes = args.sizes or ([1, 4] if args.quick else [16, 1024])
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print("| size | writer | import s | first write s | warm write s | first / warm "
          "| first read s | warm read s | first / warm | numba imported |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory(prefix="hurray-fresh-") as tmp:
        for mib in sizes:
            rounds = args.rounds or (1 if args.quick or mib >= 256 else 3)
            best: dict[str, dict[str, Any]] = {}
            for _ in range(rounds):
                for writer in WRITERS:
                    target = Path(tmp) / f"out.{WRITERS[writer][0]}"
                    found = run_child(writer, mib, target)
                    mine = best.setdefault(writer, found)
                    for key, value in found.items():
                        mine[key] = value if key == "numba" else min(mine[key], value)
            for writer, m in best.items():
                print(
                    f"| {mib} MiB | {writer} | {m['import']:.2f} | {m['first write']:.3f} "
                    f"| {m['warm write']:.3f} | {m['first write'] / m['warm write']:.2f}x "
                    f"| {m['first read']:.3f} | {m['warm read']:.3f} "
                    f"| {m['first read'] / m['warm read']:.2f}x | {'yes' if m['numba'] else 'no'} |"
                )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
