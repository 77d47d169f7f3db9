"""Index pages: a bitmap of the stored chunks, then their entries only.

The packer and the parser (container/index.py) against a decoder written here from
the spec's table alone, and the reader's refusal of every page rule a file can break
(docs/spec/container.md, "Pages"), each in a real file whose checksums are
recomputed and bound to their places, so that the rule itself, not a checksum, is
what fails; and of a page read in another page's place, which only its checksum's
place tells.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
import xarray as xr
from depth import check_property, depths
from hypothesis import strategies as st

import xarray_hurray as xh
from xarray_hurray.container import open_reader, verify_file
from xarray_hurray.container.checksum import Places, crc32c
from xarray_hurray.container.format import (
    INDEX_ENTRY,
    PAGE_REFERENCE,
    PREFIX,
    REFERENCE,
    SLOT_SIZE,
    Slot,
)
from xarray_hurray.container.index import pack_page, unpack_page


def brute_force_decode(page: bytes, n: int) -> list[tuple[int, int, int]]:
    """``(offset, size, crc32c)`` of each of the ``n`` positions of a page, read
    byte by byte as the spec's table says; zeros for a missing chunk."""
    bitmap_bytes = (n + 7) // 8
    out = []
    at = bitmap_bytes
    for j in range(n):
        if page[j // 8] >> (j % 8) & 1:
            out.append(struct.unpack_from("<QQI", page, at))
            at += 20
        else:
            out.append((0, 0, 0))
    assert at == len(page)
    return out


@st.composite
def pages(draw: st.DrawFn) -> tuple[int, np.ndarray]:
    """A page of ``n`` positions (1 to 1024), a random set of them stored."""
    n = draw(st.integers(1, 1024))
    stored = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    entries = np.zeros(n, dtype=INDEX_ENTRY)
    k = int(stored.sum())
    entries["offset"][stored] = rng.integers(144, 2**40, k)
    entries["size"][stored] = rng.integers(1, 2**20, k)
    entries["crc32c"][stored] = rng.integers(0, 2**32, k, dtype=np.uint64)
    return n, entries


@depths(40, 400)
def test_a_page_packs_and_unpacks_as_the_spec_reads_it(examples):
    check_property(examples, packs_and_unpacks_as_the_spec_reads_it, pages())


def packs_and_unpacks_as_the_spec_reads_it(page: tuple[int, np.ndarray]) -> None:
    n, entries = page
    data = pack_page(entries)
    stored = int((entries["size"] != 0).sum())
    assert len(data) == (n + 7) // 8 + 20 * stored
    expected = [tuple(int(v) for v in e) for e in entries.tolist()]
    assert brute_force_decode(data, n) == expected
    back = unpack_page(
        data,
        n,
        length=len(data),
        crc=crc32c(data),
        what="index page 0 of 'v'",
        file_length=2**41 + 2**21,
    )
    assert back.tolist() == entries.tolist()


# ---- the reader against damaged pages, checksums recomputed -------------------------


def sparse_file(directory) -> tuple[bytes, np.ndarray]:
    """A file of 1300 one-element chunks (two pages), every third stored."""
    values = np.full(1300, np.nan, dtype="f4")
    values[::3] = np.arange(434)
    path = directory / "sparse.hurray"
    xh.to_hurray(xr.Dataset({"v": ("x", values)}), path, encoding={"v": {"chunks": (1,)}})
    return path.read_bytes(), values


def with_page(
    blob: bytes, page: int, data: bytes, length: int | None = None, place: int | None = None
) -> bytes:
    """``blob`` with page ``page`` of variable ``v`` replaced by ``data``, appended at
    the end of the file; its page table entry records ``length`` (by default that of
    ``data``) and every checksum above it (page, page table, root, slot) is resealed,
    the page's bound to the place of page ``place`` (by default its own)."""
    reader = open_reader_of(blob)
    slot = reader.header
    places = Places("v", reader.variable("v").grid_shape)
    table = reader.page_table("v").copy()
    out = bytearray(blob[: slot.file_length])
    crc = crc32c(data) ^ places.page(page if place is None else place)
    table[page] = (len(out), len(data) if length is None else length, crc)
    out += data
    table_at = int(reader.root_entry("v")["offset"])
    out[table_at : table_at + table.nbytes] = table.tobytes()
    root = np.frombuffer(
        bytes(out[slot.root_offset : slot.root_offset + slot.root_length]), REFERENCE
    )
    root = root.copy()
    root["crc32c"][0] = crc32c(table.tobytes()) ^ places.table
    out[slot.root_offset : slot.root_offset + root.nbytes] = root.tobytes()
    new = Slot(
        generation=slot.generation,
        metadata_offset=slot.metadata_offset,
        metadata_length=slot.metadata_length,
        metadata_crc32c=slot.metadata_crc32c,
        root_offset=slot.root_offset,
        root_length=slot.root_length,
        root_crc32c=crc32c(root.tobytes()),
        file_length=len(out),
        version=slot.version,
    )
    out[PREFIX.size : PREFIX.size + SLOT_SIZE] = new.pack(bytes(out[: PREFIX.size]))
    return bytes(out)


def open_reader_of(blob: bytes):
    import io

    from xarray_hurray.io import FileObjectSource

    return open_reader(FileObjectSource(io.BytesIO(blob)))


def page_bytes(blob: bytes, page: int) -> bytes:
    reader = open_reader_of(blob)
    ref = reader.page_table("v")[page]
    return blob[int(ref["offset"]) : int(ref["offset"]) + int(ref["length"])]


def test_the_sparse_file_reads_back(tmp_path):
    blob, values = sparse_file(tmp_path)
    reader = open_reader_of(blob)
    assert reader.page_table("v").dtype == PAGE_REFERENCE
    # 1024 positions then 276: bitmaps of 128 and 35 bytes, 342 and 92 entries
    assert reader.page_table("v")["length"].tolist() == [128 + 20 * 342, 35 + 20 * 92]
    np.testing.assert_array_equal(reader.read("v"), values)
    # the resealing helper alone changes nothing a reader sees
    same = with_page(blob, 1, page_bytes(blob, 1))
    np.testing.assert_array_equal(open_reader_of(same).read("v"), values)
    assert verify_file(open_reader_of(same)) == []


def _set_bit(page: bytes, j: int) -> bytes:
    out = bytearray(page)
    out[j // 8] |= 1 << (j % 8)
    return bytes(out)


def _entry(page: bytes, bitmap: int, k: int, **fields: int) -> bytes:
    """``page`` with fields of its ``k``-th entry changed."""
    entries = np.frombuffer(page, INDEX_ENTRY, offset=bitmap).copy()
    for name, value in fields.items():
        entries[name][k] = value
    return page[:bitmap] + entries.tobytes()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            lambda p: (p[:-1], None),
            r"index page 1 of 'v' has page_length 1874; its bitmap lists 92",
        ),
        (lambda p: (p + bytes(20), None), r"index page 1 of 'v' has page_length 1895"),
        # the last page has 276 positions: bits 276 to 279 of its 35-byte bitmap are padding
        (lambda p: (_set_bit(p, 277), None), r"index page 1 of 'v': bitmap bit 277 is set"),
        (lambda p: (_entry(p, 35, 3, size=0), None), r"entry 3 of index page 1 of 'v'.*size 0"),
        (
            lambda p: (_entry(p, 35, 0, offset=2**40), None),
            r"entry 0 of index page 1 of 'v': offset 1099511627776",
        ),
        (lambda p: (p, 20609), r"page of 'v' 1: its page_length 20609 exceeds the largest"),
    ],
    ids=["short", "long", "padding bit", "empty entry", "outside", "over the bound"],
)
def test_the_reader_refuses_a_broken_page(tmp_path, damage, message):
    blob, _ = sparse_file(tmp_path)
    data, length = damage(page_bytes(blob, 1))
    broken = with_page(blob, 1, data, length)
    with pytest.raises(xh.HurrayFormatError, match=message):
        open_reader_of(broken).read("v")
    assert verify_file(open_reader_of(broken)) != []


