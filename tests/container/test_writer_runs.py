"""Writing chunks in runs gives the file that writing them one at a time gives."""

from __future__ import annotations

import google_crc32c
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xarray_hurray.container import ContainerWriter, DatasetMeta, VariableMeta
from xarray_hurray.container import writer as writer_module
from xarray_hurray.container.writer import IOV_MAX, write_gathered
from xarray_hurray.errors import HurrayValueError
from xarray_hurray.layout import HilbertLayout, RowMajorLayout


def metadata() -> DatasetMeta:
    field = VariableMeta(
        name="field", dims=("y", "x"), shape=(10, 14), dtype="float32", chunks=(2, 2),
        layout=HilbertLayout(2, 1),
    )  # fmt: skip
    line = VariableMeta(
        name="line", dims=("z",), shape=(9,), dtype="int8", chunks=(2,), layout=RowMajorLayout()
    )
    return DatasetMeta(attrs={}, variables=(field, line))


def chunk_bytes(meta: DatasetMeta, seed: int) -> dict[str, list[bytes | None]]:
    """Stored bytes of every chunk in placement order, some missing (None)."""
    rng = np.random.default_rng(seed)
    return {
        var.name: [
            None if rng.random() < 0.3 else rng.bytes(int(rng.integers(1, 40)))
            for _ in range(var.chunk_count)
        ]
        for var in meta.variables
    }


@pytest.mark.parametrize("given_crcs", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_runs_of_any_length_give_the_bytes_of_single_writes(tmp_path, seed, given_crcs):
    """Runs of chunks give the file of chunks written one at a time, whether the
    writer computes their checksums or is given them (as google_crc32c computes them,
    any value for a missing chunk)."""
    meta = metadata()
    chunks = chunk_bytes(meta, seed)
    with ContainerWriter(tmp_path / "one.hurray", meta) as writer:
        for var in meta.variables:
            for chunk_id, data in zip(var.placement.tolist(), chunks[var.name], strict=True):
                writer.write_chunk(var.name, chunk_id, data)
    rng = np.random.default_rng(seed)
    with ContainerWriter(tmp_path / "runs.hurray", meta) as writer:
        for var in meta.variables:
            done = 0
            while done < var.chunk_count:
                stop = done + int(rng.integers(0, 9))  # empty runs too
                run = chunks[var.name][done:stop]
                crcs = [7 if d is None else google_crc32c.value(d) for d in run]
                writer.write_chunks(
                    var.name, var.placement[done:stop], run, crcs if given_crcs else None
                )
                done = min(stop, var.chunk_count)
    assert (tmp_path / "runs.hurray").read_bytes() == (tmp_path / "one.hurray").read_bytes()


def test_a_run_is_refused_at_its_first_chunk_out_of_order(tmp_path):
    meta = metadata()
    ids = meta.variables[0].placement[:5].copy()
    ids[3] = ids[4]
    with pytest.raises(HurrayValueError) as err:
        with ContainerWriter(tmp_path / "f.hurray", meta) as writer:
            writer.write_chunks("field", ids, [b"x"] * 5)
    expected = meta.variables[0].placement[3]
    assert str(err.value) == (
        f"chunk {ids[3]} of 'field' written out of order; the next chunk is 'field' {expected}"
    )
    assert not (tmp_path / "f.hurray").exists()


@pytest.mark.parametrize("name", ["line", "nope"])
def test_a_run_of_another_variable_than_the_next_is_refused(tmp_path, name):
    meta = metadata()
    with pytest.raises(HurrayValueError) as err:
        with ContainerWriter(tmp_path / "f.hurray", meta) as writer:
            writer.write_chunks(name, np.arange(2), [b"x"] * 2)
    expected = meta.variables[0].placement[0]
    assert str(err.value) == (
        f"chunk 0 of {name!r} written out of order; the next chunk is 'field' {expected}"
    )
    assert not (tmp_path / "f.hurray").exists()


def test_a_run_after_the_last_chunk_is_refused(tmp_path):
    meta = metadata()
    with pytest.raises(
        HurrayValueError, match="chunk 0 of 'line' written out of order; the next chunk is none"
    ):
        with ContainerWriter(tmp_path / "f.hurray", meta) as writer:
            for var in meta.variables:
                writer.write_chunks(var.name, var.placement, [b"x"] * var.chunk_count)
            writer.write_chunks("line", np.arange(2), [b"x"] * 2)
    assert not (tmp_path / "f.hurray").exists()


@pytest.mark.parametrize(
    ("data", "count", "crcs", "match"),
    [
        ([b"a", b"", b"c"], 3, None, "chunk .* of 'field' has no bytes"),
        ([b"a", b"b"], 3, None, "3 chunk ids for 2 chunks of 'field'"),
        ([b"a", b"b"], 2, [1], "1 checksums for 2 chunks of 'field'"),
    ],
)
def test_a_run_with_an_empty_chunk_or_too_few_chunks_is_refused(tmp_path, data, count, crcs, match):
    meta = metadata()
    with pytest.raises(HurrayValueError, match=match):
        with ContainerWriter(tmp_path / "f.hurray", meta) as writer:
            writer.write_chunks("field", meta.variables[0].placement[:count], data, crcs)


@settings(max_examples=30, deadline=None)
@given(
    st.binary(max_size=20),
    st.lists(st.binary(max_size=9), max_size=2 * IOV_MAX + 5),
    st.binary(max_size=20),
)
def test_gathered_writes_follow_the_buffered_bytes_in_order(
    tmp_path_factory, before, buffers, after
):
    """Buffers written gathered (more than one writev takes, some empty) land after
    what the buffered file held and before what it is given next, byte for byte."""
    path = tmp_path_factory.mktemp("gathered") / "out"
    with open(path, "wb") as file:
        file.write(before)
        write_gathered(file, buffers)
        file.write(after)
    assert path.read_bytes() == before + b"".join(buffers) + after


def test_a_file_synced_in_the_background_as_it_is_written_reads_back_whole(tmp_path):
    """With a background sync every few KiB (a file of many of them), the committed
    file holds every chunk as written."""
    meta = metadata()
    chunks = chunk_bytes(meta, 7)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(writer_module, "WRITE_BACK_BYTES", 64)
        with ContainerWriter(tmp_path / "synced.hurray", meta) as out:
            for var in meta.variables:
                order = var.placement.tolist()
                for start in range(0, len(order), 3):
                    ids = np.array(order[start : start + 3], dtype=np.int64)
                    out.write_chunks(var.name, ids, chunks[var.name][start : start + 3])
    with ContainerWriter(tmp_path / "plain.hurray", meta) as out:
        for var in meta.variables:
            for chunk_id, data in zip(var.placement.tolist(), chunks[var.name], strict=True):
                out.write_chunk(var.name, chunk_id, data)
    assert (tmp_path / "synced.hurray").read_bytes() == (tmp_path / "plain.hurray").read_bytes()
