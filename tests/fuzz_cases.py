"""Small valid Hurray files and ways to damage them, for the fuzz and bit-flip tests
(and the longer harness in ``tools/fuzz_atheris.py``).

``reseal`` recomputes every checksum it can find after a mutation, bound to the
place of its part, so that damaged files reach the checks behind the checksums
(metadata rules, index ranges, codec frames) instead of stopping at the first
crc32c.
"""

from __future__ import annotations

import io
import json
import random
import struct
from pathlib import Path

import numpy as np
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import ContainerReader, VariableMeta, parse_metadata
from xarray_hurray.container.checksum import Places, crc32c
from xarray_hurray.container.format import (
    HEADER_SIZE,
    INDEX_ENTRY,
    PAGE_ENTRIES,
    PAGE_REFERENCE,
    PREFIX,
    REFERENCE,
    SLOT,
)
from xarray_hurray.io import FileObjectSource

SLOT_AT = PREFIX.size
"""Where slot 0, the slot a freshly written file uses, starts."""

HOSTILE_VALUES = [-1, 0, 1, 3, 2**31, 2**63, 2**64 + 5, 10**30, 1.5, -0.0, "", "x", "zstd"]
HOSTILE_VALUES += [None, True, [], [1], [2**40, 2**40], {}, {"id": "zlib"}, [[[[[[]]]]]]]
"""Values a JSON-level mutation puts into the metadata."""


def small_dataset() -> xr.Dataset:
    """Variables covering every codec, text, typed attributes and an edge chunk."""
    rng = np.random.default_rng(7)
    return xr.Dataset(
        {
            "z": (("y", "x"), rng.standard_normal((6, 8)).astype("f4")),
            "l": (("y",), np.arange(6, dtype="i2")),
            "b": (("x",), rng.integers(0, 9, 8).astype("u1")),
            "s": (("k",), np.array(["", "ab", "héllo"], dtype=object)),
            "r": (("x",), np.arange(8.0)),
        },
        attrs={"title": "fuzz", "v": np.array([1.5, np.nan], dtype="f4"), "n": [1, "a"]},
    )


ENCODING = {
    "z": {"chunks": (4, 4), "codecs": "zstd"},
    "l": {"chunks": (4,), "codecs": "lz4"},
    "b": {"chunks": (4,), "codecs": "blosc"},
    "s": {"chunks": (2,), "codecs": "zlib"},
    "r": {"chunks": (4,), "codecs": None},
}


def small_file(directory: Path) -> bytes:
    """The bytes of a valid file of :func:`small_dataset` (about 1.7 KB)."""
    path = Path(directory) / "small.hurray"
    xh.to_hurray(small_dataset(), path, encoding=ENCODING)
    return path.read_bytes()


def tiny_file(directory: Path) -> bytes:
    """The bytes of a valid file of two variables, compressed and not, with an edge
    chunk (a few hundred bytes: small enough to flip every bit)."""
    path = Path(directory) / "tiny.hurray"
    ds = xr.Dataset(
        {"v": (("y", "x"), np.arange(16.0, dtype="f4").reshape(4, 4)), "r": (("k",), [1, 2, 3])}
    )
    encoding = {"v": {"chunks": (2, 2), "codecs": "zstd"}, "r": {"chunks": (2,)}}
    xh.to_hurray(ds, path, encoding=encoding, codecs=None)
    return path.read_bytes()


def tiny_tree_file(directory: Path) -> bytes:
    """The bytes of a valid file of a tree of groups (a group in a group), with
    missing chunks, a page of missing chunks only and a scalar string: small enough
    to flip every bit."""
    path = Path(directory) / "tree.hurray"
    holes = np.full((4, 4), np.nan, dtype="f4")
    holes[:2, :2] = 1.5
    tree = xr.DataTree.from_dict(
        {
            "/": xr.Dataset({"v": (("y", "x"), holes)}),
            "/g/h": xr.Dataset({"s": ((), "hi"), "n": (("k",), np.full(3, np.nan))}),
        }
    )
    encoding = {"/": {"v": {"chunks": (2, 2)}}, "/g/h": {"n": {"chunks": (2,)}}}
    xh.to_hurray(tree, path, encoding=encoding, codecs=None)
    return path.read_bytes()


