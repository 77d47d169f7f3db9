"""Files whose variables declare giant grids of chunks, mostly or all missing:
reads, ``verify``, ``info`` and opening cost what the file stores
(its page tables, pages and stored chunks) and the result, never a step or a byte
per chunk of the grid (docs/reliability.md, "What a file can make a reader
allocate").  Every file is built for real, from the container's own pieces
(:func:`xarray_hurray.testing.sparse.write_sparse_file`), and every value read is
compared with a numpy array of the fill with the stored chunks put in by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from allocations import measured
from scripts import run_script

import xarray_hurray as xh
from xarray_hurray.cli.info import report
from xarray_hurray.cli.main import main as cli_main
from xarray_hurray.container import DatasetMeta, VariableMeta, open_reader, verify_file
from xarray_hurray.container.checksum import crc32c
from xarray_hurray.container.format import HEADER_SIZE, REFERENCE, Slot, pack_header
from xarray_hurray.errors import HurrayFormatError
from xarray_hurray.layout import RowMajorLayout
from xarray_hurray.testing.sparse import write_sparse_file
from xarray_hurray.zarr.references import kerchunk_references

MIB = 2**20

BOUND = 64 * MIB
"""What a read, ``verify`` or ``info`` may allocate beyond its result."""


def variable(name, shape, chunks, dtype="uint8", **kw) -> VariableMeta:
    dims = tuple(f"{name}{k}" for k in range(len(shape)))
    return VariableMeta(
        name=name, dims=dims, shape=shape, dtype=dtype, chunks=chunks, layout=RowMajorLayout(), **kw
    )


def grid_variable(exponent: int) -> VariableMeta:
    """A uint8 variable of ``2**exponent`` one-element chunks, as a map."""
    rows = 2 ** (exponent // 2)
    return variable("v", (rows, 2**exponent // rows), (1, 1))


# ---------------------------------------------------------------- a root entry of none


def head_only(path: Path, var: VariableMeta) -> None:
    """A file of the header, the metadata of ``var`` and a root whose entry is
    offset 0, crc32c 0: no page table, which only a variable without chunks may have."""
    meta = DatasetMeta(attrs={}, variables=(var,)).to_bytes()
    root = np.zeros(1, dtype=REFERENCE).tobytes()
    slot = Slot(
        generation=1,
        metadata_offset=HEADER_SIZE,
        metadata_length=len(meta),
        metadata_crc32c=crc32c(meta),
        root_offset=HEADER_SIZE + len(meta),
        root_length=len(root),
        root_crc32c=crc32c(root),
        file_length=HEADER_SIZE + len(meta) + len(root),
    )
    path.write_bytes(pack_header(slot) + meta + root)


@pytest.mark.parametrize("exponent", [11, 36, 40, 62])
def test_a_variable_with_chunks_is_refused_without_its_page_table(tmp_path, exponent):
    path = tmp_path / "none.hurray"
    head_only(path, variable("v", (2**exponent,), (1,)))
    refusal = "the page table of variable 'v' is at offset 0"
    with pytest.raises(HurrayFormatError, match=refusal):
        open_reader(path)
    (problem,), _, peak = measured(lambda: verify_file(path))
    assert refusal in problem
    assert peak < MIB  # nothing sized by the 2**62 chunks declared
    assert cli_main(["verify", str(path)]) == 1
    with pytest.raises(HurrayFormatError, match=refusal):
        xr.open_dataset(path, engine="hurray")


def test_a_variable_without_chunks_has_no_page_table(tmp_path):
    path = tmp_path / "empty.hurray"
    head_only(path, variable("v", (0,), (4,)))
    assert open_reader(path).read("v").shape == (0,)
    assert verify_file(path) == []


# ---------------------------------------------------------------- bytes after the end


@pytest.mark.parametrize("extra", [1000, 50_000])
def test_verify_reports_the_bytes_after_the_end_of_the_version(tmp_path, extra, capsys):
    path = tmp_path / "f.hurray"
    xh.to_hurray(xr.Dataset({"v": ("x", np.arange(100.0))}), path)
    assert verify_file(path) == []
    with open(path, "ab") as f:
        f.write(bytes(range(256)) * (extra // 256) + bytes(extra % 256))
    (problem,) = verify_file(path)
    assert problem.startswith(f"{extra} bytes after the end of the version")
    assert cli_main(["verify", str(path)]) == 1
    assert problem in capsys.readouterr().err
    assert report(open_reader(path))["uncommitted_bytes"] == extra
    np.testing.assert_array_equal(open_reader(path).read("v"), np.arange(100.0))


# ---------------------------------------------------------------- values


def sparse_case(tmp_path: Path, empty_pages: bool):
    """A file of three variables of mostly missing chunks, a few stored, and the
    numpy truth of each."""
    rng = np.random.default_rng(7)
    variables = (
        variable("a", (1024, 1024), (1, 1)),  # 2**20 chunks, fill 0
        variable(
            "b",
            (3001, 2999),
            (4, 4),
            dtype="float32",
            chunk_order="morton",
            fill_value=np.float32(np.nan).tobytes(),
        ),
        variable("c", (7, 5000), (1, 3), dtype="string", chunk_axes=(1,)),
    )
    stored, truth = {}, {}
    for var in variables:
        values = np.full(var.shape, var.fill, dtype=object if var.dtype == "string" else var.dtype)
        chunks = {}
        for chunk_id in rng.choice(var.chunk_count, 40, replace=False).tolist():
            corner = np.unravel_index(chunk_id, var.grid_shape)
            box = tuple(
                slice(int(i) * c, min((int(i) + 1) * c, n))
                for i, c, n in zip(corner, var.chunks, var.shape, strict=True)
            )
            shape = tuple(s.stop - s.start for s in box)
            if var.dtype == "string":
                block = np.array([f"s{chunk_id}-{k}" for k in range(math.prod(shape))], object)
            else:
                block = rng.integers(1, 200, math.prod(shape)).astype(var.dtype)
            chunks[chunk_id] = block.reshape(shape)
            values[box] = chunks[chunk_id]
        stored[var.name] = chunks
        truth[var.name] = values
    path = tmp_path / f"sparse-{empty_pages}.hurray"
    write_sparse_file(
        path, DatasetMeta(attrs={}, variables=variables), stored, empty_pages=empty_pages
    )
    return path, truth


def outer(values: np.ndarray, key: list) -> np.ndarray:
    """``values`` selected by ``key`` one axis at a time (the outer selection, as numpy
    would pair arrays of positions up pointwise), from the last axis."""
    for axis in range(len(key) - 1, -1, -1):
        values = values[(slice(None),) * axis + (key[axis],)]
    return values


def same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f":
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


@pytest.mark.parametrize("empty_pages", [False, True], ids=["absent pages", "empty pages"])
def test_sparse_grids_read_their_stored_chunks_and_the_fill(tmp_path, empty_pages):
    path, truth = sparse_case(tmp_path, empty_pages)
    reader = open_reader(path)
    rng = np.random.default_rng(3)
    for name, values in truth.items():
        assert same(reader.read(name), values), name
        for _ in range(6):
            key = []
            for n in values.shape:
                lo = int(rng.integers(0, n))
                kind = rng.integers(3)
                if kind == 0:
                    key.append(slice(lo, min(n, lo + int(rng.integers(1, 300)))))
                elif kind == 1:
                    key.append(np.sort(rng.integers(0, n, 5)))
                else:
                    key.append(lo)
            assert same(reader.read(name, tuple(key)), outer(values, key)), (name, key)
        # the selection of a stored chunk, whole
        var = reader.variable(name)
        (_, ids, _), *_ = reader.stored_chunks(name)
        box = np.unravel_index(ids[0], var.grid_shape)
        key = tuple(
            slice(int(i) * c, (int(i) + 1) * c) for i, c in zip(box, var.chunks, strict=True)
        )
        assert same(reader.read(name, key), values[key])
    assert verify_file(path) == []
    facts = {v["name"]: v for v in report(reader)["variables"]}
    for name in truth:
        sizes = reader.index(name)["size"]
        assert facts[name]["stored_chunks"] == np.count_nonzero(sizes) == 40
        assert facts[name]["stored_bytes"] == int(sizes.sum())
    with xr.open_dataset(path, engine="hurray", mask_and_scale=False) as ds:
        for name, values in truth.items():
            assert same(ds[name].values, values), name


def test_stored_chunks_are_listed_in_placement_order(tmp_path):
    path, truth = sparse_case(tmp_path, False)
    reader = open_reader(path)
    for name in truth:
        var = reader.variable(name)
        listed = list(reader.stored_chunks(name))
        positions = np.concatenate([p for p, _, _ in listed])
        entries = np.concatenate([e for _, _, e in listed])
        ids = var.placement[positions]  # the whole order, as a brute-force truth
        np.testing.assert_array_equal(np.concatenate([c for _, c, _ in listed]), ids)
        assert (np.diff(positions) > 0).all()
        index = reader.index(name)
        np.testing.assert_array_equal(np.flatnonzero(index["size"]), np.sort(ids))
        assert entries.tobytes() == index[ids].tobytes()


# ---------------------------------------------------------------- costs


def cost_steps(path: Path, result_key: tuple[slice, ...] | None):
    """The steps whose cost is bounded, each a callable."""
    steps = {
        "open": lambda: open_reader(path),
        "verify": lambda: verify_file(path),
        "info": lambda: report(open_reader(path)),
        "refs": lambda: kerchunk_references(open_reader(path), "file:///g.hurray"),
        "region": lambda: open_reader(path).read("v", (slice(100, 300), slice(5, 205))),
    }
    if result_key is not None:
        steps["read"] = lambda: open_reader(path).read("v", result_key)
    return steps


@pytest.mark.parametrize("exponent", [22, 26])
def test_all_missing_grids_cost_their_file_not_their_grid(tmp_path, exponent):
    """2**22 chunks took 15.6 s to verify and 35 s and 1.4 GB to read whole before;
    references to 2**24 took 1.45 GB and 27 s."""
    path = tmp_path / "g.hurray"
    var = grid_variable(exponent)
    size = write_sparse_file(path, DatasetMeta(attrs={}, variables=(var,)))
    assert size < 2**exponent // 60  # 16 bytes of page table per 1024 chunks
    whole = (slice(None), slice(None)) if exponent == 22 else None
    for step, run in cost_steps(path, whole).items():
        value, seconds, peak = measured(run)
        result = value.nbytes if isinstance(value, np.ndarray) else 0
        assert peak < BOUND + result, (step, peak)
        assert seconds < 5 + size / MIB, (step, seconds)
        if step == "read":
            assert value.shape == var.shape and not value.any()
        if step == "verify":
            assert value == []


@pytest.mark.slow
def test_grids_of_up_to_2_to_the_34_missing_chunks_cost_their_file():
    """2**34 chunks (256 MiB of page table): verify asked for 128 GiB before.  Each
    step in a fresh process, by the benchmark that gives docs/reliability.md its
    figures."""
    out = run_script("benchmarks/sparse_grids.py", "--exponents", 22, 30, 34, "--json", timeout=900)
    for exponent, row in json.loads(out).items():
        size = row.pop("file_bytes")
        assert size < 2 ** int(exponent) // 60
        for step, (seconds, _, grown) in row.items():
            result = 2 ** int(exponent) if step == "whole" else 0
            assert grown < BOUND + result, (exponent, step, grown)
            assert seconds < 5 + 0.2 * size / MIB, (exponent, step, seconds)
