"""Throughput of the layout core, side by side with its peers.

Prints three markdown tables:

1. Hilbert keys: points per second of ``hilbert_encode`` (coordinates -> index)
   and ``hilbert_decode`` (index -> coordinates) for ranks 2 and 3, against the
   PyPI packages ``numpy-hilbert-curve`` and ``hilbertcurve`` (single process),
   on the same random points.  A peer that is not installed shows ``n/a``.
2. Chunk permutation: GB/s of ``encode`` / ``decode`` of the Hilbert, Morton and
   row-major layouts with a warm permutation cache, against ``numpy.copy`` of
   the same chunk.
3. The bytes held by the permutation cache after the run.

Every figure is the best of several repeats (``time.perf_counter``); the
machine may be shared, so compare ratios measured in the same run rather than
absolute figures across runs.

Usage::

    python benchmarks/layouts.py            # the full run (a minute or two)
    python benchmarks/layouts.py --quick    # small sizes, a few seconds
    python benchmarks/layouts.py --no-peers # skip the peer packages
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from dataclasses import dataclass

import numpy as np
from timing import best_time

from xarray_hurray.layout import (
    PERMUTATION_CACHE,
    HilbertLayout,
    MortonLayout,
    RowMajorLayout,
    hilbert_decode,
    hilbert_encode,
)


@dataclass(frozen=True)
class Sizes:
    ranks: tuple[int, ...]
    orders: tuple[int, ...]
    ours_points: int
    numpy_peer_points: int
    python_peer_points: int
    chunk_sides: tuple[int, ...]
    repeats: int
    peer_repeats: int


FULL = Sizes(
    ranks=(2, 3),
    orders=(8, 9, 10),
    ours_points=2_000_000,
    numpy_peer_points=100_000,
    python_peer_points=20_000,
    chunk_sides=(512, 2048),
    repeats=7,
    peer_repeats=3,
)
QUICK = Sizes(
    ranks=(2, 3),
    orders=(8,),
    ours_points=65_536,
    numpy_peer_points=4_096,
    python_peer_points=1_024,
    chunk_sides=(128,),
    repeats=2,
    peer_repeats=1,
)


def load_peers(enabled: bool) -> dict[str, object]:
    """The peer modules that are installed (none when ``enabled`` is false)."""
    peers: dict[str, object] = {}
    if not enabled:
        return peers
    try:
        import hilbert  # numpy-hilbert-curve

        peers["numpy-hilbert-curve"] = hilbert
    except ImportError:
        pass
    try:
        from hilbertcurve.hilbertcurve import HilbertCurve

        peers["hilbertcurve"] = HilbertCurve
    except ImportError:
        pass
    return peers


def rate(points: int, seconds: float) -> float:
    return points / seconds if seconds > 0 else math.inf


def fmt_rate(value: float | None) -> str:
    """Points per second as millions, or ``n/a``."""
    if value is None:
        return "n/a"
    return f"{value / 1e6:.3g} M"


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3g}x"


def peer_rates(
    peers: dict[str, object],
    sizes: Sizes,
    coords: np.ndarray,
    keys: np.ndarray,
    rank: int,
    order: int,
) -> tuple[dict[str, tuple[float, float]], bool]:
    """Encode / decode rates of each peer and whether all agree with our keys.

    The peers get their input in the form they take it (a list of lists for
    ``hilbertcurve``), built outside the timed region.
    """
    rates: dict[str, tuple[float, float]] = {}
    agree = True
    if "numpy-hilbert-curve" in peers:
        mod = peers["numpy-hilbert-curve"]
        n = sizes.numpy_peer_points
        c, k = coords[:n], keys[:n]
        enc = best_time(sizes.peer_repeats, mod.encode, c, rank, order)
        dec = best_time(sizes.peer_repeats, mod.decode, k, rank, order)
        agree &= bool(np.array_equal(np.asarray(mod.encode(c, rank, order), np.uint64), k))
        agree &= bool(np.array_equal(np.asarray(mod.decode(k, rank, order), np.int64), c))
        rates["numpy-hilbert-curve"] = (rate(n, enc), rate(n, dec))
    if "hilbertcurve" in peers:
        curve = peers["hilbertcurve"](order, rank)  # single process (n_procs=0)
        n = sizes.python_peer_points
        c_list, k_list = coords[:n].tolist(), [int(h) for h in keys[:n]]
        enc = best_time(sizes.peer_repeats, curve.distances_from_points, c_list)
        dec = best_time(sizes.peer_repeats, curve.points_from_distances, k_list)
        agree &= curve.distances_from_points(c_list) == k_list
        agree &= curve.points_from_distances(k_list) == coords[:n].tolist()
        rates["hilbertcurve"] = (rate(n, enc), rate(n, dec))
    return rates, agree


def hilbert_table(sizes: Sizes, peers: dict[str, object]) -> list[str]:
    names = ("numpy-hilbert-curve", "hilbertcurve")
    lines = [
        "## Hilbert keys (points per second; one key per point)",
        "",
        "| r | p | direction | ours | " + " | ".join(names) + " | ours / fastest peer | agree |",
        "|---|---|---|---:|" + "---:|" * len(names) + "---:|---|",
    ]
    rng = np.random.default_rng(2004)
    for rank in sizes.ranks:
        for order in sizes.orders:
            coords = rng.integers(0, 1 << order, size=(sizes.ours_points, rank), dtype=np.int64)
            keys = hilbert_encode(coords, order)  # warm-up and reference keys
            hilbert_decode(keys, rank, order)
            ours = (
                rate(
                    sizes.ours_points,
                    best_time(sizes.repeats, hilbert_encode, coords, order),
                ),
                rate(
                    sizes.ours_points,
                    best_time(sizes.repeats, hilbert_decode, keys, rank, order),
                ),
            )
            others, agree = peer_rates(peers, sizes, coords, keys, rank, order)
            for j, direction in enumerate(("encode", "decode")):
                cells = [others[name][j] if name in others else None for name in names]
                present = [v for v in cells if v is not None]
                ratio = ours[j] / max(present) if present else None
                lines.append(
                    f"| {rank} | {order} | {direction} | {fmt_rate(ours[j])} | "
                    + " | ".join(fmt_rate(v) for v in cells)
                    + f" | {fmt_ratio(ratio)} | {('yes' if agree else 'NO') if others else 'n/a'} |"
                )
    return lines


def chunk_table(sizes: Sizes) -> list[str]:
    lines = [
        "## Chunk permutation (GB/s of chunk data, warm permutation cache)",
        "",
        "| chunk | layout | encode | decode | copy | encode / copy | decode / copy "
        "| first encode |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    rng = np.random.default_rng(1966)
    for side in sizes.chunk_sides:
        shape = (side, side)
        array = rng.random(shape, dtype=np.float32)
        nbytes = array.nbytes
        copy_s = best_time(sizes.repeats, np.copy, array)
        layouts = (
            HilbertLayout.for_shape(shape),
            MortonLayout.for_shape(shape),
            RowMajorLayout(),
        )
        for layout in layouts:
            PERMUTATION_CACHE.clear()
            start = time.perf_counter()
            buffer = layout.encode(array)  # builds and caches the permutation
            first = time.perf_counter() - start
            assert np.array_equal(layout.decode(buffer, shape), array)
            enc = best_time(sizes.repeats, layout.encode, array)
            dec = best_time(sizes.repeats, layout.decode, buffer, shape)
            note = " (view)" if isinstance(layout, RowMajorLayout) else ""
            mib = nbytes / 2**20
            lines.append(
                f"| {side}x{side} float32 ({mib:g} MiB) | {layout.name}{note} | "
                f"{nbytes / enc / 1e9:.3g} | {nbytes / dec / 1e9:.3g} | "
                f"{nbytes / copy_s / 1e9:.3g} | {copy_s / enc:.3g}x | {copy_s / dec:.3g}x | "
                f"{first * 1e3:.3g} ms |"
            )
    return lines


def cache_lines(sizes: Sizes) -> list[str]:
    """Warm every layout on every chunk size, then report the cache's bytes."""
    for side in sizes.chunk_sides:
        shape = (side, side)
        array = np.zeros(shape, dtype=np.float32)
        for layout in (HilbertLayout.for_shape(shape), MortonLayout.for_shape(shape)):
            layout.decode(layout.encode(array), shape)
    held = PERMUTATION_CACHE.nbytes
    budget = PERMUTATION_CACHE.max_bytes
    return [
        "## Permutation cache",
        "",
        f"After warming the Hilbert and Morton layouts of every chunk size above: "
        f"{held:,} bytes ({held / 2**20:.3g} MiB) held, budget {budget / 2**20:g} MiB.",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    parser.add_argument("--no-peers", action="store_true", help="skip the peer packages")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    peers = load_peers(not args.no_peers)
    print(
        f"# Layout benchmarks ({'quick' if args.quick else 'full'}): numpy {np.__version__}, "
        f"Python {platform.python_version()}, best of {sizes.repeats} "
        f"(peers: best of {sizes.peer_repeats})"
    )
    print()
    print(
        f"Points: ours {sizes.ours_points:,}, numpy-hilbert-curve {sizes.numpy_peer_points:,}, "
        f"hilbertcurve {sizes.python_peer_points:,}.  "
        f"Peers installed: {', '.join(peers) or 'none'}."
    )
    print()
    for section in (hilbert_table(sizes, peers), chunk_table(sizes), cache_lines(sizes)):
        print("\n".join(section))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
