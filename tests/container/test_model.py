"""The one model of the format (container/model.py): files of every version give, through
the same interface, the entries that the specification reads from their bytes, and
the interface's answers agree with each other."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from test_hurray_golden import GOLDEN, GOLDEN_1_1, GOLDEN_1_2
from test_hurray_spec import parse, parse_1_1

from xarray_hurray.container import open_reader
from xarray_hurray.container.format import INDEX_ENTRY
from xarray_hurray.container.model import FileModel, FlatFile, PagedFile
from xarray_hurray.errors import HurrayValueError

DATA = Path(__file__).parents[1] / "data"

FILES = {
    "1.0": GOLDEN,
    "1.0 dtypes": DATA / "hurray_1_0_dtypes.hurray",
    "1.0 layouts": DATA / "hurray_1_0_layouts.hurray",
    "1.1": GOLDEN_1_1,
    "1.1 tree": DATA / "fuzz_seed_v1_1_tree.hurray",
    "1.2": GOLDEN_1_2,
    "1.2 tree": DATA / "fuzz_seed_v1_2_tree.hurray",
}


def model(path: Path) -> FileModel:
    return open_reader(path).model


def test_the_model_of_a_1_0_file_holds_the_entries_the_spec_reads():
    _, meta, indexes = parse(GOLDEN.read_bytes())
    found = model(GOLDEN)
    assert isinstance(found, FlatFile) and not found.in_place_updates
    for var in meta["variables"]:
        every = found.chunk_index(var["name"]).every_entry()
        assert every.tolist() == indexes[var["name"]]  # row-major, as stored


def test_the_model_of_a_1_1_file_holds_the_entries_the_spec_reads():
    _, _, entries, ranges = parse_1_1(GOLDEN_1_1.read_bytes())
    found = model(GOLDEN_1_1)
    assert isinstance(found, PagedFile) and found.in_place_updates
    assert found.pages.version == found.version == (1, 1)
    referenced = [(offset, offset + length) for offset, length, _ in found.fixed_parts]
    for path, placed in entries.items():
        index = found.chunk_index(path)
        assert index.every_entry()[index.var.placement].tolist() == placed
        referenced += [(offset, offset + length) for offset, length in index.parts()]
        for _, stored in index.stored_chunks():
            referenced += [(int(o), int(o + s)) for o, s in stored[["offset", "size"]].tolist()]
    # every part the spec's reading references, and nothing else
    assert sorted(referenced) == sorted(ranges)


@pytest.mark.parametrize("name", list(FILES))
def test_every_answer_of_an_index_agrees_with_the_entries_of_every_chunk(name):
    found = model(FILES[name])
    rng = np.random.default_rng(0)
    for path, var in found.metadata.all_variables():
        index = found.chunk_index(path)
        every = index.every_entry()
        stored = index.stored(every)
        # a missing chunk (size 0) only where the index lists stored chunks alone
        flat = isinstance(found, FlatFile)
        assert stored.all() if flat else (stored == (every["size"] > 0)).all()
        ids = rng.integers(0, max(var.chunk_count, 1), 20) if var.chunk_count else np.empty(0, int)
        assert index.entries(ids).tobytes() == every[ids].tobytes()
        for chunk_id in ids.tolist():
            entry = index.entry(chunk_id)
            expected = tuple(int(v) for v in every[chunk_id].tolist())
            assert entry == (expected if stored[chunk_id] else None)
        listed = list(index.stored_chunks())
        positions = np.concatenate([p for p, _ in listed] or [np.empty(0, np.int64)])
        entries = np.concatenate([e for _, e in listed] or [np.empty(0, INDEX_ENTRY)])
        # the stored chunks, in placement order, each once
        assert positions.tolist() == np.flatnonzero(stored[var.placement]).tolist()
        assert entries.tobytes() == every[var.placement[positions]].tobytes()


@pytest.mark.parametrize("name", list(FILES))
def test_the_parts_of_a_file_are_its_bytes_by_the_rule_of_its_version(name):
    """A 1.0 file: header, metadata, the indexes back to back, then the chunks back to
    back in placement order (:attr:`back_to_back`).  From 1.1: parts anywhere, none
    overlapping another, all inside the version's bytes; the index parts are the page
    table and the present pages, which listing the stored chunks reads."""
    found = model(FILES[name])
    length = found.header.file_length
    parts = [(offset, size) for offset, size, _ in found.fixed_parts]
    chunks = []
    for path, _ in found.metadata.all_variables():
        index = found.chunk_index(path)
        own = index.parts()
        parts += own
        for _, stored in index.stored_chunks():
            chunks += [(int(o), int(s)) for o, s in stored[["offset", "size"]].tolist()]
        if isinstance(found, FlatFile):
            assert index.listing_bytes() == sum(size for _, size in own)
            for wrong in (index.page_table, index.root_entry):
                with pytest.raises(HurrayValueError, match=r"format 1\.0"):
                    wrong()
        else:
            table_bytes = len(index.page_table()) * found.pages.reference.itemsize
            assert index.listing_bytes() == sum(size for _, size in own) - table_bytes
    span = found.back_to_back
    if span is None:
        ranges = sorted((offset, offset + size) for offset, size in parts + chunks)
        assert all(stop <= start for (_, stop), (start, _) in itertools.pairwise(ranges))
        assert ranges[0][0] == 0 and ranges[-1][1] <= length
    else:
        at = 0
        for offset, size in sorted(parts):  # header, metadata, the indexes in turn
            assert offset == at
            at += size
        assert at == span[0]
        for offset, size in chunks:  # variable by variable, in placement order
            assert offset == at
            at += size
        assert at == span[1] == length
