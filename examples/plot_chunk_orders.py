"""Draw the Hilbert, Morton and row-major chunk orders of a grid, and what one region read touches.

For each order the top panel shows the path the chunks follow in the file, with a
region highlighted; the bottom strip is the file itself, chunk by chunk, with the
chunks the region needs in colour.  Each coloured stretch is one byte-range
request.

Run::

    python examples/plot_chunk_orders.py --output docs/images/chunk_orders.png
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from xarray_hurray.layout import chunk_placement, merge_runs

ORDERS = ("hilbert", "morton", "row-major")


def region_runs(grid: tuple[int, int], order: np.ndarray, box: tuple[slice, slice]) -> np.ndarray:
    """Runs of file positions (chunk ranks) holding the chunks inside ``box``."""
    rank_of_chunk = np.empty(order.size, dtype=np.int64)
    rank_of_chunk[order] = np.arange(order.size)
    needed = np.sort(rank_of_chunk.reshape(grid)[box].ravel())
    return merge_runs(needed, needed + 1)


def draw(grid: tuple[int, int], box: tuple[slice, slice], output: str) -> dict[str, int]:
    """Draw the figure and return the number of byte ranges per order."""
    fig, axes = plt.subplots(
        2, len(ORDERS), figsize=(5 * len(ORDERS), 6.4), gridspec_kw={"height_ratios": [5, 1]}
    )
    requests = {}
    for column, kind in enumerate(ORDERS):
        order = chunk_placement(grid, kind)
        ys, xs = np.unravel_index(order, grid)
        path = axes[0, column]
        path.plot(xs, ys, color="0.3", linewidth=1.2)
        path.scatter(xs, ys, c=np.arange(order.size), cmap="viridis", s=14, zorder=3)
        path.add_patch(
            plt.Rectangle(
                (box[1].start - 0.5, box[0].start - 0.5),
                box[1].stop - box[1].start,
                box[0].stop - box[0].start,
                fill=True,
                alpha=0.25,
                color="tab:red",
            )
        )
        path.set_xlim(-0.5, grid[1] - 0.5)
        path.set_ylim(grid[0] - 0.5, -0.5)
        path.set_aspect("equal")
        path.set_xticks([])
        path.set_yticks([])
        runs = region_runs(grid, order, box)
        requests[kind] = len(runs)
        path.set_title(f"{kind} chunk order")
        strip = axes[1, column]
        strip.broken_barh([(0, order.size)], (0, 1), color="0.9")
        strip.broken_barh([(a, b - a) for a, b in runs], (0, 1), color="tab:red")
        strip.set_xlim(0, order.size)
        strip.set_yticks([])
        strip.set_xlabel(f"file, chunk by chunk: {len(runs)} byte ranges for the region")
    fig.suptitle(
        f"Reading a region of {box[0].stop - box[0].start} x {box[1].stop - box[1].start} "
        f"chunks from a grid of {grid[0]} x {grid[1]} chunks"
    )
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="chunk_orders.png", help="PNG file to write")
    parser.add_argument("--grid", type=int, nargs=2, default=(16, 16), metavar=("NY", "NX"))
    args = parser.parse_args()
    grid = tuple(args.grid)
    box = (slice(grid[0] // 4, grid[0] // 4 + grid[0] // 2), slice(grid[1] // 8, grid[1] // 2))
    requests = draw(grid, box, args.output)
    for kind, count in requests.items():
        print(f"{kind:>9}: {count} byte ranges")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
