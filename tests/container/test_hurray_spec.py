"""The golden file read by following docs/spec/container.md alone.

Nothing here uses the package's reader: the header, checksums and their places,
metadata, root, page tables, pages and chunks are parsed as the specification
describes them, so a change of the bytes that the specification does not describe
fails here.  (Where a chunk lies on its curve comes from the layout core, whose
placements are checked against the spec's tables in ``tests/layout``.)
"""

from __future__ import annotations

import json
import math
import struct

import numpy as np
from test_hurray_golden import GOLDEN, golden_dataset

from xarray_hurray.layout import chunk_placement


def crc32c(data: bytes) -> int:
    """CRC-32C computed bit by bit from the parameters the specification gives."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283


def place(kind: str, path: str, values: tuple[int, ...] = ()) -> int:
    """The CRC-32C of a place's key: its kind, the path's UTF-8 length (u32), the
    path, then each value (u64)."""
    name = path.encode("utf-8")
    key = kind.encode("ascii") + struct.pack("<I", len(name)) + name
    return crc32c(key + b"".join(struct.pack("<Q", v) for v in values))


def test_a_place_key_as_the_spec_spells_it_out():
    # chunk (1, 2) of "t2m": 'C', 3 as u32, "t2m", 1 and 2 as u64
    key = b"C\x03\x00\x00\x00t2m" + bytes([1]) + bytes(7) + bytes([2]) + bytes(7)
    assert place("C", "t2m", (1, 2)) == crc32c(key) == 0xE34B7144


def parse(blob: bytes) -> tuple[dict, dict, dict, list[tuple[int, int]]]:
    """The active slot, the metadata, per variable path its entries in placement order
    ``(offset, size, crc32c of the chunk's bytes, chunk coordinates)`` (``(0, 0, 0,
    coordinates)`` for a missing chunk), and every referenced byte range ``(start,
    stop)``; every checksum checked against its part and its place."""
    assert blob[:8] == b"\x89HURRAY\n"
    assert struct.unpack_from("<HHI", blob, 8) == (1, 3, 0)
    names = ["generation", "metadata_offset", "metadata_length", "root_offset"]
    names += ["root_length", "file_length", "metadata_crc32c", "root_crc32c", "reserved"]
    slots = []
    for at in (16, 80):
        raw = blob[at : at + 64]
        if raw == bytes(64):
            continue  # unused
        assert struct.unpack_from("<I", raw, 60)[0] == crc32c(blob[:16] + raw[:60])
        slots.append(dict(zip(names, struct.unpack_from("<QQQQQQIII", raw), strict=True)))
    slot = max(slots, key=lambda s: s["generation"])
    assert slot["reserved"] == 0 and slot["file_length"] == len(blob)
    ranges = [(0, 144)]

    def part(offset: int, length: int, crc: int) -> bytes:
        data = blob[offset : offset + length]
        assert len(data) == length and crc32c(data) == crc
        ranges.append((offset, offset + length))
        return data

    metadata = part(slot["metadata_offset"], slot["metadata_length"], slot["metadata_crc32c"])
    meta = json.loads(metadata.decode("utf-8"))
    root = part(slot["root_offset"], slot["root_length"], slot["root_crc32c"])

    variables = []  # depth first: a group's variables, then its groups

    def visit(group: dict, prefix: str) -> None:
        for var in group["variables"]:
            variables.append((prefix + var["name"], var))
        for child in group["groups"]:
            visit(child, prefix + child["name"] + "/")

    visit(meta, "")
    assert len(root) == 12 * len(variables)
    entries = {}
    for number, (path, var) in enumerate(variables):
        grid = tuple(-(-n // c) for n, c in zip(var["shape"], var["chunks"], strict=True))
        count = math.prod(grid)
        order = var["chunk_order"]
        placement = chunk_placement(grid, order["curve"], tuple(order["axes"]))
        pages = -(-count // 1024)
        table_offset, table_crc = struct.unpack_from("<QI", root, 12 * number)
        table = part(table_offset, 16 * pages, table_crc ^ place("T", path)) if pages else b""
        found = []
        for page in range(pages):
            offset, length, crc = struct.unpack_from("<QII", table, 16 * page)
            n = min(1024, count - 1024 * page)
            positions = range(1024 * page, 1024 * page + n)
            coordinates = [np.unravel_index(int(placement[p]), grid) for p in positions]
            coordinates = [tuple(int(c) for c in at) for at in coordinates]
            if offset == 0:  # absent: every chunk missing
                assert length == crc == 0
                found += [(0, 0, 0, at) for at in coordinates]
                continue
            data = part(offset, length, crc ^ place("P", path, (page,)))
            bitmap = (n + 7) // 8
            at = bitmap
            for j in range(n):
                if data[j // 8] >> (j % 8) & 1:
                    offset, size, crc = struct.unpack_from("<QQI", data, at)
                    crc ^= place("C", path, coordinates[j])
                    part(offset, size, crc)
                    found.append((offset, size, crc, coordinates[j]))
                    at += 20
                else:
                    found.append((0, 0, 0, coordinates[j]))
            assert at == length
        entries[path] = found
    return slot, meta, entries, ranges


def test_structure_follows_the_specification():
    blob = GOLDEN.read_bytes()
    _, meta, entries, ranges = parse(blob)
    # as the writer writes: every byte is referenced once, the room the head keeps
    # for pages aside (zeros nothing references)
    position = 0
    for start, stop in sorted(ranges):
        assert start >= position and not any(blob[position:start])
        position = stop
    assert position == len(blob)
    # the stored chunks of a variable follow its placement order
    for path, found in entries.items():
        offsets = [offset for offset, size, _, _ in found if size]
        assert offsets == sorted(offsets), path
    assert "sparse" in [v["name"] for v in meta["variables"]]
    assert [g["name"] for g in meta["groups"]] == ["g"]


def test_missing_chunks_read_as_the_fill_value():
    blob = GOLDEN.read_bytes()
    _, meta, entries, _ = parse(blob)
    sparse = next(v for v in meta["variables"] if v["name"] == "sparse")
    fill = np.frombuffer(bytes.fromhex(sparse["fill_value"]), dtype="<f4")[0]
    assert np.isnan(fill)
    # a 2 x 2 grid along a Hilbert curve (layouts.md): (0,0), (0,1), (1,1), (1,0)
    expected = golden_dataset()["sparse"].values
    placed = [at for _, _, _, at in entries["sparse"]]
    assert placed == [(0, 0), (0, 1), (1, 1), (1, 0)]
    for offset, size, _, (cy, cx) in entries["sparse"]:
        block = expected[4 * cy : 4 * cy + 4, 4 * cx : 4 * cx + 4]
        if size == 0:
            assert np.isnan(block).all()
        else:
            # codec-free Hilbert-ordered chunk: the same 16 values, in another order
            stored = np.frombuffer(blob[offset : offset + size], dtype="<f4")
            np.testing.assert_array_equal(np.sort(stored), np.sort(block.reshape(-1)))
    assert [size == 0 for _, size, _, _ in entries["sparse"]].count(True) == 2


def test_codec_free_chunks_decode_as_specified():
    blob = GOLDEN.read_bytes()
    _, meta, entries, _ = parse(blob)
    variables = {var["name"]: var for var in meta["variables"]}
    expected = golden_dataset()

    names = variables["names"]
    assert (names["dtype"], names["layout"], names["codecs"]) == (
        "string",
        {"name": "row-major"},
        [],
    )
    strings = []
    for offset, size, _, _ in entries["names"]:  # one axis: placement is chunk order
        chunk = blob[offset : offset + size]
        count = names["chunks"][0]
        lengths = struct.unpack_from(f"<{count}I", chunk)
        assert 4 * count + sum(lengths) == size
        start = 4 * count
        for length in lengths:
            strings.append(chunk[start : start + length].decode("utf-8"))
            start += length
    assert strings[names["shape"][0] :] == [""]  # edge padding is the empty string
    assert strings[: names["shape"][0]] == expected["names"].values.tolist()

    codes = variables["codes"]
    assert (codes["dtype"], codes["chunks"], codes["codecs"]) == ("U3", [2], [])
    (offset, size, _, _) = entries["codes"][-1]  # "h" and a padding element: zero bytes
    assert blob[offset : offset + size] == "h".encode("utf-32-le") + bytes(20)

    flag = variables["flag"]
    assert (flag["dtype"], flag["shape"], flag["codecs"]) == ("bool", [], [])
    [(offset, size, _, ())] = entries["flag"]
    assert blob[offset : offset + size] == (b"\x01" if expected["flag"].item() else b"\x00")
    assert meta["attrs"]["answer"] == {"dtype": "int64", "shape": [], "data": [42]}
