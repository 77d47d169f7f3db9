"""The golden file read by following docs/spec/container.md alone.

Nothing here uses the package's reader: the header, checksums, metadata, indexes
and chunk placement are parsed as the specification describes them, so a change
of the bytes that the specification does not describe fails here.
"""

from __future__ import annotations

import json
import math
import struct

from test_hurray_golden import GOLDEN, golden_dataset


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
