"""Checksums bound to their place (docs/spec/container.md, "Checksums bound to their
place"): the checksum a file stores for a chunk, an index page or a page table is the
CRC-32C of its bytes exclusive-or the CRC-32C of its place's key, so that valid parts
read in another part's place are refused; appends and updates keep every binding
valid, as a variable keeps its path and a chunk its grid coordinates."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
import xarray as xr
from depth import check_property, depths
from hypothesis import strategies as st

import xarray_hurray as xh
from xarray_hurray.container import open_reader, verify_file
from xarray_hurray.container.checksum import Places, crc32c
from xarray_hurray.container.format import PREFIX, SLOT_SIZE, Slot


def key_crc(kind: bytes, path: str, values: tuple[int, ...]) -> int:
    """The CRC-32C of a place's key, byte by byte as the spec lists them."""
    name = path.encode("utf-8")
    key = bytearray(kind) + len(name).to_bytes(4, "little") + name
    for value in values:
        key += value.to_bytes(8, "little")
    return crc32c(bytes(key))


@depths(30, 300)
def test_the_places_of_chunks_pages_and_tables_are_the_crcs_of_their_keys(examples):
    check_property(
        examples,
        places_are_the_crcs_of_their_keys,
        st.text(min_size=1, max_size=20),
        st.lists(st.integers(1, 70_000), min_size=0, max_size=4),
        st.data(),
    )


def places_are_the_crcs_of_their_keys(path: str, grid: list[int], data: st.DataObject) -> None:
    places = Places(path, tuple(grid))
    count = math.prod(grid)  # chunk numbers past an int64's are no file's
    ids = data.draw(st.lists(st.integers(0, min(count, 2**63) - 1), min_size=1, max_size=40))
    expected = [key_crc(b"C", path, coordinates(i, grid)) for i in ids]
    assert places.chunks(np.array(ids)).tolist() == expected
    assert [places.chunk(i) for i in ids] == expected
    page = data.draw(st.integers(0, 2**40))
    assert places.page(page) == key_crc(b"P", path, (page,))
    assert places.table == key_crc(b"T", path, ())


def coordinates(number: int, grid: list[int]) -> tuple[int, ...]:
    """The grid coordinates of chunk number ``number``, the last axis fastest."""
    out = []
    for count in reversed(grid):
        number, at = divmod(number, count)
        out.append(at)
    return tuple(reversed(out))


def two_variables(tmp_path) -> tuple[bytes, np.ndarray]:
    """A file of two variables of one shape, type and chunking, and other values."""
    values = np.arange(64, dtype="f4").reshape(8, 8)
    ds = xr.Dataset({"a": (("y", "x"), values), "b": (("y", "x"), -values)})
    path = tmp_path / "two.hurray"
    xh.to_hurray(ds, path, encoding={"a": {"chunks": (4, 4)}, "b": {"chunks": (4, 4)}})
    return path.read_bytes(), values


def resealed(blob: bytearray) -> bytes:
    """``blob`` with its root's checksum in slot 0 computed again."""
    slot = Slot.unpack(bytes(blob[: PREFIX.size]), bytes(blob[PREFIX.size : PREFIX.size + 64]))
    assert slot is not None
    root = bytes(blob[slot.root_offset : slot.root_offset + slot.root_length])
    fields = {**slot.__dict__, "root_crc32c": crc32c(root)}
    new = Slot(**fields)
    blob[PREFIX.size : PREFIX.size + SLOT_SIZE] = new.pack(bytes(blob[: PREFIX.size]))
    return bytes(blob)


def open_blob(blob: bytes):
    import io

    from xarray_hurray.io import FileObjectSource

    return open_reader(FileObjectSource(io.BytesIO(blob)))


