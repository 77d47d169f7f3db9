"""Bulk throughput: whole-variable writes and reads against the codec's own limit.

One float32 field (a smooth function plus noise, zstd level 3) is written whole and
read back whole through xarray by Hurray, Zarr v3 unsharded, Zarr v3 sharded and
h5netcdf (the zstd filter of hdf5plugin), for chunks of 64², 256², 512², 1024² and
one 3-D case (64 x 256 x 256 chunks of the same values).  Reads go through
``open_dataset(...).load()`` without dask, with ``chunks={}`` (a dask task per
stored chunk) and with dask chunks of about 64 MiB, on dask's threaded scheduler.

Every system's case runs in a fresh process that loads the field from a ``.npy``
file, so that no run inherits another's caches or memory; it reports the best of
``--repeats`` timed runs (each after an untimed one) and the peak resident memory of
the timed run above the resident memory before it (``VmHWM`` reset through
``/proc/self/clear_refs``).  Files are on the local disk, the page cache warm,
except for one more read without dask, "cold", before which every page of the
system's file (or files) is dropped from the page cache (``posix_fadvise``
``DONTNEED``, after an ``fsync``): what the first pass of a pipeline over data
larger than memory feels.  Linux only.

The codec's limit is measured in the parent, before and after each case's systems,
on the chunks of that case's Hurray file: every stored chunk decompressed, and every
decoded chunk compressed again (level 3), on one thread per CPU in a tight loop;
the faster of the two measurements is the limit the reads are compared with.  A
third figure, "placed", decompresses each chunk into a buffer of the thread's and
copies it to its place in a new array of the field: the least a whole read into
fresh memory does, which the no-dask read is also compared with; a fourth,
"written", compresses each chunk and writes it at its place in a new file (into
the page cache): the least a whole write does, which the write is compared with;
a fifth, "durable", adds the ``fsync`` that a write which returns only once its
file is on the disk (Hurray's, not the peers') must also wait for.  The "dask
floor" is the two dask reads of the same shape and chunks from a backend that
reads and decodes nothing (each task fills a new array): what xarray and dask
cost alone, which the dask reads are compared with.  "Disk" is the Hurray file read
in turn, in reads of 8 MiB, after its pages are dropped: with the placed limit, the
slower of the two bounds a cold read that overlaps reading with decoding.

Two further parts, on the 512² case: ``chunks={}`` reads over a ``dask.distributed``
LocalCluster of two single-threaded worker processes (a sum of the variable, so
that the time is the tasks', not the transfer of the result to the client), with
the requests one such read sends counted in-process; and the remote case, a whole
variable read over HTTP from ``latency_server.py`` (50 ms per request, no bandwidth
cap).

Usage::

    python benchmarks/throughput.py                # 16384² (1 GiB), as in the issue
    python benchmarks/throughput.py --side 4096    # 64 MiB
    python benchmarks/throughput.py --quick        # 512², a smoke run
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

# zarr warns that consolidated metadata is not in the v3 specification, at every write
warnings.filterwarnings("ignore", message=".*[Cc]onsolidated metadata.*")

MIB = 2**20
LEVEL = 3
SYSTEMS = ("hurray", "zarr unsharded", "zarr sharded", "h5netcdf")
CASES = ("64", "256", "512", "1024", "3d")
DASK_CHUNK_BYTES = 64 * MIB
"""The size of the larger dask chunks a user picks (whole stored chunks, at least one)."""


# --- the field and its cases ---------------------------------------------------------


def make_field(side: int, path: Path) -> None:
    """Write the ``side x side`` float32 field to ``path`` (``.npy``), a band at a time."""
    out = np.lib.format.open_memmap(path, mode="w+", dtype="f4", shape=(side, side))
    rng = np.random.default_rng(0)
    band = max(1, 2**22 // side)
    x = np.arange(side, dtype="f4") / side
    for y0 in range(0, side, band):
        y = (np.arange(y0, min(side, y0 + band), dtype="f4") / side)[:, None]
        noise = rng.standard_normal((len(y), side), dtype="f4")
        out[y0 : y0 + len(y)] = np.sin(6 * x) * np.cos(4 * y) + 0.05 * noise
    out.flush()
    del out


def case_shape(case: str, side: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The array shape and chunk shape of ``case`` for a field of ``side x side``: the
    3-D case holds the same values as ``(64, side / 8, side * 8 / 64)``."""
    if case == "3d":
        y = side // 8
        return (64, y, side * side // (64 * y)), (64, min(256, y), min(256, y))
    chunk = int(case)
    return (side, side), (chunk, chunk)


def case_fits(case: str, side: int) -> bool:
    shape, chunks = case_shape(case, side)
    return all(c <= n for c, n in zip(chunks, shape, strict=True))


def dims(ndim: int) -> tuple[str, ...]:
    return ("z", "y", "x")[-ndim:]


def dask_chunks(shape: tuple[int, ...], chunks: tuple[int, ...]) -> dict[str, int]:
    """Dask chunks of whole stored chunks, about :data:`DASK_CHUNK_BYTES` each, grown
    along the last axes first (as a user doubling a row-major block would)."""
    sizes = list(chunks)
    for axis in reversed(range(len(sizes))):
        while sizes[axis] * 2 <= shape[axis] and math.prod(sizes) * 2 * 4 <= DASK_CHUNK_BYTES:
            sizes[axis] *= 2
    return dict(zip(dims(len(shape)), sizes, strict=True))


def shards(shape: tuple[int, ...], chunks: tuple[int, ...]) -> tuple[int, ...]:
    """The shards of the sharded Zarr: whole chunks, up to 64 MiB, last axes first."""
    return tuple(dask_chunks(shape, chunks).values())


# --- the systems ------------------------------------------------------------------------


def writer(system: str, path: Path, chunks: tuple[int, ...]) -> Callable[[Any], None]:
    """A function writing a dataset to ``path`` as ``system`` stores it."""
    import xarray_hurray as xh

    def write(ds: Any) -> None:
        if path.is_dir():
            shutil.rmtree(path)
        if system == "hurray":
            encoding = {"v": {"chunks": chunks}}
            xh.to_hurray(ds, path, encoding=encoding, codecs={"id": "zstd", "level": LEVEL})
        elif system.startswith("zarr"):
            from zarr.codecs import ZstdCodec

            encoding: dict[str, Any] = {"chunks": chunks, "compressors": [ZstdCodec(level=LEVEL)]}
            if system == "zarr sharded":
                encoding["shards"] = shards(ds["v"].shape, chunks)
            ds.to_zarr(path, mode="w", encoding={"v": encoding}, zarr_format=3, consolidated=True)
        else:
            import hdf5plugin

            encoding = {"chunksizes": chunks, **hdf5plugin.Zstd(clevel=LEVEL)}
            ds.to_netcdf(path, engine="h5netcdf", encoding={"v": encoding})

    return write


def opener(system: str, target: Any) -> Callable[..., Any]:
    """``open(**kwargs)``: the dataset of ``target`` as ``system`` opens it."""
    import xarray as xr

    if system == "hurray":
        return lambda **kw: xr.open_dataset(target, engine="hurray", **kw)
    if system.startswith("zarr"):
        # consolidated: an HTTP store cannot list the group's arrays
        return lambda **kw: xr.open_dataset(target, engine="zarr", consolidated=True, **kw)
    import hdf5plugin  # noqa: F401  (registers the zstd filter)

    return lambda **kw: xr.open_dataset(target, engine="h5netcdf", **kw)


def suffix(system: str) -> str:
    return {"hurray": ".hurray", "h5netcdf": ".nc"}.get(system, ".zarr")


def file_name(system: str, case: str) -> str:
    return f"{case}-{system.replace(' ', '-')}{suffix(system)}"


# --- one system's case, in a fresh process ---------------------------------------------


def rss() -> int:
    """Resident bytes of this process now."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss() -> int:
    """Peak resident bytes since the last :func:`reset_peak` (``VmHWM``)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak() -> None:
    """Start :func:`peak_rss` again from the memory resident now."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def evict(path: Path) -> None:
    """Drop the pages of ``path`` (a file, or every file under a directory) from the
    page cache, each file synced first (the system keeps dirty pages)."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for file in files:
        descriptor = os.open(file, os.O_RDONLY)
        try:
            os.fsync(descriptor)
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(descriptor)


def measure(
    repeats: int, call: Callable[[], object], prepare: Callable[[], object] | None = None
) -> dict[str, float]:
    """Best seconds of ``repeats`` timed calls (each after an untimed one, then
    ``prepare``) and the peak resident memory of the last timed one above the memory
    resident before it."""
    best = math.inf
    extra = 0
    for _ in range(repeats):
        call()
        if prepare is not None:
            prepare()
        before = rss()
        reset_peak()
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
        extra = peak_rss() - before
    return {"seconds": best, "peak_mib": extra / MIB}


def child(system: str, case: str, side: int, work: Path, repeats: int) -> None:
    """Write and read back one system's file of ``case``; print the figures as JSON."""
    import dask
    import xarray as xr

    shape, chunks = case_shape(case, side)
    path = work / file_name(system, case)
    values = np.load(work / "field.npy").reshape(shape)
    ds = xr.Dataset({"v": (dims(len(shape)), values)})
    figures = {"write": measure(repeats, partial(writer(system, path, chunks), ds))}
    del ds, values
    open_ = opener(system, path)
    reads = {
        "numpy": {},
        "chunks={}": {"chunks": {}},
        "dask chunks": {"chunks": dask_chunks(shape, chunks)},
    }
    with dask.config.set(scheduler="threads"):
        for name, kwargs in reads.items():
            figures[name] = measure(repeats, lambda kw=kwargs: open_(**kw)["v"].load())
        # the page cache holds none of the file's bytes: a pipeline's first pass
        figures["cold"] = measure(repeats, lambda: open_()["v"].load(), partial(evict, path))
    stored = path.stat().st_size if path.is_file() else du(path)
    print(json.dumps({"figures": figures, "stored": stored}))


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_child(system: str, case: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", system, case, str(args.side), str(work)]
    command += ["--repeats", str(args.repeats)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{system} {case} failed:\n{done.stderr}")
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


# --- the codec's limit ---------------------------------------------------------------


Box = tuple[slice, ...]
"""Where a chunk lies in its variable, cut short at the variable's end."""


def chunk_table(path: Path) -> tuple[list[tuple[int, int, int, Box]], Any]:
    """Each stored chunk of variable ``v`` of the Hurray file ``path`` as ``(offset,
    size, crc32c, box)``, in row-major order, and the variable's description."""
    from xarray_hurray.container import open_reader

    reader = open_reader(path)
    var = reader.variable("v")
    entries = reader.index("v")
    table = []
    for chunk_id in np.flatnonzero(entries["size"]).tolist():
        corner = np.unravel_index(chunk_id, var.grid_shape)
        box = tuple(
            slice(int(i) * c, min((int(i) + 1) * c, n))
            for i, c, n in zip(corner, var.chunks, var.shape, strict=True)
        )
        entry = entries[chunk_id]
        table.append((int(entry["offset"]), int(entry["size"]), int(entry["crc32c"]), box))
    return table, var


def stored_chunks(path: Path) -> tuple[list[bytes], list[Box], Any]:
    """The stored bytes of every chunk of variable ``v`` of the Hurray file ``path``,
    the box of each in the variable, and the variable's description."""
    table, var = chunk_table(path)
    with open(path, "rb") as file:
        frames = [os.pread(file.fileno(), size, offset) for offset, size, _, _ in table]
    return frames, [box for _, _, _, box in table], var


def on_every_thread(threads: int, items: list[Any], work: Callable[[Any], object]) -> float:
    """Seconds for ``threads`` threads to run ``work`` on every item, each thread on its
    own share, all starting together."""
    shares = [items[k::threads] for k in range(threads)]
    barrier = threading.Barrier(threads + 1)

    def run(share: list[Any]) -> None:
        barrier.wait()
        for item in share:
            work(item)

    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(run, share) for share in shares]
        barrier.wait()
        start = time.perf_counter()
        for future in futures:
            future.result()
        return time.perf_counter() - start


def codec_limit(path: Path, repeats: int) -> dict[str, float]:
    """MiB/s of raw bytes decompressed and compressed on every thread, best of
    ``repeats`` passes over the chunks of the Hurray file ``path``; and ``"place"``:
    decompressed into a buffer of the thread's and copied to its place in a new array
    of the variable (allocated for each pass), what a whole read must do at least (its
    result's memory is touched for the first time, and chunks of a 2-D or larger
    array are not contiguous in it); ``"written"``: compressed and written at its
    place in a new file next to ``path`` (``os.pwrite``, into the page cache, not
    synced), what a whole write must do at least; ``"durable"``: the same, then
    ``fsync``, what a write that returns only once its file is on the disk (as
    Hurray's) must do at least; and ``"disk"``: the file read cold
    (:func:`read_cold`)."""
    import zstandard

    threads = os.cpu_count() or 1
    frames, boxes, var = stored_chunks(path)
    local = threading.local()  # a thread's codec contexts, made at its first chunk

    def decompressor() -> Any:
        if not hasattr(local, "d"):
            local.d = zstandard.ZstdDecompressor()
        return local.d

    def compressor() -> Any:
        if not hasattr(local, "c"):
            local.c = zstandard.ZstdCompressor(level=LEVEL, write_content_size=True)
        return local.c

    def decompress(frame: bytes) -> bytes:
        out: bytes = decompressor().decompress(frame)
        return out

    raws = [decompress(frame) for frame in frames]
    raw_mib = sum(map(len, raws)) / MIB

    def compress(raw: bytes) -> None:
        compressor().compress(raw)

    def place(result: np.ndarray, item: tuple[bytes, tuple[slice, ...]]) -> None:
        frame, box = item
        if not hasattr(local, "buffer"):
            local.buffer = np.empty(max(map(len, raws)), dtype=np.uint8)
        reader = decompressor().stream_reader(frame, read_across_frames=False)
        size = reader.readinto(local.buffer)
        chunk = local.buffer[:size].view(np.float32).reshape(var.chunks)
        block = result[box]  # cut short at the variable's end
        block[...] = chunk[tuple(slice(0, n) for n in block.shape)]

    def placed() -> float:
        result = np.empty(var.shape, dtype=np.float32)
        return on_every_thread(
            threads, list(zip(frames, boxes, strict=True)), partial(place, result)
        )

    target = path.with_suffix(".written-limit")
    offsets = np.cumsum([0] + [len(frame) for frame in frames[:-1]]).tolist()

    def write(descriptor: int, item: tuple[bytes, int]) -> None:
        raw, offset = item
        os.pwrite(descriptor, compressor().compress(raw), offset)

    def written(durable: bool = False) -> float:
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            items = list(zip(raws, offsets, strict=True))
            start = time.perf_counter()
            on_every_thread(threads, items, partial(write, descriptor))
            if durable:
                os.fsync(descriptor)
            return time.perf_counter() - start
        finally:
            os.close(descriptor)
            target.unlink()

    out = {}
    for name, items, work in (("decompress", frames, decompress), ("compress", raws, compress)):
        best = min(on_every_thread(threads, items, work) for _ in range(repeats))
        out[name] = raw_mib / best
    out["place"] = raw_mib / min(placed() for _ in range(repeats))
    out["written"] = raw_mib / min(written() for _ in range(repeats))
    # the disk's share: what is written must reach it before a durable write returns
    os.sync()
    out["durable"] = raw_mib / min(written(durable=True) for _ in range(repeats))
    out["disk"] = raw_mib / min(read_cold(path) for _ in range(repeats))
    return out


READ_BYTES = 8 * MIB
"""The size of each read of :func:`read_cold`."""


def read_cold(path: Path) -> float:
    """Seconds to read the whole file ``path`` in turn, in reads of :data:`READ_BYTES`,
    after its pages are dropped from the page cache: what the disk gives a cold read."""
    evict(path)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        start = time.perf_counter()
        offset = 0
        while data := os.pread(descriptor, READ_BYTES, offset):
            offset += len(data)
        return time.perf_counter() - start
    finally:
        os.close(descriptor)


# --- the dask floor --------------------------------------------------------------------


def dask_floor(case: str, side: int, repeats: int) -> dict[str, float]:
    """MiB/s of the two dask reads (``chunks={}`` and the larger dask chunks) through
    ``xr.open_dataset(...).load()`` of a variable of the case's shape and chunks that
    holds no file: each task makes a new array of its block and writes every element
    once, with nothing read or decoded.  What xarray and dask cost alone for these
    tasks on the threaded scheduler (the graph, its scheduling, a new array per task,
    the result joined from them): the most any backend's dask read reaches."""
    import dask
    import xarray as xr
    from xarray.backends import BackendArray, BackendEntrypoint
    from xarray.core import indexing

    shape, chunks = case_shape(case, side)
    names = dims(len(shape))

    class Blocks(BackendArray):  # type: ignore[misc]
        def __init__(self) -> None:
            self.shape = shape
            self.dtype = np.dtype("f4")

        def __getitem__(self, key: Any) -> Any:
            return indexing.explicit_indexing_adapter(
                key, self.shape, indexing.IndexingSupport.BASIC, self._block
            )

        def _block(self, key: tuple[Any, ...]) -> np.ndarray:
            out_shape = [
                len(range(*k.indices(n)))
                for k, n in zip(key, self.shape, strict=True)
                if isinstance(k, slice)
            ]
            block = np.empty(out_shape, dtype=self.dtype)
            block.fill(1)
            return block

    class Floor(BackendEntrypoint):  # type: ignore[misc]
        def open_dataset(self, filename_or_obj: Any, *, drop_variables: Any = None) -> Any:
            data = indexing.LazilyIndexedArray(Blocks())
            preferred = dict(zip(names, chunks, strict=True))
            variable = xr.Variable(names, data, encoding={"preferred_chunks": preferred})
            return xr.Dataset({"v": variable})

    mib = math.prod(shape) * 4 / MIB
    out = {}
    with dask.config.set(scheduler="threads"):
        for name, kwargs in (("chunks={}", {}), ("dask chunks", dask_chunks(shape, chunks))):

            def read(kwargs: dict[str, int] = kwargs) -> None:
                xr.open_dataset("floor", engine=Floor, chunks=kwargs)["v"].load()

            out[name] = mib / measure(repeats, read)["seconds"]
    return out


# --- the cluster and the remote case --------------------------------------------------


def cluster_reads(work: Path, case: str, repeats: int) -> list[tuple[str, float, int]]:
    """Best seconds of a sum of the variable with ``chunks={}`` over a LocalCluster of
    two single-threaded worker processes, per system; with the tasks of the read."""
    import dask
    import xarray as xr
    from distributed import Client, LocalCluster

    out = []
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster,
        Client(cluster),
    ):
        for system in ("hurray", "zarr unsharded", "zarr sharded"):
            open_ = opener(system, work / file_name(system, case))
            tasks = open_(chunks={})["v"].data.npartitions

            def total(open_: Callable[..., Any] = open_) -> Any:
                return open_(chunks={})["v"].sum().compute()

            best = math.inf
            for _ in range(repeats):
                total()
                start = time.perf_counter()
                total()
                best = min(best, time.perf_counter() - start)
            out.append((system, best, tasks))
    del dask, xr
    return out


def requests_per_read(work: Path, case: str) -> dict[str, tuple[int, int]]:
    """Requests and dask tasks of one ``chunks={}`` read, counted at Hurray's byte source
    and at the Zarr store (chunk objects, shards, metadata alike)."""
    import dask
    import xarray as xr
    import zarr

    from xarray_hurray.io import LocalFileSource
    from xarray_hurray.testing import CountingSource, CountingStore

    out = {}
    source = CountingSource(LocalFileSource(work / file_name("hurray", case)))
    with dask.config.set(scheduler="threads"):
        ds = xr.open_dataset(source, engine="hurray", chunks={})
        opened, tasks = len(source.requests), ds["v"].data.npartitions
        ds["v"].load()
        out["hurray"] = (len(source.requests) - opened, tasks)
        for system in ("zarr unsharded", "zarr sharded"):
            store = CountingStore(zarr.storage.LocalStore(work / file_name(system, case)))
            ds = xr.open_dataset(store, engine="zarr", consolidated=True, chunks={})
            opened, tasks = store.log.requests, ds["v"].data.npartitions
            ds["v"].load()
            out[system] = (store.log.requests - opened, tasks)
    return out


def remote_reads(work: Path, case: str, repeats: int, latency: float) -> list[tuple[str, float]]:
    """Best seconds of a whole-variable read (no dask) over HTTP, per system."""
    from latency_server import LatencyServer

    out = []
    with LatencyServer(work, latency=latency) as server:
        for system in ("hurray", "zarr unsharded", "zarr sharded"):
            open_ = opener(system, server.url(file_name(system, case)))
            best = math.inf
            for _ in range(repeats):
                start = time.perf_counter()
                open_()["v"].load()
                best = min(best, time.perf_counter() - start)
            out.append((system, best))
    return out


# --- the report --------------------------------------------------------------------------


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=16384, help="field side (float32)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES), help="of " + ",".join(CASES))
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--no-cluster", action="store_true")
    parser.add_argument("--no-remote", action="store_true")
    parser.add_argument("--quick", action="store_true", help="512² field, two repeats")
    parser.add_argument("--child", nargs=4, metavar=("SYSTEM", "CASE", "SIDE", "WORK"))
    args = parser.parse_args()
    if args.child:
        system, case, side, work = args.child
        child(system, case, int(side), Path(work), args.repeats)
        return
    if args.quick:
        args.side, args.repeats = 512, 2
    systems = [s.strip() for s in args.systems.split(",")]
    cases = [c for c in args.cases.split(",") if case_fits(c, args.side)]
    mib = args.side * args.side * 4 / MIB
    work = Path(tempfile.mkdtemp(prefix="throughput-"))
    try:
        make_field(args.side, work / "field.npy")
        print(f"\n{args.side} x {args.side} float32 ({mib:.0f} MiB), zstd level {LEVEL}, ")
        print(f"{os.cpu_count()} CPUs, load average at start {load()}\n")
        report(args, cases, systems, work, mib)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(
    args: argparse.Namespace, cases: list[str], systems: list[str], work: Path, mib: float
) -> None:
    """Run every case and print the tables."""
    reads = ("numpy", "chunks={}", "dask chunks")
    header = "| case | system | write MiB/s | no dask | chunks={} | dask chunks (MiB) | cold |"
    print(header + " stored MiB | peak MiB write / no dask / {} / dask | load |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    summary = []
    for case in cases:
        shape, chunks = case_shape(case, args.side)
        results: dict[str, dict[str, Any]] = {}
        limits = []
        for system in systems:
            results[system] = run_child(system, case, args, work)
            if system == "hurray":
                limits.append(codec_limit(work / file_name("hurray", case), args.repeats))
            figures = results[system]["figures"]
            rates = [mib / figures[op]["seconds"] for op in ("write", *reads, "cold")]
            peaks = " / ".join(f"{figures[op]['peak_mib']:.0f}" for op in ("write", *reads))
            big = math.prod(dask_chunks(shape, chunks).values()) * 4 / MIB
            print(
                f"| {'x'.join(map(str, chunks))} | {system} | {rates[0]:.0f} | {rates[1]:.0f} "
                f"| {rates[2]:.0f} | {rates[3]:.0f} ({big:.0f}) | {rates[4]:.0f} "
                f"| {results[system]['stored'] / MIB:.0f} | {peaks} | {load()} |",
                flush=True,
            )
        if "hurray" in results:
            limits.append(codec_limit(work / file_name("hurray", case), args.repeats))
            limit = {k: max(lim[k] for lim in limits) for k in limits[0]}
            limit.update(dask_floor(case, args.side, args.repeats))
            summary.append((case, chunks, limit, results))
    print_summary(summary, systems, mib)
    if "512" in cases and not args.no_cluster:
        print("\nchunks={} over a LocalCluster (2 worker processes, 1 thread each), 512²:\n")
        print("| system | tasks | requests | seconds (sum) | ms per task | load |")
        print("|---|---:|---:|---:|---:|---|")
        counted = requests_per_read(work, "512")
        for system, seconds, tasks in cluster_reads(work, "512", args.repeats):
            requests = counted[system][0]
            print(
                f"| {system} | {tasks} | {requests} | {seconds:.2f} "
                f"| {1e3 * seconds / tasks:.2f} | {load()} |"
            )
    if "512" in cases and not args.no_remote:
        print(f"\nWhole-variable read over HTTP ({1e3 * args.latency:.0f} ms per request), 512²:\n")
        print("| system | seconds | MiB/s | load |")
        print("|---|---:|---:|---|")
        for system, seconds in remote_reads(work, "512", args.repeats, args.latency):
            print(f"| {system} | {seconds:.2f} | {mib / seconds:.0f} | {load()} |")


def print_summary(summary: list[Any], systems: list[str], mib: float) -> None:
    """Hurray's figures against the codec's limit and against the fastest peer."""
    peers = [s for s in systems if s != "hurray"]
    print("\nHurray against the codec's limit (same run) and the fastest peer:\n")
    print(
        "| case | decompress MiB/s | compress MiB/s | write / limit | no dask / limit "
        "| chunks={} / limit | dask chunks / limit | write / peer | no dask / peer "
        "| chunks={} / peer | dask chunks / peer | placed MiB/s | no dask / placed "
        "| written MiB/s | write / written | durable MiB/s | write / durable "
        "| dask floor {} / chunks MiB/s "
        "| chunks={} / floor | dask chunks / floor "
        "| disk MiB/s | cold / min(disk, placed) | cold / peer |"
    )
    print("|---|" + "---:|" * 22)
    for _, chunks, limit, results in summary:
        ours = results["hurray"]["figures"]
        cells = [f"{limit['decompress']:.0f}", f"{limit['compress']:.0f}"]
        ops = ("write", "numpy", "chunks={}", "dask chunks")
        for op in ops:
            kind = "compress" if op == "write" else "decompress"
            cells.append(f"{mib / ours[op]['seconds'] / limit[kind]:.2f}x")
        placed = [
            f"{limit['place']:.0f}",
            f"{mib / ours['numpy']['seconds'] / limit['place']:.2f}x",
            f"{limit['written']:.0f}",
            f"{mib / ours['write']['seconds'] / limit['written']:.2f}x",
            f"{limit['durable']:.0f}",
            f"{mib / ours['write']['seconds'] / limit['durable']:.2f}x",
            f"{limit['chunks={}']:.0f} / {limit['dask chunks']:.0f}",
            *(
                f"{mib / ours[op]['seconds'] / limit[op]:.2f}x"
                for op in ("chunks={}", "dask chunks")
            ),
        ]
        # a cold read overlaps reading the disk with decoding: the slower of the two bounds it
        bound = min(limit["disk"], limit["place"])
        cold = [f"{limit['disk']:.0f}", f"{mib / ours['cold']['seconds'] / bound:.2f}x"]
        for op in (*ops, "cold"):
            best = min((results[p]["figures"][op]["seconds"] for p in peers), default=math.nan)
            (cold if op == "cold" else cells).append(f"{best / ours[op]['seconds']:.2f}x")
        row = cells + placed + cold
        print(f"| {'x'.join(map(str, chunks))} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