def appended_file(directory: Path) -> tuple[bytes, bytes]:
    """The bytes of a small file before and after one append (two versions, the
    first one's index and metadata left unreferenced by the second)."""
    path = Path(directory) / "appended.hurray"
    holes = np.full((2, 4), np.nan, dtype="f4")
    holes[0, :2] = 1.5
    first = xr.Dataset({"v": (("t", "x"), holes)}, coords={"t": [0, 1]})
    xh.to_hurray(first, path, encoding={"v": {"chunks": (1, 2)}}, codecs=None)
    before = path.read_bytes()
    more = xr.Dataset({"v": (("t", "x"), np.full((1, 4), 2.5, "f4"))}, coords={"t": [2]})
    xh.to_hurray(more, path, mode="a", append_dim="t")
    return before, path.read_bytes()


def unreferenced(blob: bytes) -> np.ndarray:
    """Which bytes of the valid file ``blob`` nothing references (the room the head
    keeps for pages that took less)."""
    reader = ContainerReader(FileObjectSource(io.BytesIO(blob)))
    header = reader.header
    parts = [(0, HEADER_SIZE), (header.metadata_offset, header.metadata_length)]
    parts.append((header.root_offset, header.root_length))
    for path, _ in reader.metadata.all_variables():
        parts += reader.index_parts(path)
        entries = reader.index(path)
        stored = entries[entries["size"] != 0]
        parts += zip(stored["offset"].tolist(), stored["size"].tolist(), strict=True)
    used = np.zeros(len(blob), dtype=bool)
    for offset, length in parts:
        used[offset : offset + length] = True
    return ~used


def read_everything(blob: bytes, verify_checksums: bool = True) -> dict[str, object]:
    """Open ``blob`` and read every variable (of every group) and attribute."""
    reader = ContainerReader(FileObjectSource(io.BytesIO(blob)), verify_checksums=verify_checksums)
    out: dict[str, object] = {"attrs": reader.metadata.attrs}
    for path, group in reader.metadata.walk():
        if path:
            out[path + "/.attrs"] = group.attrs
    for path, var in reader.metadata.all_variables():
        out[path] = reader.read(path)
        out[path + ".attrs"] = var.attrs
    return out


def _variables(blob: bytes | bytearray, slot: list[int]) -> list[tuple[str, VariableMeta]] | None:
    """The variables of the file with their paths, in variable number order, if its
    metadata parses."""
    start, stop = slot[1], slot[1] + slot[2]
    if stop > len(blob):
        return None
    try:
        # any number of containers: the helper also builds files over the readers' cap
        return parse_metadata(bytes(blob[start:stop]), max_containers=2**31).all_variables()
    except ValueError:
        return None


Page = tuple[int, int, int, int, int, list[int]]
"""A stored page: where its page table reference is, its number, where it is, its
length, where its entries start and the placement positions they list (as many as
its bitmap lists and its length holds)."""