def test_variables_whose_root_entries_are_exchanged_are_refused(tmp_path):
    good, _ = two_variables(tmp_path)
    slot = open_blob(good).header
    blob = bytearray(good)
    root = slot.root_offset
    blob[root : root + 12], blob[root + 12 : root + 24] = (
        good[root + 12 : root + 24],
        good[root : root + 12],
    )
    reader = open_blob(resealed(blob))  # the root itself is sound: it opens
    for name in ("a", "b"):
        with pytest.raises(xh.HurrayFormatError, match=rf"page table of '{name}'.* another part's"):
            reader.read(name)
    assert len(verify_file(reader)) == 2


def test_chunks_whose_index_entries_are_exchanged_are_refused(tmp_path):
    """Two entries of a page exchanged, the page, its table and the root resealed (as
    a writer would seal them): each chunk's checksum still names its own place."""
    good, values = two_variables(tmp_path)
    reader = open_blob(good)
    places = Places("a", reader.variable("a").grid_shape)
    table = reader.page_table("a").copy()
    offset, length = int(table["offset"][0]), int(table["length"][0])
    page = bytearray(good[offset : offset + length])
    first, second = 1, 1 + 20  # the bitmap is one byte: entries 0 and 1 after it
    page[first : first + 20], page[second : second + 20] = (
        page[second : second + 20],
        page[first : first + 20],
    )
    blob = bytearray(good)
    blob[offset : offset + length] = page
    table["crc32c"][0] = crc32c(bytes(page)) ^ places.page(0)
    table_at = int(reader.root_entry("a")["offset"])
    blob[table_at : table_at + table.nbytes] = table.tobytes()
    root_at = reader.header.root_offset
    blob[root_at + 8 : root_at + 12] = struct.pack("<I", crc32c(table.tobytes()) ^ places.table)
    moved = open_blob(resealed(blob))
    with pytest.raises(
        xh.HurrayFormatError,
        match=r"checksum mismatch in chunk \d of variable 'a'.* another part's",
    ):
        moved.read("a")
    np.testing.assert_array_equal(moved.read("b"), -values)  # the other variable reads
    problems = verify_file(moved)
    assert len(problems) == 2 and all("another part's" in p for p in problems)


def test_appends_and_region_writes_keep_every_binding_valid(tmp_path):
    """Appends along the slowest axis and along a curve axis change chunk numbers and
    placement positions of the chunks kept; their coordinates and path stay, so their
    entries, pages and tables are kept or rewritten with the same checksums."""
    path = tmp_path / "grow.hurray"
    values = np.arange(20 * 12, dtype="int32").reshape(20, 12)
    ds = xr.Dataset({"v": (("time", "x"), values)})
    xh.to_hurray(
        ds.isel(time=slice(0, 5), x=slice(0, 12)), path, encoding={"v": {"chunks": (2, 4)}}
    )
    for start, stop in [(5, 6), (6, 20)]:
        xh.to_hurray(ds.isel(time=slice(start, stop)), path, append_dim="time")
        assert verify_file(path) == []
    xh.to_hurray(ds.isel(time=slice(2, 4)) * 0, path, region={"time": slice(2, 4)})
    assert verify_file(path) == []
    expected = values.copy()
    expected[2:4] = 0
    np.testing.assert_array_equal(open_reader(path).read("v"), expected)


def test_a_variable_keeps_its_bindings_when_variables_are_numbered_anew(tmp_path):
    """A variable added to the root group numbers the variables of the groups anew;
    their paths stay, so they keep their page tables as they were."""
    path = tmp_path / "tree.hurray"
    xh.to_hurray(xr.DataTree.from_dict({"/b": xr.Dataset({"v": ("x", np.arange(4.0))})}), path)
    kept = open_reader(path).root_entry("b/v").tolist()
    xh.to_hurray(xr.DataTree.from_dict({"/": xr.Dataset({"r": ("k", [1.0])})}), path, mode="a")
    reader = open_reader(path)
    assert [p for p, _ in reader.metadata.all_variables()] == ["r", "b/v"]
    assert reader.root_entry("b/v").tolist() == kept
    assert verify_file(path) == []
    np.testing.assert_array_equal(reader.read("b/v"), np.arange(4.0))
