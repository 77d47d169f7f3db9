"""The index packed after the chunks (container/head.py) against the file the
streaming writer produces, and with the chunks moved apart by unreferenced bytes."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hurray_datasets import everything

import xarray_hurray as xh
from xarray_hurray.container import open_reader, verify_file
from xarray_hurray.container.format import INDEX_ENTRY
from xarray_hurray.container.head import HeadPlan, pack_head, pack_pages


def _chunks_and_entries(path) -> tuple[HeadPlan, dict[str, np.ndarray], list[bytes]]:
    """The head plan of the file at ``path``, its entries in placement order, and
    the stored bytes of every chunk in file order."""
    reader = open_reader(path)
    plan = HeadPlan(reader.metadata)
    blob = path.read_bytes()
    entries, chunks = {}, []
    for name, var in plan.placed:  # the order the chunks are written in
        rows = reader.entries(name, var.placement)
        entries[name] = rows
        chunks += [blob[o : o + s] for o, s in zip(rows["offset"], rows["size"], strict=True)]
    return plan, entries, chunks


def _many_chunks() -> xr.Dataset:
    """10,000 chunks, one in five missing: 200 kB of pages, too many for the head."""
    values = np.arange(100_000, dtype=np.float32)
    values[::50] = np.nan  # not a whole chunk: stored
    values[: 10 * 2000] = np.nan  # whole chunks of the fill value: missing
    ds = xr.Dataset({"v": ("x", values)})
    ds["v"].encoding["chunks"] = (10,)
    return ds


@pytest.mark.parametrize(
    ("dataset", "front"), [(everything, True), (_many_chunks, False)], ids=["head", "after"]
)
def test_same_bytes_as_the_streaming_writer(tmp_path, dataset, front):
    """The streaming writer lays the file out as the head, the chunks in placement
    order, then the pages holding a stored chunk when they do not fit the head:
    packing the index after the chunks gives the same bytes."""
    path = tmp_path / "file.hurray"
    xh.to_hurray(dataset(), path)
    plan, entries, chunks = _chunks_and_entries(path)
    blob = path.read_bytes()
    body = b"".join(chunks)
    index = pack_head(plan, entries, plan.length + len(body))
    assert index.front_pages is front
    assert index.head + body + index.pages == blob
    if not front:
        # chunks 0 to 1999 are missing: the first of the ten pages (chunks 0 to 1023)
        # is left out, the second lists 48 stored chunks, the next seven are full
        # and the last lists all its 784; each starts with a bitmap of its positions
        entries = 48 + 7 * 1024 + 784
        assert len(index.pages) == 8 * 128 + 98 + entries * INDEX_ENTRY.itemsize


@pytest.mark.parametrize("gap", [1, 4096])
def test_chunks_apart_read_the_same(tmp_path, gap):
    """Chunks anywhere after the head, with unreferenced zeros before and between
    them, read back as the original and verify clean."""
    original = tmp_path / "everything.hurray"
    ds = everything()
    xh.to_hurray(ds, original, write_empty_chunks=True)
    plan, old, chunks = _chunks_and_entries(original)
    at = plan.length + gap
    body, moved = [], {}
    sizes = iter(chunks)
    for name, rows in old.items():
        new = np.zeros(len(rows), dtype=INDEX_ENTRY)
        for k, row in enumerate(rows):
            data = next(sizes)
            if row["size"]:
                new[k] = (at, row["size"], row["crc32c"])
                body.append(data + bytes(gap))
                at += len(data) + gap
        moved[name] = new
    path = tmp_path / "apart.hurray"
    index = pack_head(plan, moved, at)
    path.write_bytes(index.head + bytes(gap) + b"".join(body) + index.pages)
    assert verify_file(path) == []
    with xr.open_dataset(path, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), ds)


def test_pages_given_alone_pack_as_the_entries_of_every_chunk(tmp_path):
    """The pages holding a stored chunk, given by number, pack the same head and
    trailing pages as the entries of every chunk; pages out of order or of the wrong
    size are refused."""
    path = tmp_path / "file.hurray"
    xh.to_hurray(_many_chunks(), path)
    plan, entries, chunks = _chunks_and_entries(path)
    end = plan.length + sum(len(c) for c in chunks)
    rows = entries["v"]
    given = [
        (p, rows[p * 1024 : (p + 1) * 1024])
        for p in range(10)
        if rows["size"][p * 1024 :][:1024].any()
    ]
    assert [p for p, _ in given] == list(range(1, 10))  # page 0 holds missing chunks only
    assert pack_pages(plan, {"v": given}, end) == pack_head(plan, entries, end)
    for wrong in (given[::-1], [(1, given[0][1][:5])], [(10, given[0][1])]):
        with pytest.raises(ValueError, match="ascending order"):
            pack_pages(plan, {"v": wrong}, end)
