"""The model of the format (container/model.py): files give, through one interface,
the entries that the specification reads from their bytes, and the interface's
answers agree with each other."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from test_hurray_golden import GOLDEN
from test_hurray_spec import parse

from xarray_hurray.container import open_reader
from xarray_hurray.container.format import INDEX_ENTRY, PAGE_REFERENCE
from xarray_hurray.container.model import FileModel

DATA = Path(__file__).parents[1] / "data"

FILES = {
    "tree": GOLDEN,
    "dtypes": DATA / "hurray_1_3_dtypes.hurray",
    "layouts": DATA / "hurray_1_3_layouts.hurray",
    "fuzz tree": DATA / "fuzz_seed_1_3_tree.hurray",
    "pyramid": DATA / "fuzz_seed_1_3_pyramid.hurray",
}


def model(path: Path) -> FileModel:
    return open_reader(path).model


def test_the_model_holds_the_entries_the_spec_reads():
    _, _, entries, ranges = parse(GOLDEN.read_bytes())
    found = model(GOLDEN)
    referenced = [(offset, offset + length) for offset, length, _ in found.fixed_parts]
    for path, placed in entries.items():
        index = found.chunk_index(path)
        every = index.every_entry()[index.var.placement]
        assert every.tolist() == [entry[:3] for entry in placed]
        referenced += [(offset, offset + length) for offset, length in index.parts()]
        for _, _, stored in index.stored_chunks():
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
        assert (stored == (every["size"] > 0)).all()
        ids = rng.integers(0, max(var.chunk_count, 1), 20) if var.chunk_count else np.empty(0, int)
        assert index.entries(ids).tobytes() == every[ids].tobytes()
        for chunk_id in ids.tolist():
            entry = index.entry(chunk_id)
            expected = tuple(int(v) for v in every[chunk_id].tolist())
            assert entry == (expected if stored[chunk_id] else None)
        listed = list(index.stored_chunks())
        positions = np.concatenate([p for p, _, _ in listed] or [np.empty(0, np.int64)])
        chunk_ids = np.concatenate([c for _, c, _ in listed] or [np.empty(0, np.int64)])
        entries = np.concatenate([e for _, _, e in listed] or [np.empty(0, INDEX_ENTRY)])
        # the stored chunks, in placement order, each once
        assert positions.tolist() == np.flatnonzero(stored[var.placement]).tolist()
        assert chunk_ids.tolist() == var.placement[positions].tolist()
        assert entries.tobytes() == every[chunk_ids].tobytes()


@pytest.mark.parametrize("name", list(FILES))
def test_the_parts_of_a_file_lie_apart_inside_its_bytes(name):
    """Parts anywhere, none overlapping another, all inside the version's bytes; the
    index parts are the page table and the present pages, which listing the stored
    chunks reads."""
    found = model(FILES[name])
    length = found.header.file_length
    parts = [(offset, size) for offset, size, _ in found.fixed_parts]
    chunks = []
    for path, _ in found.metadata.all_variables():
        index = found.chunk_index(path)
        own = index.parts()
        parts += own
        for _, _, stored in index.stored_chunks():
            chunks += [(int(o), int(s)) for o, s in stored[["offset", "size"]].tolist()]
        table_bytes = len(index.page_table()) * PAGE_REFERENCE.itemsize
        assert index.listing_bytes() == sum(size for _, size in own) - table_bytes
    ranges = sorted((offset, offset + size) for offset, size in parts + chunks)
    assert all(stop <= start for (_, stop), (start, _) in itertools.pairwise(ranges))
    assert ranges[0][0] == 0 and ranges[-1][1] <= length
