"""Zarr adapter benchmark: codec throughput, and requests and bytes of region reads in shards.

Run ``python benchmarks/zarr_codec.py``; it prints Markdown tables.

1. Write and read throughput of whole arrays through zarr with the ``hurray``
   serializer against zarr's ``bytes`` serializer (no compression, in memory).
2. Requests and bytes per region read in a sharded array, for a mixed set of
   boxes (square, wide, tall; 1 to 16 inner chunks a side), for shards with
   Morton-placed inner chunks (zarr's default) and Hilbert-placed ones, read by
   zarr-python itself and through the project's merging read path.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import nullcontext

import numpy as np
import zarr
from timing import best_time

from xarray_hurray.testing import CountingStore
from xarray_hurray.zarr import HilbertShardingCodec, HurrayCodec, using_hilbert_shards
from xarray_hurray.zarr.compat import ZARR_MERGES_SHARD_READS


def throughput(side: int, chunk: int, repeats: int) -> None:
    """Print MB/s of writing and reading a float32 array with each serializer."""
    values = np.random.default_rng(0).random((side, side), dtype=np.float32)
    megabytes = values.nbytes / 1e6
    serializers = {
        "bytes": zarr.codecs.BytesCodec(),
        "hurray row-major": HurrayCodec("row-major"),
        "hurray morton": HurrayCodec("morton"),
        "hurray hilbert": HurrayCodec("hilbert"),
    }
    print(f"\n{side} x {side} float32 ({megabytes:.0f} MB), chunks {chunk} x {chunk}, in memory\n")
    print("| serializer | write MB/s | read MB/s | write vs bytes | read vs bytes |")
    print("|---|---:|---:|---:|---:|")
    base = None
    for name, serializer in serializers.items():
        array = zarr.create_array(
            zarr.storage.MemoryStore(),
            shape=values.shape,
            chunks=(chunk, chunk),
            dtype="float32",
            serializer=serializer,
            compressors=None,
        )

        def write(array: zarr.Array = array) -> None:
            array[...] = values

        def read(array: zarr.Array = array) -> None:
            array[...]

        rates = (megabytes / best_time(repeats, write), megabytes / best_time(repeats, read))
        base = base or rates
        print(
            f"| {name} | {rates[0]:.0f} | {rates[1]:.0f} | "
            f"{rates[0] / base[0]:.2f}x | {rates[1] / base[1]:.2f}x |"
        )


def boxes(grid: int, inner: int, per_shape: int, seed: int = 0) -> Iterator[tuple[str, int, tuple]]:
    """Region boxes: ``(shape name, chunks a side, selection)``, at random element offsets."""
    rng = np.random.default_rng(seed)
    side = grid * inner
    for k in (1, 2, 4, 8, 16):
        thin = max(1, k // 4)
        for name, (rows, cols) in {"square": (k, k), "wide": (thin, k), "tall": (k, thin)}.items():
            for _ in range(per_shape):
                height, width = rows * inner, cols * inner
                top = int(rng.integers(0, side - height + 1))
                left = int(rng.integers(0, side - width + 1))
                yield name, k, (slice(top, top + height), slice(left, left + width))


def region_reads(grid: int, inner: int, per_shape: int) -> None:
    """Print requests and bytes per region read for each placement and read path."""
    side = grid * inner
    values = np.arange(side * side, dtype=np.float32).reshape(side, side)
    placements = {
        "Morton (zarr default)": zarr.codecs.ShardingCodec(chunk_shape=(inner, inner)),
        "Hilbert": HilbertShardingCodec(chunk_shape=(inner, inner)),
    }
    paths = {"zarr-python": nullcontext, "merging read path": using_hilbert_shards}
    selections = list(boxes(grid, inner, per_shape))
    print(
        f"\nOne {side} x {side} float32 shard of {grid} x {grid} inner chunks of "
        f"{inner} x {inner}; {len(selections)} boxes (square, wide, tall; 1-16 chunks a side)\n"
    )
    print("| placement | read by | requests/read | KiB/read | requests, 16-chunk squares |")
    print("|---|---|---:|---:|---:|")
    for placement, codec in placements.items():
        store = CountingStore(zarr.storage.MemoryStore())
        zarr.create_array(
            store,
            shape=values.shape,
            chunks=(side, side),
            dtype="float32",
            serializer=codec,
            compressors=None,
        )[...] = values
        for path, context in paths.items():
            counts = []
            with context():
                array = zarr.open_array(store, mode="r")
                for name, k, selection in selections:
                    store.log.clear()
                    array[selection]
                    counts.append((name, k, store.log.requests, store.log.bytes_read))
            requests = np.mean([c[2] for c in counts])
            kib = np.mean([c[3] for c in counts]) / 1024
            big = np.mean([c[2] for c in counts if c[0] == "square" and c[1] == 16])
            print(f"| {placement} | {path} | {requests:.1f} | {kib:.0f} | {big:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=2048, help="throughput array side")
    parser.add_argument("--chunk", type=int, default=256, help="throughput chunk side")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--grid", type=int, default=32, help="inner chunks per shard side")
    parser.add_argument("--inner", type=int, default=16, help="inner chunk side")
    parser.add_argument("--boxes", type=int, default=4, help="boxes per shape and size")
    args = parser.parse_args()
    merging = "zarr's own (>= 3.3)" if ZARR_MERGES_SHARD_READS else "the project's (< 3.3)"
    print(f"zarr {zarr.__version__}; merged shard reads: {merging}")
    throughput(args.side, args.chunk, args.repeats)
    region_reads(args.grid, args.inner, args.boxes)


if __name__ == "__main__":
    main()
