"""Hurray file against Zarr on the same dataset, chunks and compressor.

Run ``python benchmarks/file_io.py`` (``--quick`` for a small run); it prints Markdown.

1. Throughput: ``to_hurray`` against ``to_zarr`` (Zarr format 3, unsharded), and full
   reads through ``open_dataset(engine="hurray")`` against ``open_zarr``, each with and
   without dask chunks.  Best of several runs, on a local disk.
2. Hurray in Zarr: ``xarray_hurray.to_zarr`` (Hilbert-placed shards of ``hurray``
   chunks, zstd) against the plain Zarr of part 1, writes and full reads.
3. Region reads: requests (after merging) and bytes read per box, Hurray's reader
   against zarr-python's own reader on the same chunks unsharded and sharded.
   Metadata reads at open are counted apart.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr
import zarr
from timing import best_time
from zarr.codecs import ZstdCodec

import xarray_hurray as xh
from xarray_hurray.container import ContainerReader
from xarray_hurray.io import LocalFileSource
from xarray_hurray.testing import CountingSource, CountingStore


def dataset(side: int) -> xr.Dataset:
    """A smooth field with noise: compressible, but not trivially."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:side, 0:side] / side
    field = np.sin(6 * x) * np.cos(4 * y) + 0.05 * rng.standard_normal((side, side))
    return xr.Dataset({"v": (("y", "x"), field.astype("f4"))})


def throughput(ds: xr.Dataset, chunk: int, work: Path, repeats: int) -> None:
    """Print MB/s of writes and full reads."""
    megabytes = ds["v"].nbytes / 1e6
    hurray, zarr_path = work / "t.hurray", work / "t.zarr"
    hurray_enc = {"v": {"chunks": (chunk, chunk)}}
    zarr_enc = {"v": {"chunks": (chunk, chunk), "compressors": [ZstdCodec(level=0)]}}

    def write_zarr() -> None:
        ds.to_zarr(zarr_path, mode="w", encoding=zarr_enc, zarr_format=3, consolidated=False)

    cases = {
        "write": (
            lambda: xh.to_hurray(ds, hurray, encoding=hurray_enc, codecs="zstd"),
            write_zarr,
        ),
        "full read, no dask": (
            lambda: xr.open_dataset(hurray, engine="hurray").load(),
            lambda: xr.open_dataset(zarr_path, engine="zarr", consolidated=False).load(),
        ),
        "full read, dask chunks": (
            lambda: xr.open_dataset(hurray, engine="hurray", chunks={}).load(),
            lambda: xr.open_zarr(zarr_path, consolidated=False).load(),
        ),
    }
    print(f"\n{ds['v'].shape} float32 ({megabytes:.0f} MB), chunks {chunk} x {chunk}, zstd\n")
    print("| operation | hurray MB/s | zarr MB/s | hurray / zarr |")
    print("|---|---:|---:|---:|")
    for name, (ours, theirs) in cases.items():
        ours()
        theirs()  # warm up, and make sure both files exist
        t_ours = best_time(repeats, ours)
        t_theirs = best_time(repeats, theirs)
        print(
            f"| {name} | {megabytes / t_ours:.0f} | {megabytes / t_theirs:.0f} "
            f"| {t_theirs / t_ours:.2f}x |"
        )
    size_h = hurray.stat().st_size
    size_z = sum(p.stat().st_size for p in zarr_path.rglob("*") if p.is_file())
    print(f"\nFile sizes: hurray {size_h / 1e6:.2f} MB, zarr {size_z / 1e6:.2f} MB")


def hurray_in_zarr(ds: xr.Dataset, chunk: int, shard: int, work: Path, repeats: int) -> None:
    """Print MB/s of ``xarray_hurray.to_zarr`` writes and reads against plain Zarr's."""
    megabytes = ds["v"].nbytes / 1e6
    ours, plain = work / "h.zarr", work / "t.zarr"  # plain Zarr as written by throughput()
    encoding = {"v": {"chunks": (chunk, chunk), "shards": (shard, shard)}}
    cases = {
        "write": (
            lambda: xh.to_zarr(ds, ours, mode="w", encoding=encoding, consolidated=False),
            lambda: ds.to_zarr(
                plain,
                mode="w",
                encoding={"v": {"chunks": (chunk, chunk), "compressors": [ZstdCodec(level=0)]}},
                zarr_format=3,
                consolidated=False,
            ),
        ),
        "full read, dask chunks": (
            lambda: xr.open_zarr(ours, consolidated=False).load(),
            lambda: xr.open_zarr(plain, consolidated=False).load(),
        ),
    }
    print(
        f"\nHurray in Zarr: xarray_hurray.to_zarr, shards {shard} x {shard}, inner chunks "
        f"{chunk} x {chunk}, zstd; against plain to_zarr (unsharded, same chunks)\n"
    )
    print("| operation | hurray in zarr MB/s | plain zarr MB/s | hurray in zarr / plain |")
    print("|---|---:|---:|---:|")
    for name, (mine, theirs) in cases.items():
        mine()
        theirs()
        t_mine, t_theirs = best_time(repeats, mine), best_time(repeats, theirs)
        print(
            f"| {name} | {megabytes / t_mine:.0f} | {megabytes / t_theirs:.0f} "
            f"| {t_theirs / t_mine:.2f}x |"
        )
    size = sum(p.stat().st_size for p in ours.rglob("*") if p.is_file())
    print(f"\nStore size: hurray in zarr {size / 1e6:.2f} MB")


