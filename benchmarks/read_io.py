"""Ways to read a local file's chunks for a whole read: ``pread``, a buffer of the
thread's, a memory map, and ``pread`` after a readahead advice.

One float32 field (``--side`` squared, chunks of ``--chunk`` squared, zstd level 3)
is written as a Hurray file.  Each way then does what a whole read does with every
stored chunk, on one thread per CPU, the threads taking the chunks in placement order
from one queue as the reader's decode pool does: get the chunk's bytes, check their
CRC-32C, decompress them into the thread's buffer and copy the chunk to its place in
a new array of the field.  Only how the bytes are got differs:

- ``pread``: ``os.pread`` into new bytes for each chunk (what the reader does);
- ``buffer``: ``os.preadv`` into a buffer the thread keeps (no allocation per chunk);
- ``mmap``: a view of a read-only memory map of the file (no copy from the page
  cache, but a fault per page touched first);
- ``willneed``: ``posix_fadvise(WILLNEED)`` over the whole file before the reads
  start, then ``pread`` (the system reads ahead of the threads).

Each is timed warm (the page cache holding the file) and cold (its pages dropped
first, after an ``fsync``); best of ``--repeats``, ways taking turns.  Linux only.

Usage::

    python benchmarks/read_io.py                      # 8192² (256 MiB), chunks of 1024²
    python benchmarks/read_io.py --side 8192 --chunk 256
"""

from __future__ import annotations

import argparse
import mmap
import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from throughput import MIB, Box, chunk_table, evict, load, make_field

WAYS = ("pread", "buffer", "mmap", "willneed")


def whole_read(path: Path, way: str, threads: int) -> float:
    """Seconds for one whole read of ``path`` getting each chunk's bytes ``way``."""
    import zstandard

    from xarray_hurray.container.checksum import crc32c

    table, var = chunk_table(path)
    table.sort(key=lambda item: item[0])  # placement order: by offset
    raw_bytes = int(np.prod(var.chunks)) * 4
    todo: queue.SimpleQueue[tuple[int, int, int, Box] | None] = queue.SimpleQueue()
    descriptor = os.open(path, os.O_RDONLY)
    mapped = mmap.mmap(descriptor, 0, prot=mmap.PROT_READ) if way == "mmap" else None
    try:
        start = time.perf_counter()
        if way == "willneed":
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_WILLNEED)
        result = np.empty(var.shape, dtype=np.float32)
        for item in table:
            todo.put(item)
        for _ in range(threads):
            todo.put(None)

        def work() -> None:
            decompressor = zstandard.ZstdDecompressor()
            buffer = np.empty(raw_bytes, dtype=np.uint8)
            kept = bytearray(max(size for _, size, _, _ in table)) if way == "buffer" else None
            while (item := todo.get()) is not None:
                offset, size, crc, box = item
                data: Any
                if mapped is not None:
                    data = memoryview(mapped)[offset : offset + size]
                elif kept is not None:
                    data = memoryview(kept)[:size]
                    os.preadv(descriptor, [data], offset)
                else:
                    data = os.pread(descriptor, size, offset)
                if crc32c(data) != crc:
                    raise RuntimeError(f"chunk at {offset}: checksum mismatch")
                decompressor.stream_reader(data, read_across_frames=False).readinto(buffer)
                data = None  # a view of the map must go before the map is closed
                chunk = buffer.view(np.float32).reshape(var.chunks)
                block = result[box]
                block[...] = chunk[tuple(slice(0, n) for n in block.shape)]

        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return time.perf_counter() - start
    finally:
        if mapped is not None:
            mapped.close()
        os.close(descriptor)


def best(repeats: int, calls: dict[str, Callable[[], float]]) -> dict[str, float]:
    """Best seconds of each of ``calls`` over ``repeats`` rounds taking turns."""
    out = dict.fromkeys(calls, float("inf"))
    for _ in range(repeats):
        for name, call in calls.items():
            out[name] = min(out[name], call())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=8192, help="field side (float32)")
    parser.add_argument("--chunk", type=int, default=1024, help="chunk side")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import xarray as xr

    import xarray_hurray as xh

    threads = os.cpu_count() or 1
    mib = args.side * args.side * 4 / MIB
    work = Path(tempfile.mkdtemp(prefix="read-io-"))
    try:
        make_field(args.side, work / "field.npy")
        ds = xr.Dataset({"v": (("y", "x"), np.load(work / "field.npy"))})
        path = work / "field.hurray"
        encoding = {"v": {"chunks": (args.chunk, args.chunk)}}
        xh.to_hurray(ds, path, encoding=encoding, codecs={"id": "zstd", "level": 3})
        del ds
        print(f"\n{args.side}² float32 ({mib:.0f} MiB), chunks of {args.chunk}², zstd level 3,")
        print(f"{threads} CPUs, load average at start {load()}\n")
        print("| way | warm MiB/s | warm / pread | cold MiB/s | cold / pread | load |")
        print("|---|---:|---:|---:|---:|---|")

        def cold(way: str) -> float:
            evict(path)
            return whole_read(path, way, threads)

        warm = best(args.repeats, {w: lambda w=w: whole_read(path, w, threads) for w in WAYS})
        chilled = best(args.repeats, {w: lambda w=w: cold(w) for w in WAYS})
        for way in WAYS:
            print(
                f"| {way} | {mib / warm[way]:.0f} | {warm['pread'] / warm[way]:.2f}x "
                f"| {mib / chilled[way]:.0f} | {chilled['pread'] / chilled[way]:.2f}x "
                f"| {load()} |"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
