"""A structure-aware fuzzer of Hurray files: parse a valid file, change one parsed
field (a header field, a metadata value or type, an index entry, the bytes of a
chunk), write the file again with every checksum recomputed, and run every way of
reading it.  Shared by ``tools/fuzz_structure.py`` (long runs, figures) and
``tests/container/test_fuzz_structure.py`` (a fast subset).

Each input ends in one class: ``ok`` (read and verified), ``rejected`` (only the
package's documented errors), or a finding: ``wrong`` (two ways of reading gave
different values, or a change that keeps the file's meaning changed them), or
``unexpected:<type>`` (any other exception).
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import io
import json
import math
import random
import shutil
import struct
import tempfile
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.cli import main as cli_main
from xarray_hurray.container import ContainerReader, verify_file
from xarray_hurray.container.checksum import crc32c
from xarray_hurray.container.format import (
    HEADER_SIZE,
    INDEX_ENTRY,
    PAGE_ENTRIES,
    PAGE_REFERENCE,
    PREFIX,
    REFERENCE,
    SLOT,
    SLOT_SIZE,
)
from xarray_hurray.container.index import page_counts, unpack_page
from xarray_hurray.container.metadata import VariableMeta, parse_metadata
from xarray_hurray.errors import HurrayError
from xarray_hurray.io import FileObjectSource
from xarray_hurray.zarr.references import UnreferenceableWarning, kerchunk_references

CAP = 64 * 2**20
"""``max_chunk_bytes`` of every read: the documented cap a fuzzed file may make a
reader allocate per decoded chunk."""

XARRAY_ERRORS = ("unable to decode time units", "time values outside range of 64 bit")
"""Messages of the xarray errors docs/reliability.md lists as remaining xarray's."""


def place_crc(kind: bytes, path: str, values: list[int] | tuple[int, ...] = ()) -> int:
    """The CRC-32C of the key of a place, made as docs/spec/container.md ("Checksums
    bound to their place") says, apart from the package's own: ``kind`` (``b"C"``,
    ``b"P"`` or ``b"T"``), the UTF-8 path's length as u32, the path, each value as u64."""
    name = path.encode("utf-8", "surrogatepass")
    key = kind + struct.pack("<I", len(name)) + name
    return crc32c(key + b"".join(struct.pack("<Q", v) for v in values))


def _coordinates(ids: np.ndarray, grid_shape: tuple[int, ...]) -> list[list[int]]:
    """The grid coordinates of the chunks of row-major numbers ``ids``."""
    if not grid_shape:  # a scalar's one chunk
        return [[] for _ in ids]
    return np.stack(np.unravel_index(ids, grid_shape), axis=1).tolist()


