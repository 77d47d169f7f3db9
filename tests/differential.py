"""The two readers side by side: Python's :class:`ContainerReader` and the JavaScript
reader in ``js/`` run on the same mutants of the structure fuzzer's seeds
(:mod:`fuzz_structure`), each file's outcome put in one form both can make, and
compared.  Shared by ``tools/fuzz_differential.py`` (long runs, counts),
``tests/container/test_js_differential.py`` (a run and the mutants neither reader
can refuse yet) and ``js/test/fixtures.py`` (the small corpus of the JavaScript
tests' default run).

An outcome is, for a file, ``{"open": "ok" | "refused" | "unsupported" |
"error:<type>", "variables": [[path, outcome], ...]}``, each variable's outcome
``"refused"``, ``"unsupported"``, ``"error:<type>"`` (an exception neither reader
documents) or, for one read whole, ``"<shape>:<sha256>"`` of its values in a form
both readers make: the little-endian bytes of numbers (float16 as float32, bool as
one byte, complex as its parts), and for text and bytes each element's UTF-8 or
raw bytes after its length (u32).  The JavaScript side is ``js/tools/outcomes.js``.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import shutil
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from fuzz_structure import CAP, SEEDS, build, mutant, parse, seed_file, swap_chunks

from xarray_hurray.container import ContainerReader
from xarray_hurray.errors import HurrayError
from xarray_hurray.io import FileObjectSource

ROOT = Path(__file__).resolve().parents[1]
JS_OUTCOMES = ROOT / "js" / "tools" / "outcomes.js"
"""The script that reads files with the JavaScript reader and prints their outcomes."""


def digest(values: np.ndarray) -> str:
    """``"<shape>:<sha256>"`` of ``values`` in the form both readers make."""
    hasher = hashlib.sha256()
    flat = values.ravel()
    if values.dtype.kind in "OU":
        for item in flat.tolist():
            text = str(item).encode("utf-8")
            hasher.update(struct.pack("<I", len(text)) + text)
    elif values.dtype.kind == "S":
        for item in flat.tolist():
            hasher.update(struct.pack("<I", len(item)) + item)
    else:
        if values.dtype == np.float16:
            values = values.astype(np.float32)  # as the JavaScript reader returns them
        little = values.astype(values.dtype.newbyteorder("<"), copy=False)
        hasher.update(np.ascontiguousarray(little).view(np.uint8).tobytes())
    shape = ",".join(map(str, values.shape))
    return f"{shape}:{hasher.hexdigest()}"


def _failure(err: BaseException) -> str:
    """How an outcome names the exception ``err``."""
    return "refused" if isinstance(err, HurrayError) else f"error:{type(err).__name__}"


def python_outcome(blob: bytes) -> dict[str, Any]:
    """The outcome of reading every variable of ``blob`` whole with the Python reader."""
    try:
        reader = ContainerReader(FileObjectSource(io.BytesIO(blob)), max_chunk_bytes=CAP)
        paths = [path for path, _ in reader.metadata.all_variables()]
    except Exception as err:
        return {"open": _failure(err), "variables": []}
    variables: list[list[str]] = []
    for path in paths:
        try:
            variables.append([path, digest(np.asarray(reader.read(path)))])
        except Exception as err:
            variables.append([path, _failure(err)])
    return {"open": "ok", "variables": variables}


def js_outcomes(paths: list[Path], node: str = "node") -> list[dict[str, Any]]:
    """The outcome of each file of ``paths`` read by the JavaScript reader, in one
    Node.js process."""
    answer = subprocess.run(
        [node, str(JS_OUTCOMES), *map(str, paths)], capture_output=True, text=True, check=True
    )
    return [json.loads(line) for line in answer.stdout.splitlines()]


def node_found(node: str = "node") -> bool:
    """Whether Node.js runs here."""
    return shutil.which(node) is not None


def disagreement(python: dict[str, Any], js: dict[str, Any]) -> str | None:
    """How the outcomes of one file differ, or None when they agree.  The JavaScript
    reader refusing as unsupported what Python reads (a Blosc frame of blosclz, a
    size past 2**53: documented in js/README.md) is agreement."""

    def same(py: str, other: str) -> bool:
        if other == "unsupported":
            return not py.startswith("error:")
        return py == other and not py.startswith("error:")

    if not same(python["open"], js["open"]):
        return f"open: Python {python['open']}, JavaScript {js['open']}"
    if js["open"] == "unsupported":
        return None
    if [p for p, _ in python["variables"]] != [p for p, _ in js["variables"]]:
        return "the readers list different variables"
    for (path, py), (_, other) in zip(python["variables"], js["variables"], strict=True):
        if not same(py, other):
            return f"variable {path!r}: Python {py}, JavaScript {other}"
    return None


@dataclass
class Mutant:
    """One file of a corpus: its name, the kind of change that made it, its bytes."""

    name: str
    kind: str
    blob: bytes


def corpus(per_seed: int, rng_seed: int) -> Iterator[Mutant]:
    """``per_seed`` mutants of each of the fuzzer's seed files (:data:`SEEDS`: the tree
    and the file with overviews), from ``rng_seed``."""
    for name in SEEDS:
        good = seed_file(name)
        rng = random.Random(f"{rng_seed}:{name}")
        for number in range(per_seed):
            kind, blob = mutant(good, rng)
            yield Mutant(f"{name}-{rng_seed}-{number}", kind, blob)


SWAP_SEED_ENCODING = {"a": {"chunks": (4, 4)}, "b": {"chunks": (4, 4)}}


def swap_seed() -> bytes:
    """A file of two variables of one shape, type and chunking and different values
    (written now, by the format's current writer)."""
    import tempfile

    import xarray as xr

    import xarray_hurray as xh

    values = np.arange(64, dtype="f4").reshape(8, 8)
    ds = xr.Dataset({"a": (("y", "x"), values), "b": (("y", "x"), -values)})
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "swap.hurray"
        xh.to_hurray(ds, path, encoding=SWAP_SEED_ENCODING)
        return path.read_bytes()


def swapped_mutants() -> Iterator[tuple[Mutant, dict[str, Any]]]:
    """Resealed mutants that put valid chunks in another place, each with the outcome
    of the file they were made from (:func:`swap_seed`): the chunks of its two
    variables exchanged, each keeping the checksum of its place (what exchanging their
    root entries does to the chunks), and two chunks of one variable exchanged (what
    exchanging their index entries does).  A chunk's checksum is bound to its
    variable and its place in the grid, so both readers refuse them."""
    good = swap_seed()
    truth = python_outcome(good)
    swapped = parse(good)
    for k in range(len(swapped.chunks[0])):
        swap_chunks(swapped, (0, k), (1, k))
    yield Mutant("swap-root-a-b", "swap:root", build(swapped)), truth
    swapped = parse(good)
    swap_chunks(swapped, (0, 0), (0, 1))
    yield Mutant("swap-index-a-0-1", "swap:index", build(swapped)), truth
