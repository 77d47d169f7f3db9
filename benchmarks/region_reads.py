"""Region reads on object storage: requests, bytes and time per box, per layout.

Run ``python benchmarks/region_reads.py`` (``--quick`` for a small run); it prints
Markdown.  One smooth float32 field is stored, with the same chunks and zstd, as a
Hurray file in Hilbert, Morton and row-major chunk order, and as Zarr v3 arrays:
unsharded, sharded with zarr-python's default (Morton) placement of inner chunks,
sharded with the Hilbert placement of :class:`HilbertShardingCodec` (same inner
codecs), and as written by :func:`xarray_hurray.to_zarr` with its defaults (Hilbert
placement, zarr's ``bytes`` serializer and zstd: standard metadata only, which zarr
reads with its own ``ShardingCodec``; same shard and chunk shapes).  ``--gap`` also
reads the Hilbert-placed shards with zarr's coalescing gap
(``sharding_coalesce_max_gap_bytes``, zarr >= 3.3) set to the given bytes, for both
placements.  A fixed,
seeded workload of boxes at unaligned positions is read through each reader
after opening, every request passing through a wrapper that counts it and waits a
fixed latency before serving it, so concurrent requests overlap as they would on
an object store.  Hurray's reader fetches the merged ranges of a read ``CONCURRENCY``
at a time under the object-store merge policy; zarr-python reads as it does by itself.

``--json`` saves the rows and ``--include`` adds the Zarr rows of another run (for
instance the newest zarr-python, installed on another Python) to the table and to
the plot drawn by ``--plot``.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import zarr
from zarr.codecs import BytesCodec, ZstdCodec
from zarr.storage import MemoryStore

import xarray_hurray as xh
from xarray_hurray.container import ContainerReader
from xarray_hurray.io import OBJECT_STORE, ByteSource, FileObjectSource, MergePolicy
from xarray_hurray.testing import CountingSource, CountingStore, ForwardingStore
from xarray_hurray.zarr import HilbertShardingCodec

CONCURRENCY = OBJECT_STORE.concurrency
ORDERS = ("hilbert", "morton", "row-major")


class DelayedSource(ByteSource):
    """Serve reads from ``source`` after ``latency`` seconds each; the ranges of one
    read are served ``CONCURRENCY`` at a time, as an object-store client does."""

    def __init__(self, source: ByteSource, latency: float) -> None:
        self.source = source
        self.latency = latency
        self._pool = ThreadPoolExecutor(CONCURRENCY)

    @property
    def name(self) -> str:
        return self.source.name

    def read(self, start: int, stop: int) -> bytes:
        time.sleep(self.latency)
        return self.source.read(start, stop)

    def read_ranges(self, ranges: np.ndarray) -> list[bytes]:
        return list(self._pool.map(lambda r: self.read(int(r[0]), int(r[1])), ranges))

    def default_policy(self) -> MergePolicy:
        return OBJECT_STORE.merge_policy()


class DelayedStore(ForwardingStore):
    """A zarr store whose reads each wait ``latency`` seconds (concurrent reads overlap)."""

    def __init__(self, store: Any, latency: float) -> None:
        super().__init__(store)
        self.latency = latency

    def _with_store(self, store: Any) -> DelayedStore:
        return type(self)(store, self.latency)

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        await asyncio.sleep(self.latency)
        return await self._store.get(key, prototype, byte_range)


@dataclass
class Row:
    """Totals of one reader over the boxes of one shape."""

    layout: str
    shape: str
    boxes: int
    requests: int
    bytes_read: int
    bytes_needed: int
    seconds: float


def field(side: int) -> np.ndarray:
    """A smooth field with a little noise: compressible, but not trivially."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:side, 0:side] / side
    values = np.sin(6 * x) * np.cos(4 * y) + 0.05 * rng.standard_normal((side, side))
    return values.astype("f4")


