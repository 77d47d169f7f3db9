"""``hurray plan``: the byte ranges a region read fetches, under each chunk order."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

import numpy as np

from ..container import ContainerReader, VariableMeta
from ..container.select import OuterSelection
from ..errors import CliError
from ..io import MergePolicy, plan_reads
from ..layout import LAYOUT_NAMES, chunk_placement, merge_runs
from .common import (
    add_file_arguments,
    open_reader,
    parse_storage_options,
    variable_names,
)

_ITEM = re.compile(r"^\s*([^=\s]+)\s*=\s*(-?\d+)?\s*(?::\s*(-?\d+)?\s*)?$")

SHOWN = 20
"""Byte ranges listed before the rest are summarised, unless ``--all`` is given."""


def parse_region(text: str, var: VariableMeta) -> tuple[int | slice, ...]:
    """The outer selection written as ``"dim=start:stop,dim=index,..."``.

    Dimensions not named are read whole; ``start`` or ``stop`` may be left out.

    Raises
    ------
    CliError
        For bad syntax, an unknown or repeated dimension, or an index or a slice end
        out of bounds (a slice inside the dimension may be empty: it plans nothing).
    """
    key: dict[str, int | slice] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _ITEM.match(item)
        if match is None or (match.group(2) is None and ":" not in item):
            raise CliError(
                f"bad region item {item!r}: expected dim=start:stop or dim=index, "
                'as in "y=0:512,x=1000:1500"'
            )
        dim, start, stop = match.group(1), match.group(2), match.group(3)
        if dim not in var.dims:
            raise CliError(
                f"variable {var.name!r} has no dimension {dim!r}; its dims are {list(var.dims)}"
            )
        if dim in key:
            raise CliError(f"dimension {dim!r} appears twice in the region {text!r}")
        length = var.shape[var.dims.index(dim)]
        if ":" in item:
            ends = (None if start is None else int(start), None if stop is None else int(stop))
            outside = [end for end in ends if end is not None and not -length <= end <= length]
            if outside:
                raise CliError(
                    f"{item!r} is out of bounds for {dim!r} of length {length}: "
                    f"{outside[0]} is not within -{length}..{length}"
                )
            key[dim] = slice(*ends)
        else:
            index = int(start)
            if not -length <= index < length:
                raise CliError(f"index {index} is out of bounds for {dim!r} of length {length}")
            key[dim] = index
    return tuple(key.get(dim, slice(None)) for dim in var.dims)


@dataclass(frozen=True)
class OrderCost:
    """What one region read costs when the chunks lie in one chunk order.

    Attributes
    ----------
    chunks
        Chunks the region touches (one raw byte range each).
    runs
        Contiguous byte ranges those chunks form.
    requests
        Requests after merging under the policy.
    fetched_bytes
        Bytes the requests fetch, gaps included.
    """

    chunks: int
    runs: int
    requests: int
    fetched_bytes: int


def placed_offsets(sizes: np.ndarray, placement: np.ndarray, base: int) -> np.ndarray:
    """Byte offset of each chunk (row-major id) when chunks of ``sizes`` follow each
    other from ``base`` in ``placement`` order."""
    ends = base + np.cumsum(sizes[placement])
    offsets = np.empty_like(ends)
    offsets[placement] = ends - sizes[placement]
    return offsets


def touched_chunks(reader: ContainerReader, name: str, key: tuple[int | slice, ...]) -> np.ndarray:
    """Row-major ids of the chunks of ``name`` that reading ``key`` touches."""
    var = reader.variable(name)
    return OuterSelection.build(key, var.shape, var.chunks).chunk_ids()


def cost(starts: np.ndarray, stops: np.ndarray, policy: MergePolicy) -> OrderCost:
    """The :class:`OrderCost` of fetching byte ranges ``[starts, stops)``."""
    merged = plan_reads(starts, stops, policy).requests
    runs = merge_runs(starts, stops)
    return OrderCost(
        chunks=len(starts),
        runs=len(runs),
        requests=len(merged),
        fetched_bytes=int((merged[:, 1] - merged[:, 0]).sum()),
    )


def order_costs(
    reader: ContainerReader, name: str, chunk_ids: np.ndarray, policy: MergePolicy
) -> dict[str, OrderCost]:
    """The cost of reading ``chunk_ids`` of ``name`` under each chunk order.

    The stored chunk sizes are kept and laid out again along each order from where
    the variable's data begins, so the file's own order gives its real offsets.
    """
    var = reader.variable(name)
    entries = reader.index(name)
    sizes = entries["size"].astype(np.int64)
    base = int(entries["offset"].min()) if len(entries) else 0
    costs = {}
    for order in LAYOUT_NAMES:
        placement = chunk_placement(var.grid_shape, order, var.chunk_axes)
        offsets = placed_offsets(sizes, placement, base)
        starts = offsets[chunk_ids]
        costs[order] = cost(starts, starts + sizes[chunk_ids], policy)
    return costs


def _ranges_text(title: str, ranges: np.ndarray, show_all: bool) -> list[str]:
    lines = [f"{title}: {len(ranges)}"]
    shown = ranges if show_all else ranges[:SHOWN]
    lines += [f"  [{a}, {b})  {b - a} bytes" for a, b in shown.tolist()]
    if len(shown) < len(ranges):
        lines.append(f"  ... {len(ranges) - len(shown)} more (--all lists them)")
    return lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Give the parser of ``hurray plan`` its description and arguments."""
    parser.description = (
        "Show the byte ranges reading a region would fetch (one raw range per "
        "chunk, and the requests after merging), and what the same read would cost if the "
        "chunks lay in each chunk order."
    )
    add_file_arguments(parser)
    parser.add_argument(
        "--var",
        required=True,
        help="the variable to read, by its path as hurray info prints it (group/name)",
    )
    parser.add_argument(
        "--region",
        default="",
        help='the region, as "y=0:512,x=1000:1500" (dims not named are read whole)',
    )
    parser.add_argument(
        "--max-gap",
        type=int,
        default=MergePolicy().max_gap,
        help="bytes of gap read through to save a request (default: %(default)s)",
    )
    parser.add_argument("--all", action="store_true", help="list every byte range")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the plan of one region read."""
    if args.max_gap < 0:
        raise CliError(f"--max-gap must be a non-negative number of bytes, got {args.max_gap}")
    reader = open_reader(args.file, parse_storage_options(args.storage_option))
    (name,) = variable_names(reader, [args.var])
    var = reader.variable(name)
    key = parse_region(args.region, var)
    policy = MergePolicy(max_gap=args.max_gap)
    chunk_ids = touched_chunks(reader, name, key)
    entries = reader.entries(name, chunk_ids)
    starts = entries["offset"].astype(np.int64)
    stops = starts + entries["size"].astype(np.int64)
    raw = np.stack([starts, stops], axis=1)[np.argsort(starts)]
    merged = plan_reads(starts, stops, policy).requests
    print(f"{args.file}: {name}[{args.region or 'everything'}], chunk order {var.chunk_order}")
    print("\n".join(_ranges_text("requests after merging", merged, args.all)))
    print("\n".join(_ranges_text("raw byte ranges (one per chunk)", raw, args.all)))
    print(f"\nthe same read under each chunk order (merging gaps up to {args.max_gap} bytes):")
    print(f"{'chunk order':<14}{'chunks':>8}{'runs':>8}{'requests':>10}{'bytes fetched':>16}")
    for kind, c in order_costs(reader, name, chunk_ids, policy).items():
        mark = " (this file)" if kind == var.chunk_order else ""
        print(f"{kind:<14}{c.chunks:>8}{c.runs:>8}{c.requests:>10}{c.fetched_bytes:>16}{mark}")
    return 0
