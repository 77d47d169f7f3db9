"""Small valid Hurray files and ways to damage them, for the fuzz and bit-flip tests
(and the longer harness in ``tools/fuzz_atheris.py``).

``reseal`` recomputes every checksum it can find after a mutation, so that damaged
files reach the checks behind the checksums (metadata rules, index ranges, codec
frames) instead of stopping at the first crc32c.
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
from xarray_hurray.container import ContainerReader, parse_metadata
from xarray_hurray.container.checksum import crc32c
from xarray_hurray.container.format import HEADER, HEADER_SIZE, INDEX_ENTRY
from xarray_hurray.io import FileObjectSource

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


def read_everything(blob: bytes, verify_checksums: bool = True) -> dict[str, object]:
    """Open ``blob`` and read every variable and attribute."""
    reader = ContainerReader(FileObjectSource(io.BytesIO(blob)), verify_checksums=verify_checksums)
    out: dict[str, object] = {"attrs": reader.metadata.attrs}
    for var in reader.metadata.variables:
        out[var.name] = reader.read(var.name)
        out[var.name + ".attrs"] = var.attrs
    return out


def _put_crc(blob: bytearray, at: int, start: int, stop: int) -> None:
    blob[at : at + 4] = struct.pack("<I", crc32c(bytes(blob[start:stop])))


def reseal(data: bytes) -> bytes:
    """``data`` with every checksum that can be located recomputed."""
    blob = bytearray(data)
    if len(blob) < HEADER_SIZE:
        return bytes(blob)
    meta_length, index_offset = HEADER.unpack_from(blob)[5:7]
    meta_stop = HEADER_SIZE + meta_length
    if meta_stop <= len(blob):
        _put_crc(blob, HEADER.size - 4, HEADER_SIZE, meta_stop)
        try:
            metadata = parse_metadata(bytes(blob[HEADER_SIZE:meta_stop]))
        except ValueError:
            metadata = None
        offsets = metadata.index_offsets(index_offset) if metadata else {}
        for var in metadata.variables if metadata else ():
            start, stop = offsets[var.name], offsets[var.name] + var.index_length
            if stop > len(blob) or var.chunk_count > 10_000:
                break
            entries = np.frombuffer(blob, INDEX_ENTRY, var.chunk_count, start).copy()
            for entry in entries:
                end = int(entry["offset"]) + int(entry["size"])
                if end <= len(blob):
                    entry["crc32c"] = crc32c(bytes(blob[int(entry["offset"]) : end]))
            blob[start : stop - 4] = entries.tobytes()
            _put_crc(blob, stop - 4, start, stop - 4)
    _put_crc(blob, HEADER.size, 0, HEADER.size)
    return bytes(blob)


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


def with_metadata(data: bytes, text: bytes) -> bytes:
    """``data`` with its metadata replaced by ``text``; the index entries are moved by
    the change in length, and every checksum is resealed."""
    meta_length, index_offset, _, file_length = HEADER.unpack_from(data)[5:9]
    shift = len(text) - meta_length
    rest = bytearray(data[index_offset:])
    start = 0
    for var in parse_metadata(data[HEADER_SIZE : HEADER_SIZE + meta_length]).variables:
        entries = np.frombuffer(rest, INDEX_ENTRY, var.chunk_count, start).copy()
        entries["offset"] = (entries["offset"].astype(np.int64) + shift).astype(np.uint64)
        rest[start : start + entries.nbytes] = entries.tobytes()
        start += var.index_length
    fields = list(HEADER.unpack_from(data))
    fields[5], fields[6], fields[8] = len(text), index_offset + shift, file_length + shift
    return reseal(HEADER.pack(*fields) + b"\0\0\0\0" + text + bytes(rest))


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
        meta_length = HEADER.unpack_from(data)[5]
        meta = json.loads(data[HEADER_SIZE : HEADER_SIZE + meta_length])
        _set_path(meta, rng, rng.choice(HOSTILE_VALUES))
        return kind, with_metadata(data, json.dumps(meta).encode())
    if rng.random() < 0.5:
        return kind + "+seal", reseal(bytes(blob))
    return kind, bytes(blob)
