"""Stored sizes per element layout, behind zstd: what a curve inside a compressed chunk
buys, on the benchmark field and on real data shipped inside matplotlib's wheel.

Each dataset is written as a Hurray file once per element layout (row-major, Morton,
Hilbert) with the writer's default codec (zstd) and the given chunks; the table gives
the stored bytes of its chunks (the file's index sizes summed) and the ratio to
row-major.  Sizes do not depend on the machine: nothing here is timed.

Usage::

    python benchmarks/layout_sizes.py            # the full run (a minute)
    python benchmarks/layout_sizes.py --quick    # small sizes, a few seconds
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib import cbook

import xarray_hurray as xh

LAYOUTS = ("row-major", "morton", "hilbert")


def field(side: int) -> np.ndarray:
    """The smooth field with a little noise of ``benchmarks/region_reads.py``."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:side, 0:side] / side
    values = np.sin(6 * x) * np.cos(4 * y) + 0.05 * rng.standard_normal((side, side))
    return values.astype("f4")


def datasets(quick: bool) -> list[tuple[str, np.ndarray, int]]:
    """``(description, values, chunk side)`` of each dataset measured."""
    side = 512 if quick else 4096
    dem = cbook.get_sample_data("jacksboro_fault_dem.npz")["elevation"]
    topo = cbook.get_sample_data("topobathy.npz")["topo"]
    return [
        (f"benchmark field {side}^2 float32", field(side), 128),
        (f"benchmark field {side}^2 float32", field(side), 512),
        (f"matplotlib DEM {dem.shape[0]}x{dem.shape[1]} int16", dem, 64),
        (f"matplotlib topobathy {topo.shape[0]}x{topo.shape[1]} float32", topo, 32),
    ]


def stored_bytes(values: np.ndarray, chunk: int, layout: str, path: Path) -> int:
    """Bytes of the stored chunks of ``values`` in a Hurray file of ``layout``."""
    ds = xr.Dataset({"v": (("y", "x"), values)})
    xh.to_hurray(ds, path, layout=layout, encoding={"v": {"chunks": (chunk, chunk)}})
    return int(xh.open_reader(path).index("v")["size"].sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    args = parser.parse_args()
    print("| data | chunks | " + " | ".join(f"{name} KiB" for name in LAYOUTS) + " | ", end="")
    print(" | ".join(f"{name} / row-major" for name in LAYOUTS[1:]) + " |")
    print("|---|---|" + "---:|" * (2 * len(LAYOUTS) - 1))
    with tempfile.TemporaryDirectory() as tmp:
        for name, values, chunk in datasets(args.quick):
            sizes = [
                stored_bytes(values, chunk, layout, Path(tmp) / "f.hurray") for layout in LAYOUTS
            ]
            kib = " | ".join(f"{s / 1024:.1f}" for s in sizes)
            ratios = " | ".join(f"{s / sizes[0]:.3f}" for s in sizes[1:])
            print(f"| {name} | {chunk}^2 | {kib} | {ratios} |")


if __name__ == "__main__":
    main()
