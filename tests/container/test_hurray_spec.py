"""The golden file read by following docs/spec/container.md alone.

Nothing here uses the package's reader: the header, checksums, metadata, indexes
and chunk placement are parsed as the specification describes them, so a change
of the bytes that the specification does not describe fails here.
"""

from __future__ import annotations

import json
import math
import struct

import numpy as np
from test_hurray_golden import GOLDEN, GOLDEN_1_1, golden_dataset, golden_dataset_1_1


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


def parse(blob: bytes) -> tuple[dict, dict, dict]:
    """Header fields, metadata and, per variable, its index entries ``(offset, size, crc)``."""
    assert blob[:8] == b"\x89HURRAY\n"
    names = ["major", "minor", "flags", "metadata_offset", "metadata_length"]
    names += ["index_offset", "index_length", "file_length", "metadata_crc32c"]
    header = dict(zip(names, struct.unpack_from("<HHIQQQQQI", blob, 8), strict=True))
    (header_crc,) = struct.unpack_from("<I", blob, 60)
    assert (header["major"], header["minor"], header["flags"]) == (1, 0, 0)
    assert header_crc == crc32c(blob[:60])
    assert header["metadata_offset"] == 64
    assert header["index_offset"] == 64 + header["metadata_length"]
    assert header["file_length"] == len(blob)
    metadata = blob[64 : header["index_offset"]]
    assert crc32c(metadata) == header["metadata_crc32c"]
    meta = json.loads(metadata.decode("utf-8"))
    assert set(meta) == {"attrs", "variables"}
    indexes, at = {}, header["index_offset"]
    for var in meta["variables"]:
        count = math.prod(-(-n // c) for n, c in zip(var["shape"], var["chunks"], strict=True))
        index = blob[at : at + 20 * count + 4]
        assert struct.unpack_from("<I", index, 20 * count)[0] == crc32c(index[:-4])
        indexes[var["name"]] = [struct.unpack_from("<QQI", index, 20 * i) for i in range(count)]
        at += len(index)
    assert at == header["index_offset"] + header["index_length"]
    return header, meta, indexes


def test_structure_follows_the_specification():
    blob = GOLDEN.read_bytes()
    header, meta, indexes = parse(blob)
    position = header["index_offset"] + header["index_length"]
    for var in meta["variables"]:
        assert len(var["dims"]) == len(var["shape"]) == len(var["chunks"])
        # a variable's chunks follow each other without gaps, after the previous one's
        for offset, size, crc in sorted(indexes[var["name"]]):
            assert offset == position
            assert crc32c(blob[offset : offset + size]) == crc
            position += size
    assert position == header["file_length"]


def test_codec_free_row_major_chunks_decode_as_specified():
    blob = GOLDEN.read_bytes()
    _, meta, indexes = parse(blob)
    variables = {var["name"]: var for var in meta["variables"]}
    expected = golden_dataset()

    names = variables["names"]
    assert (names["dtype"], names["layout"], names["codecs"]) == (
        "string",
        {"name": "row-major"},
        [],
    )
    strings = []
    for offset, size, _ in indexes["names"]:  # chunk-number order
        chunk = blob[offset : offset + size]
        count = names["chunks"][0]
        lengths = struct.unpack_from(f"<{count}I", chunk)
        assert 4 * count + sum(lengths) == size
        text, start = [], 4 * count
        for length in lengths:
            text.append(chunk[start : start + length].decode("utf-8"))
            start += length
        strings += text
    assert strings[names["shape"][0] :] == [""]  # edge padding is the empty string
    assert strings[: names["shape"][0]] == expected["names"].values.tolist()

    flag = variables["flag"]
    assert (flag["dtype"], flag["shape"], flag["codecs"]) == ("bool", [], [])
    [(offset, size, _)] = indexes["flag"]
    assert blob[offset : offset + size] == (b"\x01" if expected["flag"].item() else b"\x00")
    assert meta["attrs"]["answer"] == {"dtype": "int64", "shape": [], "data": [42]}


# ---------------------------------------------------------------- version 1.1


def parse_1_1(blob: bytes) -> tuple[dict, dict, dict, list[tuple[int, int]]]:
    """The active slot, the metadata, per variable path its entries in placement order
    ``(offset, size, crc)``, and every referenced byte range ``(start, stop)``."""
    assert blob[:8] == b"\x89HURRAY\n"
    assert struct.unpack_from("<HHI", blob, 8) == (1, 1, 0)
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
        count = math.prod(-(-n // c) for n, c in zip(var["shape"], var["chunks"], strict=True))
        pages = -(-count // 1024)
        table_offset, table_crc = struct.unpack_from("<QI", root, 12 * number)
        table = part(table_offset, 12 * pages, table_crc) if pages else b""
        found = []
        for page in range(pages):
            page_offset, page_crc = struct.unpack_from("<QI", table, 12 * page)
            size = min(1024, count - 1024 * page)
            if page_offset == 0:  # absent: every chunk missing
                found += [(0, 0, 0)] * size
                continue
            data = part(page_offset, 20 * size, page_crc)
            found += [struct.unpack_from("<QQI", data, 20 * i) for i in range(size)]
        for offset, size, crc in found:
            if size:
                part(offset, size, crc)
            else:
                assert offset == crc == 0
        entries[path] = found
    return slot, meta, entries, ranges


def test_1_1_structure_follows_the_specification():
    blob = GOLDEN_1_1.read_bytes()
    _, meta, entries, ranges = parse_1_1(blob)
    # as the writer writes: every byte is referenced exactly once
    position = 0
    for start, stop in sorted(ranges):
        assert start == position
        position = stop
    assert position == len(blob)
    # the stored chunks of a variable follow its placement order
    for path, found in entries.items():
        offsets = [offset for offset, size, _ in found if size]
        assert offsets == sorted(offsets), path
    assert [v["name"] for v in meta["variables"]][-1] == "sparse"


def test_1_1_missing_chunks_read_as_the_fill_value():
    blob = GOLDEN_1_1.read_bytes()
    _, meta, entries, _ = parse_1_1(blob)
    sparse = next(v for v in meta["variables"] if v["name"] == "sparse")
    fill = np.frombuffer(bytes.fromhex(sparse["fill_value"]), dtype="<f4")[0]
    assert np.isnan(fill)
    # a 2 x 2 grid along a Hilbert curve (layouts.md): (0,0), (0,1), (1,1), (1,0)
    placement = [(0, 0), (0, 1), (1, 1), (1, 0)]
    expected = golden_dataset_1_1()["sparse"].values
    for (cy, cx), (offset, size, _) in zip(placement, entries["sparse"], strict=True):
        block = expected[4 * cy : 4 * cy + 4, 4 * cx : 4 * cx + 4]
        if size == 0:
            assert np.isnan(block).all()
        else:
            # codec-free Hilbert-ordered chunk: the same 16 values, in another order
            stored = np.frombuffer(blob[offset : offset + size], dtype="<f4")
            np.testing.assert_array_equal(np.sort(stored), np.sort(block.reshape(-1)))
    assert [size == 0 for _, size, _ in entries["sparse"]].count(True) == 2


def test_1_1_codec_free_chunks_decode_as_in_1_0():
    blob = GOLDEN_1_1.read_bytes()
    _, meta, entries, _ = parse_1_1(blob)
    names = next(v for v in meta["variables"] if v["name"] == "names")
    strings = []
    for offset, size, _ in entries["names"]:  # one axis: placement is chunk order
        chunk = blob[offset : offset + size]
        count = names["chunks"][0]
        lengths = struct.unpack_from(f"<{count}I", chunk)
        start = 4 * count
        for length in lengths:
            strings.append(chunk[start : start + length].decode("utf-8"))
            start += length
    assert strings[: names["shape"][0]] == golden_dataset()["names"].values.tolist()