def boxes(side: int, count: int, sizes: tuple[int, ...]) -> list[tuple[int, tuple[slice, ...]]]:
    """Random boxes of each size, the same for every reader."""
    rng = np.random.default_rng(1)
    out = []
    for size in sizes:
        for _ in range(count):
            y, x = rng.integers(0, side - size, 2)
            out.append((size, (slice(int(y), int(y) + size), slice(int(x), int(x) + size))))
    return out


def region_reads(ds: xr.Dataset, chunk: int, shard: int, work: Path, count: int) -> None:
    """Print mean requests and bytes per region read for each reader."""
    side = ds.sizes["y"]
    values = ds["v"].values
    paths = {}
    for order in ("hilbert", "row-major"):
        paths[order] = work / f"r-{order}.hurray"
        xh.to_hurray(
            ds, paths[order], encoding={"v": {"chunks": (chunk, chunk)}}, chunk_order=order
        )
    arrays = {}
    for name, shards in (("unsharded", None), ("sharded", (shard, shard))):
        store = zarr.storage.LocalStore(work / f"r-{name}.zarr")
        array = zarr.create_array(
            store,
            shape=values.shape,
            chunks=(chunk, chunk),
            shards=shards,
            dtype="f4",
            compressors=[ZstdCodec(level=0)],
        )
        array[...] = values
        arrays[name] = zarr.open_array(CountingStore(store), mode="r")

    readers = {}
    for order, path in paths.items():
        source = CountingSource(LocalFileSource(path))
        reader = ContainerReader(source)
        reader.index("v")
        opened = (len(source.requests), source.bytes_read)
        source.requests.clear()
        readers[order] = (reader, source, opened)

    sizes = (chunk // 4, chunk + chunk // 2, 4 * chunk)
    keys = boxes(side, count, sizes)
    print(
        f"\nRegion reads: {side} x {side} float32, chunks {chunk} x {chunk}, zstd; "
        f"zarr shards {shard} x {shard}; {count} random square boxes per size\n"
    )
    print("| box side | reader | requests / read | MB / read |")
    print("|---:|---|---:|---:|")
    for size in sizes:
        selected = [key for s, key in keys if s == size]
        for order, (reader, source, _) in readers.items():
            source.requests.clear()
            for key in selected:
                np.testing.assert_array_equal(reader.read("v", key), values[key])
            row = (len(source.requests) / count, source.bytes_read / count / 1e6)
            print(f"| {size} | hurray, {order} chunk order | {row[0]:.1f} | {row[1]:.2f} |")
        for name, array in arrays.items():
            log = array.store.log
            log.clear()
            for key in selected:
                np.testing.assert_array_equal(array[key], values[key])
            print(
                f"| {size} | zarr-python, {name} | {log.requests / count:.1f} "
                f"| {log.bytes_read / count / 1e6:.2f} |"
            )
    for order, (_, _, (requests, nbytes)) in readers.items():
        print(
            f"\nOpening hurray ({order}): {requests} requests, {nbytes / 1e3:.0f} kB "
            "(header, metadata, then the index)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args()
    side, chunk, shard, repeats, count = (
        (512, 64, 256, 1, 3) if args.quick else (4096, 256, 1024, 3, 20)
    )
    print(f"xarray {xr.__version__}, zarr {zarr.__version__}, numpy {np.__version__}")
    ds = dataset(side)
    work = Path(tempfile.mkdtemp(prefix="hurray-bench-"))
    try:
        throughput(ds, chunk, work, repeats)
        hurray_in_zarr(ds, chunk, shard, work, repeats)
        region_reads(ds, chunk, shard, work, count)
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
