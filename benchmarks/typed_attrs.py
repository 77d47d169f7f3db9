"""What parsing metadata with one large numpy attribute costs, against the bare C JSON
parse of the same bytes (the limit a parser in Python cannot beat by much).

Run ``python benchmarks/typed_attrs.py`` (``--quick`` for smaller sizes); it prints
Markdown.  For numpy attributes of N float64 items, of N integers stored as float64
items (what another writer may write), and of N int32 items, in the root group's
attributes and in a variable's, each row gives:

- ``parse``: ``parse_metadata`` of the file's metadata bytes, every check included;
- ``json.loads``: the standard library's parse of the same bytes, nothing else;
- their ratio, and microseconds per item (linear: the same at every N).

Times are the best of a few turns (``best_times``), on a machine that may be shared.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
from timing import best_times

from xarray_hurray.container import DatasetMeta, VariableMeta
from xarray_hurray.container.metadata import parse_metadata
from xarray_hurray.layout import RowMajorLayout

KINDS = {
    "float64": lambda n: np.random.default_rng(0).random(n).round(3),
    "float64 of integers": lambda n: np.arange(n, dtype="float64") % 100,
    "int32": lambda n: (np.arange(n) % 1000).astype("int32"),
}
"""The attributes: float64 items, float64 items written as JSON integers (``7`` for
``7.0``, as another writer may: 2 bytes an item), and int32 items."""


def metadata(kind: str, n: int, where: str) -> bytes:
    """Metadata bytes holding the attribute ``kind`` of ``n`` items, of the root or of a
    variable."""
    values = KINDS[kind](n)
    if where == "root":
        data = DatasetMeta(attrs={"a": values}, variables=()).to_bytes()
    else:
        var = VariableMeta(
            "v", ("x",), (3,), "float64", (3,), RowMajorLayout(), attrs={"a": values}
        )
        data = DatasetMeta(attrs={}, variables=(var,)).to_bytes()
    if kind == "float64 of integers":
        data = data.replace(b".0,", b",").replace(b".0]", b"]")
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10,000 and 100,000 items")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 3_000_000])
    parser.add_argument("--kinds", nargs="+", choices=list(KINDS), default=list(KINDS))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = [10_000, 100_000] if args.quick else args.sizes
    print(f"load average {os.getloadavg()[0]:.2f}\n")
    print("| attribute | where | items | MB | parse s | json.loads s | ratio | us per item |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for kind in args.kinds:
        for where in ("root", "variable"):
            for n in sizes:
                data = metadata(kind, n, where)
                ours, bare = best_times(
                    args.repeats,
                    lambda data=data: parse_metadata(data),
                    lambda data=data: json.loads(data),
                )
                print(
                    f"| {kind} | {where} | {n:,} | {len(data) / 1e6:.1f} | {ours:.3f} | "
                    f"{bare:.3f} | {ours / bare:.2f}x | {ours / n * 1e6:.2f} |"
                )
    print(f"\nload average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
