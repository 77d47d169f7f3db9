"""Variables whose chunk curves run over many axes (20, 22 and 32, the most a
variable has): reading one element costs a few placement steps per level of the
curve, never a step per sibling sub-cube (``2**d`` of them at every level; one
element of a 20-axis file took 16-44 s, of a 32-axis one it never returned).

Each file is built for real, from the container's own pieces
(:func:`xarray_hurray.testing.sparse.write_sparse_file`), with a few stored chunks in
a grid of ``2**d`` mostly missing ones, and read back by the Python reader and, among
the slow tests, by the JavaScript reader, each value compared with the chunk put in.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from xarray_hurray.container import DatasetMeta, VariableMeta, open_reader
from xarray_hurray.layout import RowMajorLayout
from xarray_hurray.testing.sparse import write_sparse_file

REPO = Path(__file__).resolve().parents[2]

SECONDS = 1.0
"""What one element may take, from the open to the value, on a loaded machine."""


def many_axes_file(path: Path, rank: int, curve: str) -> dict[tuple[int, ...], int]:
    """A file of one uint16 variable of ``2**rank`` one-element chunks (a side of 2
    on every axis) along a ``curve``, storing a few of them, and the values stored,
    by element."""
    shape = (2,) * rank
    var = VariableMeta(
        name="v",
        dims=tuple(f"d{k}" for k in range(rank)),
        shape=shape,
        dtype="uint16",
        chunks=(1,) * rank,
        layout=RowMajorLayout(),
        chunk_order=curve,
        fill_value=np.uint16(7).tobytes(),
    )
    elements = [(0,) * rank, (1,) * rank, (1,) + (0,) * (rank - 1), (0, 1) * (rank // 2)]
    stored = {e: 100 + k for k, e in enumerate(elements)}
    chunks = {
        int(np.ravel_multi_index(e, shape)): np.full((1,) * rank, v, np.uint16)
        for e, v in stored.items()
    }
    write_sparse_file(path, DatasetMeta(attrs={}, variables=(var,)), {"v": chunks})
    return stored


# 32 axes: 2**32 chunks, whose page table alone takes 48 MiB to write
@pytest.mark.parametrize("rank", [20, 22, pytest.param(32, marks=pytest.mark.slow)])
@pytest.mark.parametrize("curve", ["hilbert", "morton"])
def test_one_element_of_a_file_of_many_curve_axes(tmp_path, rank, curve):
    stored = many_axes_file(tmp_path / "many.hurray", rank, curve)
    missing = (1, 1) + (0,) * (rank - 2)
    for element, value in [*stored.items(), (missing, 7)]:
        start = time.perf_counter()
        got = open_reader(tmp_path / "many.hurray").read("v", element)
        seconds = time.perf_counter() - start
        assert int(got) == value, element
        assert seconds < SECONDS, (element, seconds)


READ_ELEMENTS = """
import { readFileSync } from "node:fs";
import { openHurray } from "HURRAY_JS";
const [file, elements] = [process.argv[1], JSON.parse(process.argv[2])];
const reader = await openHurray(new Uint8Array(readFileSync(file)));
const box = (element) => element.map((i) => [i, i + 1]);
await reader.read("v", box(elements[0].map((_, k) => (k < 2 ? 1 : 0))));
const out = [];
for (const element of elements) {
    const started = performance.now();
    const data = await reader.read("v", box(element));
    out.push([Number(data.data[0]), (performance.now() - started) / 1000]);
}
console.log(JSON.stringify(out));
"""
"""Reads elements (argv[2], JSON) of variable ``v`` of a file (argv[1]) with the
JavaScript reader, after a first read of a missing chunk; prints each value and
the seconds its read took."""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
@pytest.mark.parametrize("rank", [20, 22, 32])
@pytest.mark.parametrize("curve", ["hilbert", "morton"])
def test_the_javascript_reader_reads_one_element_of_many_curve_axes(tmp_path, rank, curve):
    """The first read (of a missing chunk) reads the page table: 48 MiB of it at 32
    axes, which the JavaScript reader parses in about 2 s, a cost of the file's
    size; each element after it costs its placement and its chunk (counting the
    ``2**d`` siblings one by one took 0.2 s at 20 axes, 1.3 s at 22)."""
    stored = many_axes_file(tmp_path / "many.hurray", rank, curve)
    reader = (REPO / "js" / "src" / "hurray.js").as_uri()
    script = READ_ELEMENTS.replace("HURRAY_JS", reader)
    file, elements = str(tmp_path / "many.hurray"), json.dumps(list(stored))
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script, "--", file, elements],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    results = json.loads(done.stdout)
    assert [v for v, _ in results] == list(stored.values())
    assert max(s for _, s in results) < 0.1, results
