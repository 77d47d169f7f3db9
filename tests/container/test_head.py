"""The head packed after the chunks (container/head.py) against the file the
streaming writer produces, and with the chunks moved apart by unreferenced bytes."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hurray_datasets import everything

import xarray_hurray as xh
from xarray_hurray.container import open_reader, verify_file
from xarray_hurray.container.format import INDEX_ENTRY
from xarray_hurray.container.head import HeadLayout, pack_head


def _chunks_and_entries(path) -> tuple[HeadLayout, dict[str, np.ndarray], list[bytes]]:
    """The head layout of the file at ``path``, its entries in placement order, and
    the stored bytes of every chunk in file order."""
    reader = open_reader(path)
    layout = HeadLayout(reader.metadata)
    blob = path.read_bytes()
    entries, chunks = {}, []
    for name, var in layout.variables:
        rows = reader.entries(name, var.placement)
        entries[name] = rows
        chunks += [blob[o : o + s] for o, s in zip(rows["offset"], rows["size"], strict=True)]
    return layout, entries, chunks


def test_same_bytes_as_the_streaming_writer(tmp_path):
    """For an index that fits the head, the streaming writer lays the file out as
    the head, then the chunks in placement order: packing the head after the
    chunks gives the same bytes."""
    path = tmp_path / "everything.hurray"
    xh.to_hurray(everything(), path)
    layout, entries, chunks = _chunks_and_entries(path)
    blob = path.read_bytes()
    assert pack_head(layout, entries, len(blob)) + b"".join(chunks) == blob


@pytest.mark.parametrize("gap", [1, 4096])
def test_chunks_apart_read_the_same(tmp_path, gap):
    """Chunks anywhere after the head, with unreferenced zeros before and between
    them, read back as the original and verify clean."""
    original = tmp_path / "everything.hurray"
    ds = everything()
    xh.to_hurray(ds, original, write_empty_chunks=True)
    layout, old, chunks = _chunks_and_entries(original)
    at = layout.length + gap
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
    path.write_bytes(pack_head(layout, moved, at) + bytes(gap) + b"".join(body))
    assert verify_file(path) == []
    with xr.open_dataset(path, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), ds)
