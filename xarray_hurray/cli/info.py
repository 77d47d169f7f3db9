"""``hurray info``: what a Hurray file holds and how it is stored."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np

from ..container import ContainerReader, VariableMeta
from ..container.attrs import float_to_json
from ..container.elements import STRING, parse_element_type
from ..container.storage import storage_order
from ..xarray.pyramid import recorded_pyramid
from .common import (
    add_file_arguments,
    open_reader,
    parse_storage_options,
    unfinished_writes,
    unfinished_writes_note,
)


def _jsonable(value: Any) -> Any:
    """``value`` as strict JSON types: arrays as lists, bytes as text, and non-finite
    floats as the strings the format itself uses (``"NaN"``, ``"Infinity"``)."""
    if isinstance(value, np.ndarray | np.generic):
        value = value.tolist()
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, float):
        return float_to_json(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)


def describe(
    reader: ContainerReader, path: str, var: VariableMeta, out_of_order: int = 0
) -> dict[str, Any]:
    """The facts ``hurray info`` reports about the variable at ``path``.

    ``raw_bytes`` (the array's size in memory) and ``compression_ratio`` are None for
    variable-length strings, whose in-memory size is not fixed.
    """
    count = stored = 0
    for _, _, entries in reader.stored_chunks(path):
        count += len(entries)
        stored += int(entries["size"].sum())
    raw = (
        None
        if var.dtype == STRING
        else math.prod(var.shape) * parse_element_type(var.dtype).itemsize
    )
    return {
        "name": path,
        "dims": list(var.dims),
        "shape": list(var.shape),
        "dtype": var.dtype,
        "chunks": list(var.chunks),
        "chunk_count": var.chunk_count,
        "stored_chunks": count,
        "layout": var.layout.to_config(),
        "chunk_order": var.chunk_order,
        "chunk_axes": [var.dims[a] for a in var.chunk_axes or ()],
        "codecs": [dict(c) for c in var.codecs],
        "stored_bytes": stored,
        "raw_bytes": raw,
        "compression_ratio": round(raw / stored, 3) if raw is not None and stored else None,
        "out_of_order_chunks": out_of_order,
        "attrs": dict(var.attrs),
    }


def overview_levels(
    reader: ContainerReader, variables: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The levels of a file with overviews, finest first: group, factor, dimension
    sizes and stored bytes of each (none for a file without)."""
    pyramid = recorded_pyramid(reader.metadata.attrs)
    if pyramid is None:
        return []
    levels = []
    for number, factor in enumerate((1, *pyramid.factors)):
        held = [v for v in variables if v["name"].startswith(f"{number}/")]
        sizes: dict[str, int] = {}
        for var in held:
            sizes.update(zip(var["dims"], var["shape"], strict=True))
        stored = sum(var["stored_bytes"] for var in held)
        levels.append(
            {"group": f"/{number}", "factor": factor, "sizes": sizes, "stored_bytes": stored}
        )
    return levels


def report(reader: ContainerReader) -> dict[str, Any]:
    """Everything ``hurray info`` reports about a file, as a JSON-ready dict."""
    header = reader.header
    order = storage_order(reader)
    variables = [
        describe(reader, path, var, order["out_of_order"][path])
        for path, var in reader.metadata.all_variables()
    ]
    return {
        "file": reader.source.name,
        "format_version": ".".join(map(str, header.version)),
        "file_bytes": header.file_length,
        # generation 1 is the file as first written: no earlier version left bytes
        "generation": getattr(header, "generation", None),
        "unreferenced_bytes": order["unreferenced_bytes"],
        "uncommitted_bytes": order["uncommitted_bytes"],
        "attrs": dict(reader.metadata.attrs),
        "groups": ["/" + path for path, _ in reader.metadata.walk() if path],
        "levels": overview_levels(reader, variables),
        "variables": variables,
    }


def _show(value: Any) -> str:
    if isinstance(value, np.generic | np.ndarray):
        value = value.tolist()
    return repr(value)


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def _layout_name(config: dict[str, Any]) -> str:
    extra = {k: v for k, v in config.items() if k != "name"}
    return str(config["name"]) + (f" {extra}" if extra else "")


def format_text(facts: dict[str, Any]) -> str:
    """The human-readable form of :func:`report`."""
    lines = [
        f"{facts['file']}: Hurray format {facts['format_version']}, {_size(facts['file_bytes'])}"
    ]
    if facts["unreferenced_bytes"] and facts.get("generation") == 1:
        lines.append(
            f"  {_size(facts['unreferenced_bytes'])} unreferenced "
            "(room the first 64 KiB keep for index pages that went elsewhere or took less)"
        )
    elif facts["unreferenced_bytes"]:
        lines.append(
            f"  {_size(facts['unreferenced_bytes'])} no longer referenced "
            "(earlier versions; `hurray compact` drops them)"
        )
    if facts["uncommitted_bytes"]:
        lines.append(
            f"  {_size(facts['uncommitted_bytes'])} after the end of the version "
            "(a write that did not commit; the next write or `hurray compact` reuses them)"
        )
    note = unfinished_writes_note(facts.get("unfinished_writes", []))
    if note:
        lines.append(f"  {note}")
    for key, value in facts["attrs"].items():
        lines.append(f"  :{key} = {_show(value)}")
    if facts.get("levels"):
        lines.append("\noverview levels (multiscales)")
        for level in facts["levels"]:
            sizes = ", ".join(f"{d}={n}" for d, n in level["sizes"].items())
            lines.append(
                f"  {level['group']:<6} x{level['factor']:<5} ({sizes}) "
                f"{_size(level['stored_bytes'])} stored"
            )
    for var in facts["variables"]:
        dims = ", ".join(f"{d}={n}" for d, n in zip(var["dims"], var["shape"], strict=True))
        lines.append(f"\n{var['name']} ({dims}) {var['dtype']}")
        chunks = " x ".join(map(str, var["chunks"])) or "scalar"
        count = f"{var['chunk_count']} chunks, {var['stored_chunks']} stored"
        lines.append(f"  chunks       {chunks} ({count})")
        lines.append(f"  layout       {_layout_name(var['layout'])}")
        axes = ", ".join(var["chunk_axes"]) or "-"
        order = var["out_of_order_chunks"]
        placed = f", {order} chunks out of order (`hurray compact` restores it)" if order else ""
        lines.append(f"  chunk order  {var['chunk_order']} over ({axes}){placed}")
        codecs = ", ".join(c["id"] for c in var["codecs"]) or "none"
        lines.append(f"  codecs       {codecs}")
        ratio = var["compression_ratio"]
        sizes = f"{_size(var['stored_bytes'])} stored, {_size(var['raw_bytes'])} raw"
        lines.append(f"  size         {sizes}" + (f", ratio {ratio:.2f}" if ratio else ""))
        for key, value in var["attrs"].items():
            lines.append(f"  :{key} = {_show(value)}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Give the parser of ``hurray info`` its description and arguments."""
    parser.description = (
        "Describe a Hurray file: variables, dims, dtype, chunk shape, layout, "
        "chunk order, codecs, stored and raw sizes, compression ratio and attributes."
    )
    add_file_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the description of ``args.file``."""
    reader = open_reader(args.file, parse_storage_options(args.storage_option))
    facts = report(reader)
    facts["unfinished_writes"] = unfinished_writes(args.file)
    if args.json:
        print(json.dumps(_jsonable(facts), indent=2, allow_nan=False))
    else:
        print(format_text(facts))
    return 0
