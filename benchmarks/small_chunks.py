"""Many small chunks: writes and reads against Zarr sharded, and scaling with the count.

A smooth float32 field is written with the same small chunks and codec (zstd,
level 0) by ``to_hurray`` and by ``to_zarr`` into a sharded Zarr v3 array, from numpy
and from dask (dask chunks the size of a shard, as sharded Zarr requires), with two
Dask threads; then read back whole with ``open_dataset``.  A second table writes the
same data as one dask chunk, as shard-sized dask chunks and as one dask chunk per
stored chunk.  A third writes ever smaller chunks of the same array from dask: time
per stored chunk should stay flat.  Every figure is the best of ``--repeats`` runs.

Usage::

    python benchmarks/small_chunks.py           # 4096 x 4096, chunks 64 x 64
    python benchmarks/small_chunks.py --quick   # small sizes, a few seconds
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import xarray as xr
import zarr
from timing import best_time
from zarr.codecs import ZstdCodec

import xarray_hurray as xh

CODEC = {"id": "zstd", "level": 0}


def field(side: int) -> np.ndarray:
    """A smooth field with a little noise: compressible, but not trivially."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:side, 0:side] / side
    values = np.sin(6 * x) * np.cos(4 * y) + 0.05 * rng.standard_normal((side, side))
    return values.astype("f4")


def dataset(values: np.ndarray, dask_chunk: int | None) -> xr.Dataset:
    data = values if dask_chunk is None else da.from_array(values, chunks=dask_chunk)
    return xr.Dataset({"v": (("y", "x"), data)})


def write_hurray(ds: xr.Dataset, path: Path, chunk: int) -> None:
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (chunk, chunk)}}, codecs=CODEC)


def write_zarr(ds: xr.Dataset, path: Path, chunk: int, shard: int) -> None:
    shutil.rmtree(path, ignore_errors=True)
    encoding = {
        "v": {
            "chunks": (chunk, chunk),
            "shards": (shard, shard),
            "compressors": [ZstdCodec(level=0)],
        }
    }
    ds.to_zarr(path, mode="w", zarr_format=3, consolidated=False, encoding=encoding)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    side, chunk, shard = (256, 16, 64) if args.quick else (4096, 64, 1024)
    scaling = (32, 16) if args.quick else (64, 32, 16, 8)
    repeats = 1 if args.quick else args.repeats
    values = field(side)
    count = (side // chunk) ** 2
    print(
        f"xarray-hurray, zarr {zarr.__version__}, dask {dask.__version__}: {side}x{side} "
        f"float32, chunks {chunk}x{chunk} ({count:,} chunks), zstd level 0, zarr shards "
        f"{shard}x{shard}, 2 dask threads, best of {repeats}\n"
    )
    with tempfile.TemporaryDirectory() as tmp, dask.config.set(scheduler="threads", num_workers=2):
        work = Path(tmp)
        hurray, zpath = work / "f.hurray", work / "f.zarr"
        print("| operation | hurray s | zarr sharded s | zarr / hurray |\n|---|---:|---:|---:|")
        for label, dask_chunk in (("from numpy", None), (f"from dask ({shard}^2)", shard)):
            ds = dataset(values, dask_chunk)
            h = best_time(repeats, write_hurray, ds, hurray, chunk)
            z = best_time(repeats, write_zarr, ds, zpath, chunk, shard)
            print(f"| write {label} | {h:.3g} | {z:.3g} | {z / h:.2f}x |")
        h = best_time(repeats, lambda: xr.open_dataset(hurray, engine="hurray").load())
        z = best_time(
            repeats, lambda: xr.open_dataset(zpath, engine="zarr", consolidated=False).load()
        )
        print(f"| full read | {h:.3g} | {z:.3g} | {z / h:.2f}x |")
        back = xr.open_dataset(hurray, engine="hurray")["v"].values
        assert np.array_equal(back, values)

        print("\n| dask chunks | stored chunks per dask chunk | hurray write s |\n|---|---:|---:|")
        for dask_chunk in (side, shard, chunk):
            ds = dataset(values, dask_chunk)
            h = best_time(repeats, write_hurray, ds, hurray, chunk)
            per = (dask_chunk // chunk) ** 2
            print(f"| {dask_chunk}x{dask_chunk} | {per:,} | {h:.3g} |")

        print(
            f"\n| stored chunks | chunk | hurray write s (dask {shard}^2) | us per chunk |"
            "\n|---:|---|---:|---:|"
        )
        ds = dataset(values, shard)
        for small in scaling:
            n = (side // small) ** 2
            h = best_time(repeats, write_hurray, ds, hurray, small)
            print(f"| {n:,} | {small}x{small} | {h:.3g} | {h / n * 1e6:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
