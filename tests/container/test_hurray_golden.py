"""The golden Hurray file of format 1.3, the first release: its bytes and its content
are fixed.

From 1.3 on, files stay readable with identical results, for ever:
``hurray_1_3_tree.hurray`` is read by every later version and never written again.
It holds a tree of groups, every kind of chunk index (a page table in the head,
chunks left out as the fill, a variable of two index pages listing 12 stored chunks
of 1100) and codec-free chunks of the three layouts, so that the writer reproduces
it byte for byte whatever the codec libraries.  When the format changes on purpose,
bump ``xarray_hurray.container.VERSION`` and add a golden file for the new version
(``python tests/container/test_hurray_golden.py`` writes this one's content); never
rewrite this one.  The drafts before 1.3 (1.0 to 1.2, never released) are refused.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import VERSION, ContainerReader, open_reader
from xarray_hurray.container.checksum import crc32c
from xarray_hurray.io import open_source
from xarray_hurray.write.sinks import StagedRewrite

GOLDEN = Path(__file__).parents[1] / "data" / "hurray_1_3_tree.hurray"


def golden_dataset() -> xr.Dataset:
    """The content of the golden file's root group: the element types of the drafts'
    golden file and a variable with missing chunks (two of its four chunks hold only
    the fill value)."""
    sparse = np.full((8, 8), np.nan, dtype="f4")
    sparse[:4, :4] = np.arange(16).reshape(4, 4)
    sparse[4:, 4:] = -1.5
    sparse[7, 7] = np.nan
    ds = xr.Dataset(
        {
            "field": (("y", "x"), np.arange(64, dtype="f4").reshape(8, 8) / 4),
            "counts": (("y", "z"), np.arange(40, dtype="i2").reshape(8, 5) - 20),
            "names": (("z",), np.array(["a", "bb", "", "dé", "🌍"], dtype=object)),
            "codes": (("z",), np.array(["ab", "c", "d", "efg", "h"], dtype="U3")),
            "flag": ((), np.True_),
            "sparse": (("y", "x"), sparse),
        },
        coords={
            "time": ("y", pd.date_range("2024-01-01", periods=8, freq="D")),
            "x": np.linspace(0.0, 7.0, 8),
        },
        attrs={"title": "golden", "answer": np.int64(42), "ratios": [0.5, 0.25]},
    )
    ds["field"].attrs["units"] = "m"
    return ds


GOLDEN_ENCODING = {
    "field": {"chunks": (4, 4)},
    "counts": {"chunks": (3, 5), "chunk_order": "morton"},
    "names": {"chunks": (2,), "layout": "row-major"},
    "codes": {"chunks": (2,)},
    "sparse": {"chunks": (4, 4)},
}


def golden_tree() -> xr.DataTree:
    """The content of the golden file: :func:`golden_dataset` at the root and a group
    holding a variable of 1100 one-element chunks (two index pages), 12 stored: 11 on
    the first page, one on the second."""
    long = np.full(1100, np.nan, dtype="f4")
    long[:1100:100] = np.arange(11)
    long[1050] = 42
    return xr.DataTree.from_dict(
        {
            "/": golden_dataset(),
            "/g": xr.Dataset({"long": ("n", long)}, attrs={"group": "g"}),
            "/g/h": xr.Dataset({"note": ((), "deep")}),
        }
    )


def write_golden(path: Path) -> None:
    """Write the golden content with fixed, codec-free settings (the layout "auto":
    Hilbert or Morton where the chunk shape allows it)."""
    encoding = {"/": GOLDEN_ENCODING, "/g": {"long": {"chunks": (1,)}}}
    xh.to_hurray(golden_tree(), path, codecs=None, encoding=encoding, layout="auto")


def test_the_golden_file_is_of_the_current_version():
    assert ContainerReader(open_source(GOLDEN)).version == VERSION == (1, 3), (
        "add a golden file for the new version"
    )


def test_writing_gives_the_golden_bytes(tmp_path):
    write_golden(tmp_path / "new.hurray")
    assert (tmp_path / "new.hurray").read_bytes() == GOLDEN.read_bytes(), (
        "the bytes of a write changed: bump the format VERSION and add a golden file"
    )


def test_a_rewrite_gives_the_golden_bytes(tmp_path):
    """A rewrite of the golden file whole (as ``hurray compact`` does), every chunk
    copied as stored, is the golden file."""
    copy = tmp_path / "copy.hurray"
    copy.write_bytes(GOLDEN.read_bytes())
    reader = open_reader(copy)
    with StagedRewrite(copy, reader, reader.metadata, {}):
        pass
    assert copy.read_bytes() == GOLDEN.read_bytes()


def test_the_golden_file_holds_the_golden_tree():
    with xr.open_datatree(GOLDEN, engine="hurray") as tree:
        xr.testing.assert_identical(tree.load(), golden_tree())
        assert tree["field"].encoding["layout"] == {
            "name": "hilbert",
            "hilbert_rank": 2,
            "hilbert_order": 2,
        }
        assert tree["counts"].encoding["layout"] == {"name": "morton", "morton_bits": [2, 3]}


def test_the_golden_file_leaves_out_the_fill_chunks():
    sizes = ContainerReader(open_source(GOLDEN)).index("sparse")["size"]
    assert (sizes == 0).tolist() == [False, True, True, False]


def test_the_golden_file_lists_only_stored_chunks():
    reader = ContainerReader(open_source(GOLDEN))
    table = reader.page_table("g/long")
    # page 0: a 128-byte bitmap and 11 entries; page 1: 10 bytes of bitmap, 1 entry
    assert table["length"].tolist() == [128 + 11 * 20, 10 + 20]
    # the pages are in the first 64 KiB, read with the head
    assert (table["offset"] + table["length"] <= 65536).all()
    stored = np.flatnonzero(reader.index("g/long")["size"])
    assert stored.tolist() == [*range(0, 1100, 100), 1050]


def test_the_golden_checksums_are_bound_to_their_places():
    """The checksums the file stores, against keys made here from the spec's words
    (docs/spec/container.md, "Checksums bound to their place"): a page table's, a
    page's and a chunk's CRC-32C of their bytes exclusive-or the CRC-32C of their
    keys."""
    blob = GOLDEN.read_bytes()
    reader = ContainerReader(open_source(GOLDEN))

    def key(kind: str, path: str, *values: int) -> int:
        name = path.encode()
        return crc32c(
            kind.encode() + struct.pack(f"<I{len(name)}s{len(values)}Q", len(name), name, *values)
        )

    def stored_bytes(offset: int, length: int) -> bytes:
        return blob[offset : offset + length]

    root = reader.root_entry("g/long")
    table = reader.page_table("g/long")
    assert int(root["crc32c"]) == crc32c(table.tobytes()) ^ key("T", "g/long")
    for page, ref in enumerate(table.tolist()):
        offset, length, crc = ref
        assert crc == crc32c(stored_bytes(offset, length)) ^ key("P", "g/long", page)
    # chunk 1050 of g/long, the one entry of page 1, and chunk (1, 1) of sparse
    ref = table[1]
    page = stored_bytes(int(ref["offset"]), int(ref["length"]))
    offset, size, crc = struct.unpack_from("<QQI", page, 10)
    assert crc == crc32c(stored_bytes(offset, size)) ^ key("C", "g/long", 1050)
    entry = reader.index("sparse")[3]  # the checksum of its bytes, as the reader gives it
    assert int(entry["crc32c"]) == crc32c(stored_bytes(int(entry["offset"]), int(entry["size"])))


@pytest.mark.parametrize("minor", [0, 1, 2])
def test_a_draft_version_is_refused_with_what_to_do(tmp_path, minor):
    """The drafts before the first release are refused, naming the version and what to
    do, by the reader and through xarray; the version is the first thing read."""
    blob = bytearray(GOLDEN.read_bytes())
    blob[10:12] = struct.pack("<H", minor)
    path = tmp_path / f"draft_1_{minor}.hurray"
    path.write_bytes(bytes(blob))
    expected = rf"format version 1\.{minor} is a draft .* first release, 1\.3: .*hurray convert"
    with pytest.raises(xh.HurrayFormatError, match=expected):
        open_reader(path)
    with pytest.raises(xh.HurrayFormatError, match=expected):
        xr.open_datatree(path, engine="hurray")


if __name__ == "__main__":
    write_golden(GOLDEN)
