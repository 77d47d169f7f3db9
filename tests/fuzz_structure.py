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

import contextlib
import copy
import io
import json
import math
import random
import struct
import tempfile
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
from xarray_hurray.container.format import HEADER, HEADER_SIZE, INDEX_ENTRY
from xarray_hurray.errors import HurrayError
from xarray_hurray.io import FileObjectSource

CAP = 64 * 2**20
"""``max_chunk_bytes`` of every read: the documented cap a fuzzed file may make a
reader allocate per decoded chunk."""

XARRAY_ERRORS = ("unable to decode time units", "time values outside range of 64 bit")
"""Messages of the xarray errors docs/reliability.md lists as remaining xarray's."""


@dataclass
class Parsed:
    """A file taken apart: header fields, metadata, chunk bytes per variable (by
    row-major chunk id) and the order the chunks were placed in."""

    header: list[Any]
    meta: Any
    chunks: list[list[bytes]]
    placement: list[list[int]]
    index_edits: list[tuple[int, int, str, int]] = field(default_factory=list)
    header_edits: dict[int, int] = field(default_factory=dict)


def parse(blob: bytes) -> Parsed:
    """The parts of the valid file ``blob``."""
    header = list(HEADER.unpack_from(blob))
    meta_length, index_offset = header[5], header[6]
    meta = json.loads(blob[HEADER_SIZE : HEADER_SIZE + meta_length])
    chunks, placement, at = [], [], index_offset
    for var in meta["variables"]:
        count = math.prod(-(-n // c) for n, c in zip(var["shape"], var["chunks"], strict=True))
        entries = np.frombuffer(blob, INDEX_ENTRY, count, at)
        at += count * INDEX_ENTRY.itemsize + 4
        chunks.append([blob[int(e["offset"]) : int(e["offset"] + e["size"])] for e in entries])
        placement.append(np.argsort(entries["offset"], kind="stable").tolist())
    return Parsed(header, meta, chunks, placement)


def _chunk_count(var: Any, fallback: int) -> int:
    """Chunks of a (maybe mutated) variable description, or ``fallback``."""
    try:
        count = math.prod(
            -(-int(n) // int(c)) for n, c in zip(var["shape"], var["chunks"], strict=True)
        )
    except Exception:  # any mutated shape: keep the chunks there are
        return fallback
    return count if 0 <= count <= 10_000 else fallback


def build(parsed: Parsed) -> bytes:
    """The file of ``parsed``: metadata, indexes and chunks laid out in turn, field
    edits applied, every checksum recomputed."""
    meta_bytes = json.dumps(parsed.meta, separators=(",", ":")).encode()
    variables = parsed.meta.get("variables") if isinstance(parsed.meta, dict) else None
    variables = variables if isinstance(variables, list) else []
    layouts = []  # per variable: chunk bytes by row-major id, and the order placed
    for i, var in enumerate(variables):
        k = min(i, len(parsed.chunks) - 1)
        own, order = parsed.chunks[k], parsed.placement[k]
        count = _chunk_count(var, len(own)) if isinstance(var, dict) else len(own)
        if count == len(own):
            layouts.append((own, order))
        else:
            blobs = [own[j % len(own)] if own else b"" for j in range(count)]
            layouts.append((blobs, list(range(count))))
    index_length = sum(len(blobs) * INDEX_ENTRY.itemsize + 4 for blobs, _ in layouts)
    index_offset = HEADER_SIZE + len(meta_bytes)
    position = index_offset + index_length
    entries, data = [], []
    for blobs, order in layouts:
        table = np.zeros(len(blobs), INDEX_ENTRY)
        for j in order:
            table[j] = (position, len(blobs[j]), crc32c(blobs[j]))
            data.append(blobs[j])
            position += len(blobs[j])
        entries.append(table)
    file_length = position
    for var, chunk, name, value in parsed.index_edits:
        if var < len(entries) and chunk < len(entries[var]):
            entries[var][chunk][name] = value % 2 ** (32 if name == "crc32c" else 64)
    body = b"".join(data)
    blob = bytearray(b"\0" * HEADER_SIZE + meta_bytes)
    for table in entries:
        blob += table.tobytes() + b"\0\0\0\0"
    blob += body
    for table in entries:  # entries that were edited get the checksum of their new range
        for entry in table:
            start, stop = int(entry["offset"]), int(entry["offset"]) + int(entry["size"])
            if stop <= len(blob):
                entry["crc32c"] = crc32c(bytes(blob[start:stop]))
    at = index_offset
    for table in entries:
        raw = table.tobytes()
        blob[at : at + len(raw) + 4] = raw + struct.pack("<I", crc32c(raw))
        at += len(raw) + 4
    fields = [*parsed.header]
    fields[4:9] = [HEADER_SIZE, len(meta_bytes), index_offset, index_length, file_length]
    widths = {1: 16, 2: 16, 3: 32, 4: 64, 5: 64, 6: 64, 7: 64, 8: 64}
    for key, value in parsed.header_edits.items():
        fields[key] = value % 2 ** widths[key]
    meta_stop = HEADER_SIZE + fields[5]
    fields[9] = crc32c(bytes(blob[HEADER_SIZE:meta_stop])) if meta_stop <= len(blob) else 0
    head = HEADER.pack(*fields)
    blob[:HEADER_SIZE] = head + struct.pack("<I", crc32c(head))
    return bytes(blob)


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


def mutate_metadata(parsed: Parsed, rng: random.Random) -> str:
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
    variables = meta["variables"]
    target = rng.choice(variables)["attrs"] if variables else meta["attrs"]
    target[rng.choice(CF_KEYS)] = copy.deepcopy(rng.choice(HOSTILE))
    return "meta:cf-attr"


def mutate_header(parsed: Parsed, rng: random.Random) -> str:
    """Change one header field (magic and checksums excepted)."""
    key = rng.randrange(1, 9)
    value = parsed.header[key]
    parsed.header_edits[key] = rng.choice(
        [value + 1, value - 1, value + 20, 0, 1, 2**31, 2**63 - 1, value * 2, 64]
    )
    return "header"


def mutate_index(parsed: Parsed, rng: random.Random) -> str:
    """Change one field of one index entry."""
    live = [i for i, chunks in enumerate(parsed.chunks) if chunks]
    var = rng.choice(live)
    chunk = rng.randrange(len(parsed.chunks[var]))
    name = rng.choice(["offset", "size"])
    size = len(parsed.chunks[var][chunk])
    delta = rng.choice([1, -1, 4, -4, size, -size, 2**32, 2**63])
    # applied to the laid-out value: offsets and sizes are known only in build
    parsed.index_edits.append((var, chunk, name, delta))
    return f"index:{name}"


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


def mutate_chunk(parsed: Parsed, rng: random.Random) -> str:
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


def preserve(parsed: Parsed, rng: random.Random) -> str:
    """A change that keeps the file's meaning: the metadata's keys in another order."""

    def shuffled(obj: Any) -> Any:
        if isinstance(obj, dict):
            items = list(obj.items())
            rng.shuffle(items)
            return {k: shuffled(v) for k, v in items}
        if isinstance(obj, list):
            return [shuffled(v) for v in obj]
        return obj

    parsed.meta = shuffled(parsed.meta)
    return "preserving"


MUTATORS = [mutate_metadata, mutate_metadata, mutate_header, mutate_index, mutate_chunk]
MUTATORS += [mutate_chunk, preserve]


def mutant(good: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One mutated, resealed file made from ``good``, and the kind of its change."""
    parsed = parse(good)
    kind = rng.choice(MUTATORS)(parsed, rng)
    if parsed.index_edits:  # deltas become values once the file is laid out
        deltas, parsed.index_edits = parsed.index_edits, []
        laid = build(parsed)
        at = HEADER.unpack_from(laid)[6]
        starts = np.cumsum([at] + [len(c) * INDEX_ENTRY.itemsize + 4 for c in parsed.chunks])
        for var, chunk, name, delta in deltas:
            entry = np.frombuffer(laid, INDEX_ENTRY, 1, int(starts[var]) + chunk * 20)[0]
            parsed.index_edits.append((var, chunk, name, int(entry[name]) + delta))
    return kind, build(parsed)


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
    for var in reader.metadata.variables:
        whole = reader.read(var.name)
        if var.shape and var.shape[0] > 1:
            half = (slice(0, var.shape[0] // 2),) + (slice(None),) * (len(var.shape) - 1)
            if not _same(reader.read(var.name, half), whole[half]):
                raise WrongValues(f"variable {var.name!r}: a region read differs from the whole")
        out[var.name] = whole
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


def run_input(blob: bytes, kind: str, truth: dict[str, np.ndarray], work: Path) -> dict[str, str]:
    """Every way of reading ``blob`` (and a write of what xarray read): the outcome of
    each step, ``ok``, ``rejected`` or a finding."""
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
    dataset = None
    try:
        with xr.open_dataset(path, engine="hurray", max_chunk_bytes=CAP) as ds:
            dataset = ds.load()
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
    return outcome


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


SEED = Path(__file__).parent / "data" / "fuzz_seed_v1_0.hurray"
"""The seed: a format 1.0 file of :func:`seed_dataset` with :data:`SEED_ENCODING`,
written by the 1.0 writer and kept (1.0 files stay readable; the fuzzer parses and
rebuilds the 1.0 structures).  Never rewritten: a seed of another version is a new file."""


def seed_file() -> bytes:
    """The bytes of the seed file (about 3 KB)."""
    return SEED.read_bytes()


def work_directory() -> Path:
    """A scratch directory for the files of a run."""
    return Path(tempfile.mkdtemp(prefix="hurray-fuzz-"))


def truth_of(good: bytes) -> dict[str, np.ndarray]:
    """What the seed holds, read by the container reader (checked against the dataset
    by the test suite's round-trip tests)."""
    return read_all(good)