def _indexes(
    blob: bytes | bytearray, slot: list[int], variables: list[tuple[str, VariableMeta]]
) -> list[tuple[int, list[Page]]]:
    """Per variable: where its root entry is, and its stored pages (:data:`Page`);
    only what lies inside ``blob``."""
    found = []
    for number, (_, var) in enumerate(variables):
        root_at = slot[3] + REFERENCE.itemsize * number
        pages = -(-var.chunk_count // PAGE_ENTRIES)
        if root_at + REFERENCE.itemsize > len(blob) or pages > 10_000:
            break
        (table,) = struct.unpack_from("<Q", blob, root_at)
        refs = []
        size = PAGE_REFERENCE.itemsize
        for page in range(pages if table + size * pages <= len(blob) else 0):
            ref_at = table + size * page
            ref = np.frombuffer(blob, PAGE_REFERENCE, 1, ref_at)[0]
            offset, length = int(ref["offset"]), int(ref["length"])
            count = min(PAGE_ENTRIES, var.chunk_count - PAGE_ENTRIES * page)
            entries_at = offset + -(-count // 8)
            if offset and offset + length <= len(blob) and entries_at <= offset + length:
                bits = np.unpackbits(
                    np.frombuffer(blob, np.uint8, -(-count // 8), offset), bitorder="little"
                )
                listed = np.flatnonzero(bits[:count]) + PAGE_ENTRIES * page
                held = (offset + length - entries_at) // INDEX_ENTRY.itemsize
                refs.append((ref_at, page, offset, length, entries_at, listed[:held].tolist()))
        found.append((root_at, refs))
    return found


def _write_slot(blob: bytearray, slot: list[int]) -> None:
    blob[SLOT_AT : SLOT_AT + SLOT.size] = SLOT.pack(*slot)
    blob[SLOT_AT + SLOT.size : SLOT_AT + SLOT.size + 4] = struct.pack(
        "<I", crc32c(bytes(blob[:16]) + bytes(blob[SLOT_AT : SLOT_AT + SLOT.size]))
    )


def reseal(data: bytes) -> bytes:
    """``data`` (a file using slot 0) with every checksum that can be located
    recomputed, bound to its place where it has one: chunks, pages, page tables,
    root, metadata and slot 0."""
    blob = bytearray(data)
    if len(blob) < HEADER_SIZE:
        return bytes(blob)
    slot = list(SLOT.unpack_from(blob, SLOT_AT))
    variables = _variables(blob, slot)
    if slot[1] + slot[2] <= len(blob):
        slot[6] = crc32c(bytes(blob[slot[1] : slot[1] + slot[2]]))
    if variables is not None:
        indexes = _indexes(blob, slot, variables)
        for (path, var), (_, refs) in zip(variables, indexes, strict=False):
            places = Places(path, var.grid_shape)
            for ref_at, page, offset, length, entries_at, listed in refs:
                entries = np.frombuffer(blob, INDEX_ENTRY, len(listed), entries_at).copy()
                chunk_places = places.chunks(var.chunk_ids(np.array(listed, dtype=np.int64)))
                for entry, place in zip(entries, chunk_places.tolist(), strict=True):
                    end = int(entry["offset"]) + int(entry["size"])
                    if entry["size"] and end <= len(blob):
                        crc = crc32c(bytes(blob[int(entry["offset"]) : end]))
                        entry["crc32c"] = crc ^ place
                blob[entries_at : entries_at + entries.nbytes] = entries.tobytes()
                crc = crc32c(bytes(blob[offset : offset + length])) ^ places.page(page)
                blob[ref_at + 12 : ref_at + 16] = struct.pack("<I", crc)
        for (path, var), (root_at, _) in zip(variables, indexes, strict=False):
            (table,) = struct.unpack_from("<Q", blob, root_at)
            length = PAGE_REFERENCE.itemsize * -(-var.chunk_count // PAGE_ENTRIES)
            if table and table + length <= len(blob):
                crc = crc32c(bytes(blob[table : table + length])) ^ Places(path, ()).table
                blob[root_at + 8 : root_at + 12] = struct.pack("<I", crc)
    if slot[3] + slot[4] <= len(blob):
        slot[7] = crc32c(bytes(blob[slot[3] : slot[3] + slot[4]]))
    _write_slot(blob, slot)
    return bytes(blob)


def with_metadata(data: bytes, text: bytes) -> bytes:
    """``data`` with its metadata replaced by ``text``; every offset after the
    metadata is moved by the change in length, and every checksum is resealed."""
    slot = list(SLOT.unpack_from(data, SLOT_AT))
    start, end = slot[1], slot[1] + slot[2]
    shift = len(text) - slot[2]
    variables = _variables(data, slot) or []
    indexes = _indexes(data, slot, variables)
    blob = bytearray(data[:start] + text + data[end:])

    def moved(at: int) -> int:  # where a byte of ``data`` is in ``blob``
        return at + shift if at >= end else at

    for root_at, refs in indexes:
        (table,) = struct.unpack_from("<Q", data, root_at)
        if table:
            blob[moved(root_at) : moved(root_at) + 8] = struct.pack("<Q", moved(table))
        for ref_at, _, offset, _, entries_at, listed in refs:
            blob[moved(ref_at) : moved(ref_at) + 8] = struct.pack("<Q", moved(offset))
            entries = np.frombuffer(data, INDEX_ENTRY, len(listed), entries_at).copy()
            stored = entries["size"] != 0
            entries["offset"][stored] = [moved(int(o)) for o in entries["offset"][stored]]
            blob[moved(entries_at) : moved(entries_at) + entries.nbytes] = entries.tobytes()
    slot[2], slot[3], slot[5] = len(text), moved(slot[3]), slot[5] + shift
    _write_slot(blob, slot)
    return reseal(bytes(blob))


def with_last_chunk(data: bytes, chunk: bytes) -> bytes:
    """``data`` with the chunk stored last in the file replaced by ``chunk`` (the file
    cut after it, its entry and every checksum updated)."""
    slot = list(SLOT.unpack_from(data, SLOT_AT))
    last = (0, 0)
    for _, refs in _indexes(data, slot, _variables(data, slot) or []):
        for _, _, _, _, entries_at, listed in refs:
            if not listed:
                continue
            entries = np.frombuffer(data, INDEX_ENTRY, len(listed), entries_at)
            k = int(np.argmax(entries["offset"]))
            last = max(last, (int(entries["offset"][k]), entries_at + k * INDEX_ENTRY.itemsize))
    chunk_at, entry_at = last
    blob = bytearray(data[:chunk_at] + chunk)
    blob[entry_at + 8 : entry_at + 16] = struct.pack("<Q", len(chunk))
    slot[5] = len(blob)
    _write_slot(blob, slot)
    return reseal(bytes(blob))


def _set_path(obj: object, rng: random.Random, value: object) -> None:
    """Replace one randomly chosen member or item somewhere inside ``obj``."""
    while True:
        keys = list(obj) if isinstance(obj, dict) else list(range(len(obj)))  # type: ignore[arg-type]
        if not keys:
            return
        key = rng.choice(keys)
        child = obj[key]  # type: ignore[index]
        if isinstance(child, dict | list) and child and rng.random() < 0.7:
            obj = child
            continue
        obj[key] = value  # type: ignore[index]
        return


def metadata_text(data: bytes) -> bytes:
    """The metadata bytes of a file, located by slot 0."""
    slot = SLOT.unpack_from(data, SLOT_AT)
    return data[slot[1] : slot[1] + slot[2]]


def mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One random damage to ``data``: its kind and the damaged bytes.

    Kinds: ``flip`` (bytes overwritten), ``cut`` (truncated), ``splice`` (a piece of
    the file copied over another place), ``insert``; each also ``+seal``ed (all
    checksums recomputed); and ``json`` (a metadata value replaced, then sealed).
    """
    blob = bytearray(data)
    kind = rng.choice(["flip", "cut", "splice", "insert", "json"])
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            blob[rng.randrange(len(blob))] = rng.randrange(256)
    elif kind == "cut":
        del blob[rng.randrange(len(blob)) :]
    elif kind == "splice":
        start, source, length = (
            rng.randrange(len(blob)),
            rng.randrange(len(blob)),
            rng.randint(1, 64),
        )
        blob[start : start + length] = data[source : source + length]
    elif kind == "insert":
        at = rng.randrange(len(blob))
        blob[at:at] = rng.randbytes(rng.randint(1, 16))
    else:
        meta = json.loads(metadata_text(data))
        _set_path(meta, rng, rng.choice(HOSTILE_VALUES))
        return kind, with_metadata(data, json.dumps(meta).encode())
    if rng.random() < 0.5:
        return kind + "+seal", reseal(bytes(blob))
    return kind, bytes(blob)