def test_the_reader_refuses_a_page_that_fails_its_checksum(tmp_path):
    blob, _ = sparse_file(tmp_path)
    broken = bytearray(with_page(blob, 1, page_bytes(blob, 1)))
    broken[-1] ^= 1  # after sealing: the page's crc32c no longer matches
    with pytest.raises(xh.HurrayFormatError, match=r"index page 1 of 'v'"):
        open_reader_of(bytes(broken)).read("v")


def test_the_reader_refuses_a_page_in_another_pages_place(tmp_path):
    """Page 1's entry pointing at a valid page bound to page 0's place (an entry of the
    page table copied to another): its bitmap and entries could be read, its checksum
    tells."""
    blob, _ = sparse_file(tmp_path)
    # page 0's first 276 positions, a whole page 1 in size and layout
    first = open_reader_of(blob).page_table("v")[0]
    own = np.frombuffer(page_bytes(blob, 0), INDEX_ENTRY, offset=128, count=92)
    data = np.packbits(np.arange(276) % 3 == 0, bitorder="little").tobytes() + own.tobytes()
    assert int(first["offset"]) and len(data) == len(page_bytes(blob, 1))
    moved = with_page(blob, 1, data, place=0)
    with pytest.raises(
        xh.HurrayFormatError, match=r"checksum mismatch in index page 1 of 'v'.* another part's"
    ):
        open_reader_of(moved).read("v")
    # bound to its own place, the page passes its check: the chunks it lists, other
    # chunks', fail theirs
    resealed = open_reader_of(with_page(blob, 1, data, place=1))
    with pytest.raises(
        xh.HurrayFormatError, match=r"checksum mismatch in chunk 1024 of variable 'v'.* another"
    ):
        resealed.read("v")


def test_an_all_zero_bitmap_page_is_accepted(tmp_path):
    """A writer SHOULD leave such a page out; a reader accepts it: all missing."""
    blob, values = sparse_file(tmp_path)
    accepted = with_page(blob, 1, bytes(35))
    expected = values.copy()
    expected[1024:] = np.nan
    np.testing.assert_array_equal(open_reader_of(accepted).read("v"), expected)


def test_info_tells_the_room_kept_for_pages_from_earlier_versions(tmp_path, capsys):
    from xarray_hurray.cli import main

    blob, _ = sparse_file(tmp_path)
    path = tmp_path / "sparse.hurray"
    room = int(unreferenced_bytes(blob))
    # the upper bound of the two pages (every chunk stored) less what they take
    assert room == (128 + 1024 * 20 + 35 + 276 * 20) - (128 + 20 * 342 + 35 + 20 * 92)
    assert main(["info", str(path)]) == 0
    assert "unreferenced (room the first 64 KiB keep for index pages" in capsys.readouterr().out


def unreferenced_bytes(blob: bytes) -> int:
    from xarray_hurray.container.storage import storage_order

    return int(storage_order(open_reader_of(blob))["unreferenced_bytes"])