def _chunk_count(var: Any, fallback: int) -> int:
    """Chunks of a (maybe mutated) variable description, or ``fallback``."""
    try:
        count = math.prod(
            -(-int(n) // int(c)) for n, c in zip(var["shape"], var["chunks"], strict=True)
        )
    except Exception:  # any mutated shape: keep the chunks there are
        return fallback
    return count if 0 <= count <= 10_000 else fallback


# ---------------------------------------------------------------- mutations

HOSTILE: list[Any] = [-1, 0, 1, 2, 3, 7, 31, 64, 2**31, 2**32 + 1, 2**63, 10**30, 0.5, -0.0]
HOSTILE += [True, False, None, "", "x", "zstd", "U1\n", "S1\n", "U536870911", "string"]
HOSTILE += [[], [0], [1, 1], [2**40], [None], {}, {"id": "zlib", "level": 99}]
HOSTILE += [{"id": "blosc", "cname": "nope"}, {"name": "morton", "morton_bits": [31]}]
HOSTILE += [{"name": "hilbert", "hilbert_rank": 2, "hilbert_order": True}]
HOSTILE += [{"dtype": "U536870911", "shape": [], "data": ["a"]}]
HOSTILE += [{"dtype": "float64", "shape": [3], "data": ["NaN", 1, "Infinity"]}]
HOSTILE += [{"curve": "hilbert", "axes": None}, {"curve": "morton", "axes": [0, 0]}]
HOSTILE += ["\ud800", "days since 2000-01-01", "rot13", [[]] * 1000, "[" * 40]
"""Values put into the metadata in place of others."""

CF_KEYS = ["_FillValue", "missing_value", "scale_factor", "add_offset", "units", "calendar"]
CF_KEYS += ["_Encoding", "_Unsigned", "coordinates", "dtype"]


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``obj``."""
    found = [prefix]
    if isinstance(obj, dict):
        for key, value in obj.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj[:50]):
            found += _paths(value, (*prefix, i))
    return found


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def _tweak(value: Any, rng: random.Random) -> Any:
    """A nearby or differently typed value."""
    if isinstance(value, bool):
        return not value if rng.random() < 0.5 else int(value)
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, value * 2, 0, -value, value + 2**32, 2**63])
    if isinstance(value, float):
        return rng.choice([value * 1e300, -value, int(value), str(value)])
    if isinstance(value, str):
        return rng.choice([value + "\n", value[:-1], value.upper(), value * 2, 5])
    if isinstance(value, list):
        return rng.choice([value[:-1], [*value, value[-1] if value else 0], value[::-1], None])
    return rng.choice(HOSTILE)


def mutate_metadata(parsed: Tree, rng: random.Random) -> str:
    """Change one value (or key) of the metadata; the kind of change."""
    meta = parsed.meta
    paths = [p for p in _paths(meta) if p]
    path = rng.choice(paths)
    parent, key = _get(meta, path[:-1]), path[-1]
    roll = rng.random()
    if roll < 0.45:
        parent[key] = _tweak(parent[key], rng)
        return "meta:tweak"
    if roll < 0.8:
        parent[key] = copy.deepcopy(rng.choice(HOSTILE))
        return "meta:replace"
    if roll < 0.9 and isinstance(parent, dict):
        del parent[key]
        return "meta:delete"
    variables = [v for v in _json_variables(meta) if isinstance(v, dict) and "attrs" in v]
    target = rng.choice(variables)["attrs"] if variables else meta["attrs"]
    target[rng.choice(CF_KEYS)] = copy.deepcopy(rng.choice(HOSTILE))
    return "meta:cf-attr"


def _bomb(rng: random.Random) -> bytes:
    zeros = bytes(rng.choice([2**16, 2**20, 2**22]))
    zstd = numcodecs.Zstd()
    return rng.choice(
        [
            bytes(zstd.encode(zeros)),
            bytes(zstd.encode(b"ab")) + bytes(zstd.encode(zeros)),
            bytes(zstd.encode(b"ab")) + b"\x50\x2a\x4d\x18\x04\x00\x00\x00abcd",
            zlib.compress(zeros, 9),
            bytes(numcodecs.LZ4().encode(zeros)),
            bytes(numcodecs.Blosc().encode(zeros)),
            struct.pack("<I", 2**31) + b"\0" * 8,
        ]
    )


def mutate_chunk(parsed: Tree, rng: random.Random) -> str:
    """Replace the bytes of one chunk."""
    live = [i for i, chunks in enumerate(parsed.chunks) if chunks]
    var = rng.choice(live)
    chunks = parsed.chunks[var]
    j = rng.randrange(len(chunks))
    data = chunks[j]
    others = [c for blobs in parsed.chunks for c in blobs]
    choice = rng.randrange(7)
    if choice == 0 and data:
        chunks[j] = data[: rng.randrange(len(data))]
    elif choice == 1:
        chunks[j] = data + bytes(rng.randint(1, 8))
    elif choice == 2 and data:
        flipped = bytearray(data)
        flipped[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        chunks[j] = bytes(flipped)
    elif choice == 3:
        chunks[j] = rng.choice(others)
    elif choice == 4:
        chunks[j] = rng.randbytes(len(data))
    else:
        chunks[j] = _bomb(rng)
    return "chunk"


def _shuffled(obj: Any, rng: random.Random) -> Any:
    """``obj`` with the keys of every object in another order."""
    if isinstance(obj, dict):
        items = list(obj.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(obj, list):
        return [_shuffled(v, rng) for v in obj]
    return obj


def mutant(good: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One mutated, resealed file made from ``good``, and the kind of its change."""
    tree = parse(good)
    pyramid = any(key in tree.meta["attrs"] for key in PYRAMID_ATTRS)
    if pyramid and rng.random() < 0.5:
        kind = mutate_pyramid_attrs(tree, rng)
    else:
        kind = rng.choice(MUTATORS)(tree, rng)
    return kind, build(tree)


# ---------------------------------------------------------------- the file taken apart

Edit = tuple[str, int, int, str, str, int]
"""A change to a laid-out field: (structure, variable, item, field, operation,
operand); structure "entry" (item: page position), "table" (item: page), "root"
(item 0) or "bitmap" (item: page; field "bit", operation "flip", operand: the bit's
position on the page); operation "add" (to the laid-out value) or "set"."""

SLOT_FIELDS = ["generation", "meta_offset", "meta_length", "root_offset", "root_length"]
SLOT_FIELDS += ["file_length", "meta_crc", "root_crc", "reserved"]


@dataclass
class Tree:
    """A file taken apart: the active slot's fields, the other slot's bytes, the
    metadata, the stored bytes of every chunk per variable (in variable number order)
    by placement position (``b""``: a missing chunk), and how the parts lie.

    Edits and the choices below are applied by :func:`build` after laying out, so
    that every checksum above an edit is computed over the edited bytes, bound to
    the place of its part as the (maybe changed) metadata names it."""

    prefix: list[Any]
    slot: list[int]
    active: int
    other: bytes
    meta: Any
    chunks: list[list[bytes]]
    pages_front: bool
    """Index pages right after the page tables (the writer's choice when they fit in
    the first 64 KiB), or after the chunks."""
    empty_pages: bool
    """Pages that hold no stored chunk are stored (a bitmap of zeros) rather than left
    out."""
    tail: bytes = b""
    """Bytes after the end of the version: the trace of a commit that did not complete."""
    edits: list[Edit] = field(default_factory=list)
    slot_edits: list[tuple[int, str, int]] = field(default_factory=list)
    """(field number of :data:`SLOT_FIELDS`, operation, operand) on the active slot."""
    seal_slot: bool = True
    """False: the active slot's checksum is left wrong (a torn slot)."""
    other_kind: str = ""
    """How the other slot is made from the active one: "" (``other`` as it is),
    "older" (a valid slot of the generation before), "same" (of the same generation)
    or "newer" (of the next generation, with ``other_edit`` applied)."""
    other_edit: tuple[int, str, int] | None = None
    padding: int = 0
    """Zeros after the page tables and the pages in front of the chunks: the room the
    head keeps for pages that took less or went after the chunks."""
    order: list[int] = field(default_factory=list)
    """The variables in the order their chunks lie in the file (the writer places the
    coordinates first); variables not listed follow in variable number order."""
    moved: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    """Chunks put in another place with the checksum of the place they came from, as
    a change of index entries (not of chunk bytes) leaves them: by (variable,
    position) of the chunk now, (variable, position) of the place whose checksum its
    entry keeps."""


def _json_variables(meta: Any) -> list[Any]:
    """The variable objects of (maybe mutated) metadata in variable number order: each
    group's own variables, then its child groups, depth first."""
    found: list[Any] = []
    stack = [meta]
    while stack:
        group = stack.pop()
        if not isinstance(group, dict):
            continue
        variables, groups = group.get("variables"), group.get("groups")
        found += variables if isinstance(variables, list) else []
        stack += reversed(groups) if isinstance(groups, list) else []
    return found


def swap_chunks(tree: Tree, first: tuple[int, int], second: tuple[int, int]) -> None:
    """Put the chunks at ``first`` and ``second`` (variable, position) in each other's
    place, each with the checksum its own place gave it: what exchanging two index
    entries (or the root entries of two variables, chunk by chunk) does."""
    (v, k), (w, j) = first, second
    tree.chunks[v][k], tree.chunks[w][j] = tree.chunks[w][j], tree.chunks[v][k]
    was = dict(tree.moved)
    tree.moved[first], tree.moved[second] = was.get(second, second), was.get(first, first)


def parse(blob: bytes) -> Tree:
    """The parts of the valid file ``blob``."""
    prefix = list(PREFIX.unpack_from(blob))
    slots = [list(SLOT.unpack_from(blob, PREFIX.size + k * SLOT_SIZE)) for k in (0, 1)]
    used = [
        k
        for k in (0, 1)
        if any(blob[PREFIX.size + k * SLOT_SIZE : PREFIX.size + (k + 1) * SLOT_SIZE])
    ]
    active = max(used, key=lambda k: slots[k][0])  # a valid seed: the newer slot
    other = blob[PREFIX.size + (1 - active) * SLOT_SIZE :][:SLOT_SIZE]
    slot = slots[active]
    meta = json.loads(blob[slot[1] : slot[1] + slot[2]])
    variables = parse_metadata(blob[slot[1] : slot[1] + slot[2]]).all_variables()
    root = np.frombuffer(blob, REFERENCE, len(variables), slot[3])
    chunks, page_at, chunk_at, empty_pages = [], [], [], False
    first: dict[int, int] = {}  # by variable number: where its chunks begin
    tables_end, page_bytes = slot[3] + slot[4], 0
    for (path, var), ref in zip(variables, root, strict=True):
        counts = page_counts(var.chunk_count)
        table = (
            np.frombuffer(blob, PAGE_REFERENCE, len(counts), int(ref["offset"]))
            if len(counts)
            else []
        )
        tables_end += len(counts) * PAGE_REFERENCE.itemsize
        own = []
        for number, (count, page) in enumerate(zip(counts.tolist(), table, strict=True)):
            entries = np.zeros(count, INDEX_ENTRY)
            if page["offset"]:
                length = int(page["length"])
                entries = unpack_page(
                    blob[int(page["offset"]) : int(page["offset"]) + length],
                    count,
                    length=length,
                    crc=int(page["crc32c"]) ^ place_crc(b"P", path, [number]),
                    what="a seed page",
                    file_length=len(blob),
                )
                page_at.append(int(page["offset"]))
                page_bytes += length
                empty_pages |= not entries["size"].any()
            at = [int(e["offset"]) for e in entries if e["size"]]
            if at:
                first[len(chunks)] = min(first.get(len(chunks), at[0]), *at)
            chunk_at += at
            own += [blob[int(e["offset"]) : int(e["offset"] + e["size"])] for e in entries]
        chunks.append(own)
    front = bool(page_at) and (not chunk_at or min(page_at) < min(chunk_at))
    first_chunk = min(chunk_at) if chunk_at else slot[5] - (0 if front else page_bytes)
    padding = first_chunk - tables_end - (page_bytes if front else 0)
    tail = blob[slot[5] :]
    return Tree(
        prefix,
        slot,
        active,
        other,
        meta,
        chunks,
        front,
        empty_pages,
        tail,
        padding=padding,
        order=sorted(first, key=first.__getitem__),
    )


def _apply(value: int, operation: str, operand: int, bits: int) -> int:
    return (value + operand if operation == "add" else operand) % 2**bits


def _places(meta_bytes: bytes, laid: list[list[bytes]]) -> list[tuple[str, list[int]]]:
    """The path of each variable of the (maybe changed) metadata and the place of the
    chunk at each of its placement positions (:func:`place_crc`), as a reader takes
    them from that metadata; none where it reads none (metadata it refuses, a grid of
    another number of chunks): there the checksums are left unbound."""
    try:
        variables = parse_metadata(meta_bytes).all_variables()
    except Exception:  # whatever a reader refuses, it refuses before any place
        variables = []
    found = []
    for v, own in enumerate(laid):
        path, var = variables[v] if v < len(variables) else ("", None)
        places = [0] * len(own)
        if isinstance(var, VariableMeta) and var.chunk_count == len(own) and own:
            coordinates = _coordinates(var.chunk_ids(np.arange(len(own))), var.grid_shape)
            places = [place_crc(b"C", path, c) for c in coordinates]
        found.append((path, places))
    return found


def build(tree: Tree) -> bytes:
    """The file of ``tree``: header, metadata, root, page tables, then pages and chunks
    (in the order ``tree.pages_front`` says, with ``tree.padding`` zeros before the
    chunks), edits applied, every checksum above them recomputed and bound to its
    place."""
    meta_bytes = json.dumps(tree.meta, separators=(",", ":")).encode()
    variables = _json_variables(tree.meta)
    laid: list[list[bytes]] = []  # per variable: chunk bytes by placement position
    for i, var in enumerate(variables):
        own = tree.chunks[min(i, len(tree.chunks) - 1)] if tree.chunks else []
        count = _chunk_count(var, len(own))
        laid.append(
            own if count == len(own) else [own[j % len(own)] if own else b"" for j in range(count)]
        )
    places = _places(meta_bytes, laid)
    root_offset = HEADER_SIZE + len(meta_bytes)
    position = root_offset + REFERENCE.itemsize * len(laid)
    table_offsets = []
    for own in laid:
        table_offsets.append(position)
        position += -(-len(own) // PAGE_ENTRIES) * PAGE_REFERENCE.itemsize

    def stored(own: list[bytes], page: int) -> bool:
        return tree.empty_pages or any(own[page * PAGE_ENTRIES : (page + 1) * PAGE_ENTRIES])

    def page_length(rows: list[bytes]) -> int:
        """Bytes of a page of chunks ``rows``: a bitmap and the entries of the stored
        chunks."""
        return -(-len(rows) // 8) + sum(map(bool, rows)) * INDEX_ENTRY.itemsize

    def place_pages(position: int) -> int:
        for own, offsets in zip(laid, pages, strict=True):
            for page in range(len(offsets)):
                if stored(own, page):
                    offsets[page] = position
                    position += page_length(own[page * PAGE_ENTRIES : (page + 1) * PAGE_ENTRIES])
        return position

    def chunk_place(v: int, k: int) -> int:
        """The place whose checksum the entry of the chunk at ``(v, k)`` holds."""
        w, j = tree.moved.get((v, k), (v, k))
        own = places[w][1] if w < len(places) else []
        return own[j] if j < len(own) else 0

    pages = [[0] * -(-len(own) // PAGE_ENTRIES) for own in laid]
    if tree.pages_front:
        position = place_pages(position)
    position += tree.padding
    entries = [np.zeros(len(own), INDEX_ENTRY) for own in laid]
    listed = [v for v in tree.order if v < len(laid)]
    for v in listed + [v for v in range(len(laid)) if v not in listed]:
        for k, data in enumerate(laid[v]):
            if data:
                entries[v][k] = (position, len(data), crc32c(data) ^ chunk_place(v, k))
                position += len(data)
    if not tree.pages_front:
        position = place_pages(position)
    file_length = position
    blob = bytearray(position)
    blob[HEADER_SIZE:root_offset] = meta_bytes
    for own, table in zip(laid, entries, strict=True):
        for k, data in enumerate(own):
            if data:
                blob[int(table[k]["offset"]) : int(table[k]["offset"]) + len(data)] = data
    blob += tree.tail

    def crc_at(offset: int, length: int) -> int:
        return crc32c(bytes(blob[offset : offset + length])) if offset + length <= len(blob) else 0

    def edit(structure: str, rows: np.ndarray, var: int, place: Any) -> None:
        """Apply the edits of ``structure`` to ``rows`` (the references or entries of
        variable ``var``); an edited reference gets the checksum of its new range,
        bound to ``place(item)``."""
        for kind, v, item, name, operation, operand in tree.edits:
            if kind != structure or v != var or item >= len(rows):
                continue
            bits = 32 if name in ("crc32c", "length") else 64
            rows[item][name] = _apply(int(rows[item][name]), operation, operand, bits)
            if name != "crc32c":
                if structure == "entry":
                    length = int(rows[item]["size"])
                elif structure == "table":
                    length = int(rows[item]["length"])
                else:
                    length = len(laid_tables[var])
                if rows[item]["offset"] and length:
                    crc = crc_at(int(rows[item]["offset"]), length)
                    rows[item]["crc32c"] = crc ^ place(item)

    def page_bytes(rows: np.ndarray, own: list[bytes], v: int, page: int) -> bytes:
        """The laid-out bytes of a page of entries ``rows`` (chunks ``own``): the
        bitmap says which chunks are stored (whatever an edit made of their entries)
        and lists their entries; bitmap edits flip its bits."""
        mask = np.array([bool(data) for data in own], dtype=bool)
        bitmap = bytearray(np.packbits(mask, bitorder="little").tobytes())
        for kind, edited, item, _, _, operand in tree.edits:
            if kind == "bitmap" and edited == v and item == page and operand < 8 * len(bitmap):
                bitmap[operand // 8] ^= 1 << (operand % 8)
        return bytes(bitmap) + rows[mask].tobytes()

    root = np.zeros(len(laid), REFERENCE)
    laid_tables: list[bytes] = []
    for v, (table, offsets) in enumerate(zip(entries, pages, strict=True)):
        path = places[v][0]
        edit("entry", table, v, lambda k, v=v: chunk_place(v, k))
        refs = np.zeros(len(offsets), PAGE_REFERENCE)
        for page, offset in enumerate(offsets):
            rows = slice(page * PAGE_ENTRIES, (page + 1) * PAGE_ENTRIES)
            data = page_bytes(table[rows], laid[v][rows], v, page)
            if offset:
                blob[offset : offset + len(data)] = data
                crc = crc32c(data) ^ place_crc(b"P", path, [page])
                refs[page] = (offset, len(data), crc)
        edit("table", refs, v, lambda page, path=path: place_crc(b"P", path, [page]))
        laid_tables.append(refs.tobytes())
        blob[table_offsets[v] : table_offsets[v] + refs.nbytes] = refs.tobytes()
        if len(refs):
            root[v] = (table_offsets[v], crc32c(refs.tobytes()) ^ place_crc(b"T", path))
        # a view: edits reach ``root``
        edit("root", root[v : v + 1], v, lambda _, path=path: place_crc(b"T", path))
    blob[root_offset : root_offset + root.nbytes] = root.tobytes()
    fields = [tree.slot[0], HEADER_SIZE, len(meta_bytes), root_offset, root.nbytes]
    fields += [file_length, 0, 0, 0]
    edited = set()
    for index, operation, operand in tree.slot_edits:
        fields[index] = _apply(fields[index], operation, operand, 32 if index >= 6 else 64)
        edited.add(index)
    if 6 not in edited:
        fields[6] = crc_at(fields[1], fields[2])
    if 7 not in edited:
        fields[7] = crc_at(fields[3], fields[4])
    prefix = PREFIX.pack(*tree.prefix)

    def sealed(fields: list[int], good: bool = True) -> bytes:
        body = SLOT.pack(*fields)
        return body + struct.pack("<I", crc32c(prefix + body) ^ (0 if good else 1))

    other = tree.other
    if tree.other_kind:
        step = {"older": -1, "same": 0, "newer": 1}[tree.other_kind]
        copy_of = [(fields[0] + step) % 2**64, *fields[1:]]
        if tree.other_edit is not None:
            index, operation, operand = tree.other_edit
            copy_of[index] = _apply(copy_of[index], operation, operand, 32 if index >= 6 else 64)
        other = sealed(copy_of)
    slots = [other, sealed(fields, tree.seal_slot)]
    if tree.active == 0:
        slots.reverse()
    blob[:HEADER_SIZE] = prefix + b"".join(slots)
    return bytes(blob)


def mutate_slot(tree: Tree, rng: random.Random) -> str:
    """Change one field of the active slot, or its seal, or the header prefix."""
    roll = rng.random()
    if roll < 0.1:
        tree.seal_slot = False
        if rng.random() < 0.5:
            tree.tail = rng.randbytes(rng.choice([1, 64, 4096]))
        return "slot:torn"
    if roll < 0.2:
        index = rng.randrange(1, 4)
        tree.prefix[index] = rng.choice([0, 1, 2, 3, 2**16 - 1, 2**32 - 1]) % (
            2**32 if index == 3 else 2**16
        )
        return "slot:prefix"
    index = rng.randrange(len(SLOT_FIELDS))
    operation = rng.choice(["add", "set"])
    operand = rng.choice(
        [1, -1, 12, -12, 20, -20, 64, 2**32, 2**63]
        if operation == "add"
        else [0, 1, HEADER_SIZE, 2**31, 2**63 - 1, 2**64 - 1]
    )
    tree.slot_edits.append((index, operation, operand))
    return f"slot:{SLOT_FIELDS[index]}"


def mutate_other_slot(tree: Tree, rng: random.Random) -> str:
    """Make the other slot a valid slot of the same or the next generation (this one
    with a field changed), or damage it, with or without bytes after the version."""
    kind = rng.choice(["same", "newer", "newer", "damaged"])
    if kind == "damaged":
        tree.other = rng.randbytes(SLOT_SIZE)
        tree.tail = rng.choice([b"", rng.randbytes(100)])
        return "other-slot:damaged" + ("+tail" if tree.tail else "")
    tree.other_kind = kind
    if kind == "newer":
        index = rng.randrange(1, len(SLOT_FIELDS))
        tree.other_edit = (index, "add", rng.choice([1, -1, 12, -12, 20, 2**32]))
    return f"other-slot:{kind}"


def _live(tree: Tree) -> list[int]:
    return [v for v, own in enumerate(tree.chunks) if own]


def mutate_index(tree: Tree, rng: random.Random) -> str:
    """Change one field of a root entry, a page table entry or an index entry, or make
    a stored chunk missing, a page's length or a bit of its bitmap."""
    v = rng.choice(_live(tree))
    own = tree.chunks[v]
    if rng.random() < 0.4:
        return _mutate_page(tree, rng, v)
    roll = rng.random()
    if roll < 0.15:
        if rng.random() < 0.4:
            # no page table (offset 0, crc32c 0) for a variable with pages, which the
            # spec allows only for one without chunks; with, or without, its grid grown
            # past what any page table in the file could hold
            tree.edits += [("root", v, 0, "offset", "set", 0), ("root", v, 0, "crc32c", "set", 0)]
            var = _json_variables(tree.meta)[v]
            if rng.random() < 0.5 and var.get("shape"):
                var["shape"][0] = 2 ** rng.choice([36, 40, 62])
                var["dims"][0] += "-giant"  # a dimension of its own, of that length
                return "root:none-giant"
            return "root:none"
        tree.edits.append(
            ("root", v, 0, rng.choice(["offset", "crc32c"]), "add", rng.choice([1, -12, 12, 2**32]))
        )
        return "root"
    if roll < 0.3:
        page = rng.randrange(-(-len(own) // PAGE_ENTRIES))
        name = rng.choice(["offset", "offset", "crc32c"])
        operation = rng.choice(["add", "set"])
        operand = (
            rng.choice([1, -20, 20, 4096]) if operation == "add" else rng.choice([0, 1, 2**63])
        )
        tree.edits.append(("table", v, page, name, operation, operand))
        return "table"
    stored = [k for k, data in enumerate(own) if data]
    if roll < 0.4 and stored:  # a valid change of meaning: the chunk reads as the fill
        k = rng.choice(stored)
        own[k] = b""
        return "entry:now-missing"
    k = rng.choice(stored or range(len(own)))
    name = rng.choice(["offset", "size"])
    size = len(own[k])
    tree.edits.append(
        ("entry", v, k, name, "add", rng.choice([1, -1, 4, -4, size, -size, 2**32, 2**63]))
    )
    return f"entry:{name}"


def _mutate_page(tree: Tree, rng: random.Random, v: int) -> str:
    """Change a page of variable ``v``: its recorded length (the checksum taken
    over the new range), a bit of its bitmap (of a stored chunk, a missing one or a
    padding bit past its positions), or make a listed entry empty."""
    own = tree.chunks[v]
    # a page that is laid out: one holding a stored chunk, unless empty pages are too
    laid_out = [
        p
        for p in range(-(-len(own) // PAGE_ENTRIES))
        if tree.empty_pages or any(own[p * PAGE_ENTRIES : (p + 1) * PAGE_ENTRIES])
    ]
    if not laid_out:  # every page absent: give one a length
        tree.edits.append(("table", v, 0, "length", "set", rng.choice([1, 20, 20608])))
        return "page:absent-length"
    page = rng.choice(laid_out)
    positions = own[page * PAGE_ENTRIES : (page + 1) * PAGE_ENTRIES]
    roll = rng.random()
    if roll < 0.35:
        operation = rng.choice(["add", "add", "set"])
        operand = (
            rng.choice([1, -1, 20, -20, 128, 2**31])
            if operation == "add"
            else rng.choice([0, 1, 20609, 2**32 - 1])
        )
        tree.edits.append(("table", v, page, "length", operation, operand))
        return "page:length"
    if roll < 0.8:
        padding = -(-len(positions) // 8) * 8 - len(positions)
        stored = [j for j, data in enumerate(positions) if data]
        missing = [j for j, data in enumerate(positions) if not data]
        choice = rng.choice(["stored", "missing", "padding"])
        pool = {"stored": stored, "missing": missing}.get(
            choice, list(range(len(positions), len(positions) + padding))
        )
        if not pool:
            return _mutate_page(tree, rng, v)
        tree.edits.append(("bitmap", v, page, "bit", "flip", rng.choice(pool)))
        return f"page:bitmap-{choice}"
    k = rng.choice([j for j, data in enumerate(own) if data])
    tree.edits.append(("entry", v, k, "size", "set", 0))
    return "page:entry-size-0"


def mutate_places(tree: Tree, rng: random.Random) -> str:
    """Put valid chunks in another place, each with the checksum of the place it came
    from, as exchanged index entries leave them: two chunks of a variable, or every
    chunk of two variables of as many chunks (what exchanging their root entries
    gives the chunks).  A reader must refuse what it reads of them."""
    live = [v for v, own in enumerate(tree.chunks) if sum(map(bool, own)) >= 2]
    if rng.random() < 0.5:
        pairs = [
            (v, w)
            for v in range(len(tree.chunks))
            for w in range(v + 1, len(tree.chunks))
            if len(tree.chunks[v]) == len(tree.chunks[w]) and any(tree.chunks[v])
        ]
        if pairs:
            v, w = rng.choice(pairs)
            for k in range(len(tree.chunks[v])):
                swap_chunks(tree, (v, k), (w, k))
            return "places:variables"
    v = rng.choice(live)
    k, j = rng.sample([k for k, data in enumerate(tree.chunks[v]) if data], 2)
    swap_chunks(tree, (v, k), (v, j))
    return "places:chunks"


def preserve(tree: Tree, rng: random.Random) -> str:
    """A change that keeps the file's meaning: the metadata's keys in another order,
    the pages before or after the chunks, pages of missing chunks stored or left out,
    the other slot an older version, or bytes after the version (with the other slot
    torn, as an interrupted commit leaves it)."""
    kind = rng.choice(["keys", "pages", "empty-pages", "older", "tail"])
    if kind == "keys":
        tree.meta = _shuffled(tree.meta, rng)
    if kind == "pages":
        tree.pages_front = not tree.pages_front
    elif kind == "empty-pages":
        tree.empty_pages = not tree.empty_pages
    elif kind == "older":
        tree.other_kind = "older"
    else:
        tree.tail = rng.randbytes(rng.choice([1, 100, 5000]))
        tree.other = rng.randbytes(SLOT_SIZE) if rng.random() < 0.5 else tree.other
    return "preserving"


NAMES = [".", "..", "...", "a/../b", "./g", "", "/", "g/k", " ", "x y", "x+y%20\u00e9", "__x__"]
NAMES += ["\u00e9" * 200, "NaN", "\ud800"]
"""Names of groups and variables: ones a path reads as another group (``.``, ``..``),
the separator, the empty name, text that URLs and Zarr keys must escape."""


def _json_groups(meta: Any) -> list[Any]:
    """The group objects below the root of (maybe mutated) metadata, depth first."""
    found: list[Any] = []
    stack = [meta]
    while stack:
        group = stack.pop()
        if not isinstance(group, dict) or not isinstance(group.get("groups"), list):
            continue
        found += group["groups"]
        stack += reversed(group["groups"])
    return found


def mutate_names(tree: Tree, rng: random.Random) -> str:
    """Rename a group or a variable: one of :data:`NAMES`, or the
    name of another group or variable (a sibling's among them)."""
    nodes = [g for g in _json_groups(tree.meta) if isinstance(g, dict) and "name" in g]
    nodes += [v for v in _json_variables(tree.meta) if isinstance(v, dict) and "name" in v]
    target = rng.choice(nodes)
    taken = [n["name"] for n in nodes if n is not target]
    target["name"] = rng.choice(NAMES + taken)
    return "names:" + ("variable" if "dims" in target else "group")


PYRAMID_ATTRS = ("hurray_overviews", "multiscales", "zarr_conventions")
"""The root attributes of a file with overviews, each JSON text (docs/spec/overviews.md)."""

PYRAMID_TEXTS = ["", "not json", "[" * 100_000 + "]" * 100_000, "{" * 40, "[]", "{}", "null"]
PYRAMID_TEXTS += [json.dumps({"layout": [1, 2]}), json.dumps({"layout": [{"asset": "9"}]})]
PYRAMID_TEXTS += [json.dumps([[[]]] * 5000), json.dumps({"a": "x" * 2**21})]
PYRAMID_TEXTS += [json.dumps({"dims": ["y", "x"], "factors": [2**40], "resampling": {}})]
PYRAMID_TEXTS += [json.dumps({"dims": ["time"], "factors": [2], "resampling": {"t": "max"}})]
"""Texts put in place of a pyramid attribute's: deep, large, of many arrays, not the
convention's, or records a file's levels do not match."""

PYRAMID_VALUES: list[Any] = [[0], [2, 3], [4, 2], [2**40], [2**70], ["y", "y"], ["time"], []]
PYRAMID_VALUES += ["bilinear", "mode", {"asset": 0}, {"asset": "0"}, [{"asset": "1"}]]
"""Values put in place of one inside a pyramid attribute's JSON."""


def mutate_pyramid_attrs(tree: Tree, rng: random.Random) -> str:
    """Change the JSON text of one of the root's :data:`PYRAMID_ATTRS`: a value in it
    tweaked or replaced (factors, dimensions, resamplings, layout entries), or the
    whole text replaced by one of :data:`PYRAMID_TEXTS`."""
    attrs = tree.meta["attrs"]
    key = rng.choice(PYRAMID_ATTRS)
    try:
        value = json.loads(attrs[key])
    except (KeyError, TypeError, ValueError):
        value = None
    paths = [p for p in _paths(value) if p]
    if not paths or rng.random() < 0.25:
        attrs[key] = rng.choice(PYRAMID_TEXTS)
        return "pyramid:text"
    path = rng.choice(paths)
    parent, name = _get(value, path[:-1]), path[-1]
    if rng.random() < 0.5:
        parent[name] = _tweak(parent[name], rng)
    else:
        parent[name] = copy.deepcopy(rng.choice(PYRAMID_VALUES + HOSTILE))
    attrs[key] = json.dumps(value)
    return f"pyramid:{key}"


MUTATORS = [mutate_metadata, mutate_metadata, mutate_slot, mutate_other_slot]
MUTATORS += [mutate_index, mutate_index, mutate_chunk, mutate_chunk, preserve]
MUTATORS += [mutate_names, mutate_places]


# ---------------------------------------------------------------- a decoder of the index


class NotByTheSpec(Exception):
    """The index breaks a rule of docs/spec/container.md."""


def _json_paths(meta: dict) -> list[str]:
    """The path of every variable of valid metadata, in variable number order."""
    found: list[str] = []

    def visit(group: dict, prefix: str) -> None:
        found.extend(prefix + var["name"] for var in group["variables"])
        for child in group["groups"]:
            visit(child, prefix + child["name"] + "/")

    visit(meta, "")
    return found


def decode_index(blob: bytes) -> dict[int, dict[int, tuple[int, int, int]]]:
    """The stored chunks of every variable of the file ``blob``, by variable number and
    placement position: ``(offset, size, crc32c)`` as stored (bound to the chunk's
    place), read field by field as the spec's tables say, independently of the
    package's reader (its checksum function aside); page tables and pages checked
    against their places.  Raises :class:`NotByTheSpec` for an index a reader must
    refuse."""
    prefix = blob[:16]
    slots = []
    for at in (16, 80):
        fields = struct.unpack_from("<QQQQQQIII", blob, at)
        (stored,) = struct.unpack_from("<I", blob, at + 60)
        gen, m_off, m_len, r_off, r_len, length = fields[:6]
        inside = all(144 <= o and o + n <= length for o, n in ((m_off, m_len), (r_off, r_len)))
        if crc32c(prefix + blob[at : at + 60]) == stored and gen >= 1 and fields[8] == 0 and inside:
            slots.append(fields)
    if not slots:
        raise NotByTheSpec("no valid slot")
    gen, m_off, m_len, r_off, r_len, length, _, r_crc, _ = max(slots)
    meta = json.loads(blob[m_off : m_off + m_len])
    counts = [
        math.prod(-(-n // c) for n, c in zip(v["shape"], v["chunks"], strict=True))
        for v in _json_variables(meta)
    ]
    paths = _json_paths(meta)
    root = blob[r_off : r_off + r_len]
    if r_len != 12 * len(counts) or crc32c(root) != r_crc:
        raise NotByTheSpec("root")

    def inside(offset: int, size: int) -> bool:
        return 144 <= offset and offset + size <= length

    found: dict[int, dict[int, tuple[int, int, int]]] = {}
    for number, (count, path) in enumerate(zip(counts, paths, strict=True)):
        table_at, table_crc = struct.unpack_from("<QI", root, 12 * number)
        pages = -(-count // 1024)
        if table_at == 0:
            if table_crc != 0 or pages:
                raise NotByTheSpec(f"variable {number} has no page table")
            found[number] = {}
            continue
        if not inside(table_at, 16 * pages) or not pages:
            raise NotByTheSpec(f"page table of variable {number}")
        table = blob[table_at : table_at + 16 * pages]
        if crc32c(table) ^ place_crc(b"T", path) != table_crc:
            raise NotByTheSpec(f"page table checksum of variable {number}")
        chunks: dict[int, tuple[int, int, int]] = {}
        for page in range(pages):
            n = min(1024, count - 1024 * page)
            at, size, crc = struct.unpack_from("<QII", table, 16 * page)
            if at == 0:
                if crc or size:
                    raise NotByTheSpec(f"absent page {page} of variable {number}")
                continue
            if size < 1 or size > 20608 or not inside(at, size):
                raise NotByTheSpec(f"page {page} of variable {number} lies outside")
            data = blob[at : at + size]
            if crc32c(data) ^ place_crc(b"P", path, [page]) != crc:
                raise NotByTheSpec(f"page {page} checksum of variable {number}")
            bitmap = (n + 7) // 8
            bits = [size >= bitmap and data[j // 8] >> (j % 8) & 1 for j in range(8 * bitmap)]
            if size < bitmap or any(bits[n:]) or size != bitmap + 20 * sum(bits[:n]):
                raise NotByTheSpec(f"bitmap of page {page} of variable {number}")
            listed = [j for j in range(n) if bits[j]]
            rows = [struct.unpack_from("<QQI", data, bitmap + 20 * k) for k in range(len(listed))]
            if any(r[1] == 0 for r in rows):
                raise NotByTheSpec(f"an entry of size 0 on page {page} of variable {number}")
            for j, (offset, size, crc) in zip(listed, rows, strict=True):
                if not inside(offset, size):
                    raise NotByTheSpec(f"chunk {j} of page {page} of variable {number}")
                chunks[1024 * page + j] = (offset, size, crc)
        found[number] = chunks
    return found


def index_read(blob: bytes) -> dict[int, dict[int, tuple[int, int, int]]]:
    """What the package's reader lists as the stored chunks of every variable of the
    file ``blob``, as :func:`decode_index` gives them: each checksum the reader gives
    (the one the chunk's bytes must have) bound again to the chunk's place by
    :func:`place_crc`."""
    reader = ContainerReader(FileObjectSource(io.BytesIO(blob)), max_chunk_bytes=CAP)
    found = {}
    for number, (path, var) in enumerate(reader.metadata.all_variables()):
        found[number] = {}
        for positions, ids, entries in reader.stored_chunks(path):
            coordinates = _coordinates(ids, var.grid_shape)
            for p, c, e in zip(positions.tolist(), coordinates, entries, strict=True):
                crc = int(e["crc32c"]) ^ place_crc(b"C", path, c)
                found[number][int(p)] = (int(e["offset"]), int(e["size"]), crc)
    return found


# ---------------------------------------------------------------- running an input


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return a.tobytes() == b.tobytes()  # bit-exact: NaN payloads and -0.0 too
    return bool(np.array_equal(a, b))


def read_all(blob: bytes, verify_checksums: bool = True) -> dict[str, np.ndarray]:
    """Every variable of ``blob`` read whole, and each also as its first half along
    its first axis, which must agree."""
    reader = ContainerReader(
        FileObjectSource(io.BytesIO(blob)), verify_checksums=verify_checksums, max_chunk_bytes=CAP
    )
    out = {}
    for path, var in reader.metadata.all_variables():
        whole = reader.read(path)
        if var.shape and var.shape[0] > 1:
            half = (slice(0, var.shape[0] // 2),) + (slice(None),) * (len(var.shape) - 1)
            if not _same(reader.read(path, half), whole[half]):
                raise WrongValues(f"variable {path!r}: a region read differs from the whole")
        out[path] = whole
    return out


class WrongValues(Exception):
    """Two ways of reading disagree, or a meaning-preserving change changed values."""


def classify(err: BaseException) -> str:
    """``rejected`` for the documented errors, else ``unexpected:<type>``."""
    if isinstance(err, WrongValues):
        return "wrong"
    if isinstance(err, HurrayError):
        return "rejected"
    if isinstance(err, ValueError | OverflowError) and any(m in str(err) for m in XARRAY_ERRORS):
        return "rejected"
    return f"unexpected:{type(err).__name__}"


def pyramid_step() -> xr.Dataset:
    """The time step appended to a file of :func:`seed_pyramid`."""
    return seed_pyramid().isel(time=[0]).assign_coords(time=[2])


def _level_lengths(path: Path) -> tuple[list[str], set[int]]:
    """The root's groups of the file at ``path`` and the lengths of ``time`` in them."""
    with xr.open_datatree(path, engine="hurray", max_chunk_bytes=CAP) as tree:
        groups = sorted(tree.children)
        lengths = {node.sizes["time"] for node in tree.children.values() if "time" in node.sizes}
    return groups, lengths


def _raised_in_xarray(err: BaseException) -> bool:
    """Whether ``err`` was raised by xarray's own code (its innermost frame)."""
    frame = err.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    name = Path(frame.tb_frame.f_code.co_filename).parts if frame is not None else ()
    return "xarray" in name and "xarray_hurray" not in name


def run_pyramid(path: Path, work: Path) -> dict[str, str]:
    """The steps of a file with overviews: a level picked by the accessor, its
    references, and an append, which must extend every level alike (no level of
    another length, no new level) or leave the file as it was."""
    outcome: dict[str, str] = {}
    try:
        with xr.open_datatree(path, engine="hurray", max_chunk_bytes=CAP) as tree:
            tree.hurray.level(size={"x": 2}).load()
        outcome["level"] = "ok"
    except Exception as err:
        outcome["level"] = classify(err)
    try:
        reader = ContainerReader(FileObjectSource(io.BytesIO(path.read_bytes())))
        kerchunk_references(reader, path.as_uri())
        outcome["refs"] = "ok"
    except Exception as err:
        outcome["refs"] = classify(err)
    target = work / "append.hurray"
    shutil.copyfile(path, target)
    before = target.read_bytes()
    try:
        groups, _ = _level_lengths(target)
        xh.to_hurray(pyramid_step(), target, append_dim="time")
        after, lengths = _level_lengths(target)
        if after != groups or len(lengths) > 1:
            raise WrongValues(f"an append left levels {after} of time lengths {lengths}")
        outcome["append"] = "ok"
    except Exception as err:
        # xarray's CF encoder refuses attributes its decoder took, as in the write
        by_xarray = not isinstance(err, HurrayError | WrongValues) and _raised_in_xarray(err)
        outcome["append"] = (
            f"refused-by-xarray:{type(err).__name__}" if by_xarray else classify(err)
        )
        if outcome["append"] != "wrong" and target.read_bytes() != before:
            outcome["append"] = "unexpected:a-refused-append-changed-the-file"
    target.unlink()
    return outcome


def run_input(
    blob: bytes, kind: str, truth: dict[str, np.ndarray], work: Path, pyramid: bool = False
) -> dict[str, str]:
    """Every way of reading ``blob`` (and a write of what xarray read; with ``pyramid``,
    the steps of :func:`run_pyramid`): the outcome of each step, ``ok``,
    ``rejected`` or a finding."""
    outcome: dict[str, str] = {}
    values: dict[str, np.ndarray] | None = None
    try:
        values = read_all(blob)
        trusted = read_all(blob, verify_checksums=False)
        if any(not _same(values[k], trusted[k]) for k in values):
            raise WrongValues("reads with and without chunk checksums differ")
        if kind == "preserving" and (
            values.keys() != truth.keys() or any(not _same(values[k], truth[k]) for k in truth)
        ):
            raise WrongValues("a change that keeps the meaning changed the values")
        # the index as the reader took it, against the spec's own decoding of it
        try:
            expected = decode_index(blob)
        except NotByTheSpec as err:
            raise WrongValues(f"the reader read an index the spec refuses: {err}") from err
        if index_read(blob) != expected:
            raise WrongValues("the stored chunks the reader lists differ from the spec's")
        outcome["read"] = "ok"
    except Exception as err:
        outcome["read"] = classify(err)
    try:
        problems = verify_file(io.BytesIO(blob), max_chunk_bytes=CAP)
        outcome["verify"] = "ok" if not problems else "rejected"
        if not problems and outcome["read"] == "rejected":
            outcome["verify"] = "unexpected:verify-passed-a-file-reads-reject"
    except Exception as err:
        outcome["verify"] = classify(err)
    try:
        outcome["references"] = references_outcome(blob)
    except Exception as err:
        outcome["references"] = classify(err)
    path = work / "input.hurray"
    path.write_bytes(blob)
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            status = cli_main(["verify", str(path), "--max-chunk-bytes", str(CAP)])
        outcome["cli"] = "ok" if status == 0 else "rejected"
    except SystemExit as stop:
        outcome["cli"] = "ok" if stop.code == 0 else "rejected"
    except Exception as err:
        outcome["cli"] = classify(err)
    dataset: xr.Dataset | xr.DataTree | None = None
    try:
        with xr.open_datatree(path, engine="hurray", max_chunk_bytes=CAP) as tree:
            dataset = tree.load()  # every group
        outcome["xarray"] = "ok"
    except Exception as err:
        outcome["xarray"] = classify(err)
    if dataset is not None:
        written = work / "written"
        written.mkdir(exist_ok=True)
        try:
            xh.to_hurray(dataset, written / "w.hurray")
            outcome["write"] = "ok"
        except Exception as err:
            # a write may fail (xarray's CF encoder refuses attributes its decoder took:
            # conflicting fill values, odd time units); it must only leave no file
            outcome["write"] = "rejected" if isinstance(err, HurrayError) else "refused"
            outcome["write"] += (
                "" if isinstance(err, HurrayError) else f"-by-xarray:{type(err).__name__}"
            )
        left = [p.name for p in written.iterdir() if p.name != "w.hurray"]
        if left:
            outcome["write"] = "unexpected:temporary-file-left"
        for item in written.iterdir():
            item.unlink()
    if pyramid:
        outcome |= run_pyramid(path, work)
    return outcome


def references_outcome(blob: bytes) -> str:
    """``ok`` when the kerchunk references of ``blob`` are made and every key is a Zarr
    key: parts that are node names (not empty, not periods alone) and a last part of
    ``zarr.json`` or a chunk's coordinates."""
    reader = ContainerReader(FileObjectSource(io.BytesIO(blob)), max_chunk_bytes=CAP)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreferenceableWarning)  # left out, as documented
        refs = kerchunk_references(reader, "file:///input.hurray")["refs"]
    for key in refs:
        parts = key.split("/")
        if any(not part or not part.strip(".") for part in parts):
            return "unexpected:refs-key-names-another-node"
    return "ok"


def overall(outcome: dict[str, str]) -> str:
    """The class of an input: its worst step."""
    steps = set(outcome.values())
    if "wrong" in steps:
        return "wrong"
    unexpected = sorted(s for s in steps if s.startswith("unexpected"))
    if unexpected:
        return unexpected[0]
    refused = any(s == "rejected" or s.startswith("refused") for s in steps)
    return "rejected" if refused else "ok"


def seed_dataset() -> xr.Dataset:
    """Variables covering every codec and layout, text, typed and CF attributes, an
    edge chunk, a scalar and a zero-length variable."""
    rng = np.random.default_rng(11)
    return xr.Dataset(
        {
            "z": (("y", "x"), rng.standard_normal((6, 8)).astype("f4"), {"units": "K"}),
            "m": (("y", "x"), rng.integers(-9, 9, (6, 8)).astype("i2")),
            "l": (("y",), np.arange(6, dtype="i8")),
            "b": (("x",), rng.integers(0, 9, 8).astype("u1")),
            "s": (("k",), np.array(["", "ab", "héllo"], dtype=object)),
            "u": (("k",), np.array(["a", "bc", "d"], dtype="U2")),
            "f": ((), np.float64(2.5)),
            "e": (("n",), np.zeros(0, "f4")),
            "t": (("y",), np.arange(6, dtype="i4"), {"units": "days since 2000-01-01"}),
        },
        attrs={"title": "fuzz", "v": np.array([1.5, np.nan], dtype="f4"), "n": [1, "a"]},
    )


SEED_ENCODING = {
    "z": {"chunks": (4, 4), "codecs": "zstd"},
    "m": {"chunks": (3, 5), "codecs": "zlib", "layout": "morton"},
    "l": {"chunks": (4,), "codecs": "lz4"},
    "b": {"chunks": (4,), "codecs": "blosc"},
    "s": {"chunks": (2,), "codecs": "zlib"},
    "u": {"chunks": (2,), "codecs": None},
    "t": {"chunks": (4,), "codecs": None},
}


SEED_TREE = Path(__file__).parent / "data" / "fuzz_seed_1_3_tree.hurray"
"""The seed: :func:`seed_tree` with :data:`SEED_TREE_ENCODING`, written by the format
1.3 writer (``python tests/fuzz_structure.py`` writes it; the pages in the room the
head keeps for them, the rest of that room zeros) and kept as it is."""


def seed_tree() -> xr.DataTree:
    """:func:`seed_dataset` as the root group of a tree; below it a group ``g`` with a
    variable of 1296 one-element chunks (two index pages) of which four are stored,
    and a group ``g/k`` with a scalar string and a variable of missing chunks only."""
    holes = np.full((36, 36), np.nan, dtype="f4")
    holes[30:32, 2:4] = [[1.5, -0.0], [np.inf, 7.0]]
    return xr.DataTree.from_dict(
        {
            "/": seed_dataset(),
            "/g": xr.Dataset({"h": (("r", "c"), holes, {"units": "m"})}, attrs={"level": 1}),
            "/g/k": xr.Dataset({"s": ((), "hi"), "n": (("q",), np.full(3, np.nan))}),
        }
    )


SEED_TREE_ENCODING = {
    "/": SEED_ENCODING,
    "/g": {"h": {"chunks": (1, 1), "codecs": None}},
    "/g/k": {"n": {"chunks": (2,)}},
}


SEED_PYRAMID = Path(__file__).parent / "data" / "fuzz_seed_1_3_pyramid.hurray"
"""The seed of a file with overviews: :func:`seed_pyramid` written by the format 1.3
writer with ``overviews=[2, 4]`` and :data:`SEED_PYRAMID_ENCODING` (``python
tests/fuzz_structure.py pyramid`` writes it), kept as it is."""

SEED_PYRAMID_ENCODING = {"t": {"chunks": (1, 4, 4)}, "c": {"chunks": (1, 4, 4)}}


def seed_pyramid() -> xr.Dataset:
    """Two time steps of a float field with missing cells and of integer classes, on
    spatial coordinates: the mean and the mode at every level, and a time to append
    along."""
    rng = np.random.default_rng(13)
    values = rng.standard_normal((2, 8, 6)).astype("f4")
    values[0, :2, :2] = np.nan
    return xr.Dataset(
        {
            "t": (("time", "y", "x"), values, {"units": "K"}),
            "c": (("time", "y", "x"), rng.integers(0, 5, (2, 8, 6)).astype("i2")),
        },
        coords={"time": [0, 1], "y": np.arange(8.0), "x": np.arange(6.0)},
    )


SEEDS = {"tree": SEED_TREE, "pyramid": SEED_PYRAMID}
"""The seed files by name."""


def seed_file(name: str = "tree") -> bytes:
    """The bytes of the seed file ``name`` of :data:`SEEDS`: the tree (about 32 KB) or
    the file with overviews."""
    return SEEDS[name].read_bytes()


def work_directory() -> Path:
    """A scratch directory for the files of a run, removed when the process exits."""
    work = Path(tempfile.mkdtemp(prefix="hurray-fuzz-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    return work


def truth_of(good: bytes) -> dict[str, np.ndarray]:
    """What the seed holds, read by the container reader (checked against the dataset
    by the test suite's round-trip tests)."""
    return read_all(good)


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["pyramid"]:
        xh.to_hurray(seed_pyramid(), SEED_PYRAMID, overviews=[2, 4], encoding=SEED_PYRAMID_ENCODING)
    else:
        xh.to_hurray(seed_tree(), SEED_TREE, encoding=SEED_TREE_ENCODING)