def box_shapes(grid: int) -> dict[str, tuple[int, int]]:
    """Box shapes in chunks: three squares, a wide and a tall strip."""
    return {
        f"{grid // 8}x{grid // 8}": (grid // 8, grid // 8),
        f"{grid // 4}x{grid // 4}": (grid // 4, grid // 4),
        f"{grid // 2}x{grid // 2}": (grid // 2, grid // 2),
        f"{grid // 16}x{grid} (wide)": (grid // 16, grid),
        f"{grid}x{grid // 16} (tall)": (grid, grid // 16),
    }


def workload(side: int, chunk: int, count: int) -> dict[str, list[tuple[slice, slice]]]:
    """``count`` boxes of each shape at seeded, unaligned positions."""
    rng = np.random.default_rng(1)
    boxes = {}
    for label, (rows, cols) in box_shapes(side // chunk).items():
        h, w = rows * chunk, cols * chunk
        boxes[label] = [
            (slice(int(y), int(y) + h), slice(int(x), int(x) + w))
            for y, x in zip(
                rng.integers(0, side - h + 1, count),
                rng.integers(0, side - w + 1, count),
                strict=True,
            )
        ]
    return boxes


def touched(key: tuple[slice, slice], chunk: int, grid: int) -> np.ndarray:
    """Row-major ids of the chunks a box touches."""
    rows, cols = (np.arange(s.start // chunk, (s.stop - 1) // chunk + 1) for s in key)
    return (rows[:, None] * grid + cols[None, :]).ravel()


def measure(
    layout: str,
    boxes: dict[str, list[tuple[slice, slice]]],
    read: Callable[[tuple[slice, slice]], np.ndarray],
    counts: Callable[[], tuple[int, int]],
    needed: Callable[[tuple[slice, slice]], int],
    values: np.ndarray,
) -> list[Row]:
    """Read every box, check it against ``values``, and total each shape's costs."""
    rows = []
    for shape, keys in boxes.items():
        requests = nbytes = need = 0
        seconds = 0.0
        for key in keys:
            before = counts()
            start = time.perf_counter()
            out = read(key)
            seconds += time.perf_counter() - start
            after = counts()
            np.testing.assert_array_equal(out, values[key])
            requests += after[0] - before[0]
            nbytes += after[1] - before[1]
            need += needed(key)
        rows.append(Row(layout, shape, len(keys), requests, nbytes, need, seconds))
    return rows


def hurray_rows(
    values: np.ndarray, chunk: int, boxes: dict, latency: float, work: Path
) -> tuple[list[Row], dict[str, int]]:
    """Rows of Hurray's reader for each chunk order, and its requests at open."""
    ds = xr.Dataset({"v": (("y", "x"), values)})
    grid = values.shape[0] // chunk
    rows, opening = [], {}
    for order in ORDERS:
        path = work / f"{order}.hurray"
        xh.to_hurray(ds, path, encoding={"v": {"chunks": (chunk, chunk)}}, chunk_order=order)
        memory = FileObjectSource(io.BytesIO(path.read_bytes()))
        source = CountingSource(DelayedSource(memory, latency))
        reader = ContainerReader(source)
        sizes = reader.index("v")["size"].astype(np.int64)
        opening[order] = len(source.requests)
        rows += measure(
            f"hurray {order}",
            boxes,
            lambda key, r=reader: r.read("v", key),
            lambda s=source: (len(s.requests), s.bytes_read),
            lambda key, s=sizes: int(s[touched(key, chunk, grid)].sum()),
            values,
        )
    return rows, opening


def zarr_arrays(memory: MemoryStore, values: np.ndarray, chunk: int, shard: int) -> list[str]:
    """Write ``values`` into ``memory`` once per Zarr layout; the array names."""
    inner = (chunk, chunk)
    shards = (shard * chunk,) * 2
    hilbert = HilbertShardingCodec(chunk_shape=inner, codecs=[BytesCodec(), ZstdCodec(level=0)])
    layouts: dict[str, dict[str, Any]] = {
        "unsharded": {"chunks": inner},
        "sharded": {"chunks": inner, "shards": shards},
        "sharded hilbert": {"chunks": shards, "serializer": hilbert, "compressors": None},
    }
    for name, kwargs in layouts.items():
        kwargs.setdefault("compressors", [ZstdCodec(level=0)])
        array = zarr.create_array(memory, name=name, shape=values.shape, dtype="f4", **kwargs)
        array[...] = values
    ds = xr.Dataset({"v": (("y", "x"), values)})
    xh.to_zarr(
        ds,
        memory,
        group="to_zarr",
        encoding={"v": {"chunks": inner, "shards": shards}},
        consolidated=False,
    )
    return [*layouts, "to_zarr/v"]


def zarr_rows(
    values: np.ndarray, chunk: int, shard: int, boxes: dict, latency: float, gap: int | None
) -> list[Row]:
    """Rows of zarr-python's own reader for each Zarr layout."""
    grid = values.shape[0] // chunk
    memory = MemoryStore()
    names = zarr_arrays(memory, values, chunk, shard)
    # Unsharded chunks are stored as inner chunks of the same codecs are.
    sizes = np.array(
        [len(memory._store_dict[f"unsharded/c/{i // grid}/{i % grid}"]) for i in range(grid**2)]
    )
    readings = [(name, name, {}) for name in names]
    if gap is not None:
        config = {"array.sharding_coalesce_max_gap_bytes": gap}
        for name in ("sharded", "sharded hilbert"):
            readings.append((f"{name}, gap {gap // 1000} kB", name, config))
    rows = []
    for label, name, config in readings:
        store = CountingStore(DelayedStore(memory, latency))
        with zarr.config.set(config):
            opened = zarr.open_array(store, path=name, mode="r")
            rows += measure(
                f"zarr {zarr.__version__} {label}",
                boxes,
                lambda key, a=opened: a[key],
                lambda s=store: (s.log.requests, s.log.bytes_read),
                lambda key: int(sizes[touched(key, chunk, grid)].sum()),
                values,
            )
    return rows


def table(rows: list[Row]) -> None:
    """Print per-shape and whole-workload figures."""
    print("| box (chunks) | layout | requests / read | MB / read | read / needed | ms / read |")
    print("|---|---|---:|---:|---:|---:|")
    for shape in dict.fromkeys(r.shape for r in rows):
        for r in (r for r in rows if r.shape == shape):
            print(
                f"| {shape} | {r.layout} | {r.requests / r.boxes:.1f} "
                f"| {r.bytes_read / r.boxes / 1e6:.2f} | {r.bytes_read / r.bytes_needed:.2f} "
                f"| {1e3 * r.seconds / r.boxes:.0f} |"
            )
    print("\nWhole workload:\n")
    print("| layout | requests | read / needed | seconds |")
    print("|---|---:|---:|---:|")
    for layout in dict.fromkeys(r.layout for r in rows):
        mine = [r for r in rows if r.layout == layout]
        print(
            f"| {layout} | {sum(r.requests for r in mine)} "
            f"| {sum(r.bytes_read for r in mine) / sum(r.bytes_needed for r in mine):.2f} "
            f"| {sum(r.seconds for r in mine):.2f} |"
        )


def plot(rows: list[Row], path: Path) -> None:
    """Grouped bars: requests per read for each box shape and layout (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = list(dict.fromkeys(r.shape for r in rows))
    layouts = list(dict.fromkeys(r.layout for r in rows))
    width = 0.8 / len(layouts)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for k, layout in enumerate(layouts):
        per = {r.shape: r.requests / r.boxes for r in rows if r.layout == layout}
        xs = [i + (k - (len(layouts) - 1) / 2) * width for i in range(len(shapes))]
        ax.bar(xs, [per.get(s, np.nan) for s in shapes], width, label=layout)
    ax.set_xticks(range(len(shapes)), shapes)
    ax.set_yscale("log")
    ax.set_xlabel("box shape (chunks)")
    ax.set_ylabel("requests per read")
    ax.set_title("Requests per region read, after opening")
    ax.legend(fontsize=8, ncols=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--latency", type=float, default=0.020, help="seconds per request")
    parser.add_argument("--json", type=Path, help="save the rows to this file")
    parser.add_argument("--include", type=Path, action="append", default=[],
                        help="add the zarr rows saved by another run")  # fmt: skip
    parser.add_argument("--plot", type=Path, help="draw requests per read to this PNG")
    parser.add_argument("--gap", type=int, help="also read shards with this zarr gap")
    parser.add_argument(
        "--overhead", type=float, help="seconds of work per request in hurray's cost model"
    )
    args = parser.parse_args()
    if args.overhead is not None:
        global OBJECT_STORE
        OBJECT_STORE = replace(OBJECT_STORE, overhead=args.overhead)
    side, chunk, shard, count = (512, 32, 4, 3) if args.quick else (4096, 128, 16, 10)
    print(
        f"Python {platform.python_version()}, zarr {zarr.__version__}, xarray {xr.__version__}, "
        f"numpy {np.__version__}; {side} x {side} float32, chunks {chunk} x {chunk}, zstd; "
        f"zarr shards {shard} x {shard} chunks; {count} boxes per shape; "
        f"{1e3 * args.latency:.0f} ms per request; hurray merge policy "
        f"{OBJECT_STORE.merge_policy()}\n"
    )
    values = field(side)
    boxes = workload(side, chunk, count)
    work = Path(tempfile.mkdtemp(prefix="hurray-regions-"))
    try:
        rows, opening = hurray_rows(values, chunk, boxes, args.latency, work)
    finally:
        shutil.rmtree(work)
    rows += zarr_rows(values, chunk, shard, boxes, args.latency, args.gap)
    for extra in args.include:
        saved = [Row(**r) for r in json.loads(extra.read_text())]
        have = {r.layout for r in rows}
        rows += [r for r in saved if r.layout.startswith("zarr") and r.layout not in have]
    table(rows)
    print(f"\nOpening hurray: {opening} requests (header, metadata and index)")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    if args.plot:
        plot(rows, args.plot)
        print(f"\nPlot: {args.plot}", file=sys.stderr)


if __name__ == "__main__":
    main()
