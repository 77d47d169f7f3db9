"""Commits into a file: cost proportional to the change, placement order kept or
reported, and compaction back to full curve order."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.cli import main
from xarray_hurray.container import VERSION, HurrayFormatError, open_reader, verify_file
from xarray_hurray.container.storage import storage_order
from xarray_hurray.write.sinks import compact


def year(days: int, start: int = 0) -> xr.Dataset:
    values = np.random.default_rng(0).random((start + days, 32, 64), dtype="float32")
    return xr.Dataset(
        {"t2m": (("time", "lat", "lon"), values[start:])},
        coords={"time": pd.date_range("2023-01-01", periods=start + days)[start:]},
    )


ENCODING = {"t2m": {"chunks": (1, 16, 16), "chunk_axes": ["lat", "lon"]}, "time": {"chunks": (32,)}}


@pytest.fixture
def path(tmp_path):
    target = tmp_path / "year.hurray"
    xh.to_hurray(year(60), target, encoding=ENCODING)
    return target


def test_an_append_writes_about_the_day_and_keeps_curve_order(path):
    before = path.stat().st_size
    xh.to_hurray(year(1, start=60), path, append_dim="time")
    grown = path.stat().st_size - before
    reader = open_reader(path)
    day = int(reader.index("t2m")["size"][-8:].sum())  # the 8 chunks of the new day
    # the day's chunks, the rewritten last index page (at most 1024 entries of 20
    # bytes) and time chunk, new page tables, root and metadata: far from the file
    assert day < grown < day + 1024 * 20 + 4_000 < before / 10
    order = storage_order(reader)
    assert order["out_of_order"] == {"t2m": 0, "time": 0}
    assert order["uncommitted_bytes"] == 0
    xr.testing.assert_identical(xr.open_dataset(path, engine="hurray").load(), year(61))


def test_a_region_write_writes_its_chunks_and_compact_restores_order(path, capsys):
    before = path.stat().st_size
    fix = year(2, start=10) * 0 - 1
    xh.to_hurray(fix.drop_vars("time"), path, region={"time": slice(10, 12)})
    assert path.stat().st_size - before < 2 * 8 * 16 * 16 * 4 + 8_000
    order = storage_order(open_reader(path))
    assert order["out_of_order"]["t2m"] > 0 and order["unreferenced_bytes"] > 0
    assert main(["info", str(path)]) == 0
    text = capsys.readouterr().out
    assert "no longer referenced" in text and "out of order" in text
    expected = year(60)
    expected["t2m"][10:12] = -1
    assert main(["compact", str(path)]) == 0
    after = storage_order(open_reader(path))
    assert after == {
        "unreferenced_bytes": 0,
        "uncommitted_bytes": 0,
        "out_of_order": {"t2m": 0, "time": 0},
    }
    assert verify_file(path) == []
    xr.testing.assert_identical(xr.open_dataset(path, engine="hurray").load(), expected)


@pytest.mark.parametrize("minor", [0, 1, 2])
def test_a_file_of_a_draft_version_is_refused_by_every_writer_and_kept(path, tmp_path, minor):
    """Appends, compaction and conversion of a file of a draft version (1.0 to 1.2,
    never released) are refused, naming the version, and leave it as it was."""
    blob = bytearray(path.read_bytes())
    blob[10:12] = minor.to_bytes(2, "little")
    path.write_bytes(bytes(blob))
    draft = rf"format version 1\.{minor} is a draft"
    with pytest.raises(HurrayFormatError, match=draft):
        xh.to_hurray(year(1, start=60), path, append_dim="time")
    with pytest.raises(HurrayFormatError, match=draft):
        compact(path)
    assert main(["convert", str(path), str(tmp_path / "out.hurray")]) == 2
    assert path.read_bytes() == bytes(blob)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_a_damaged_chunk_stops_a_rewrite_and_the_file_stays(path):
    reader = open_reader(path)
    entry = reader.index("t2m")[5]
    data = bytearray(path.read_bytes())
    data[int(entry["offset"]) + 3] ^= 0xFF  # one chunk of the old version damaged
    path.write_bytes(bytes(data))
    with pytest.raises(HurrayFormatError, match="checksum mismatch in chunk 5"):
        compact(path)
    assert path.read_bytes() == bytes(data)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


@pytest.mark.parametrize("order", ["hilbert", "morton"])
def test_appends_along_a_curve_axis_reorder_the_index_not_the_data(tmp_path, order):
    """The curve runs over time too: a longer grid places the old chunks anew, so the
    index pages are rewritten (entries permuted), while their bytes stay where they
    are, out of the new order until compacted."""
    path = tmp_path / "c.hurray"
    values = np.arange(40 * 24, dtype="int32").reshape(40, 24)
    ds = xr.Dataset({"v": (("time", "x"), values)})
    xh.to_hurray(
        ds.isel(time=slice(0, 9)), path, encoding={"v": {"chunks": (2, 4)}}, chunk_order=order
    )
    for start, stop in [(9, 10), (10, 17), (17, 40)]:
        xh.to_hurray(ds.isel(time=slice(start, stop)), path, append_dim="time")
        assert verify_file(path) == []
        np.testing.assert_array_equal(open_reader(path).read("v"), values[:stop])
    assert storage_order(open_reader(path))["out_of_order"]["v"] > 0
    compact(path)
    assert storage_order(open_reader(path))["out_of_order"]["v"] == 0
    np.testing.assert_array_equal(open_reader(path).read("v"), values)


def test_a_failing_sync_of_the_new_slot_keeps_the_bytes_it_may_point_to(path, monkeypatch):
    # the slot's fsync fails (EIO) after the slot was written: the new version may
    # be on disk, so its bytes stay and the file reads as it
    real_fsync = os.fsync
    calls = []

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:  # the parts' sync passes, the slot's fails
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output"):
        xh.to_hurray(year(2, start=60), path, append_dim="time")
    monkeypatch.undo()
    assert verify_file(path) == []
    with xr.open_dataset(path, engine="hurray") as ds:
        xr.testing.assert_identical(ds.load(), year(62))


def test_a_failing_sync_of_the_new_parts_leaves_the_file_byte_identical(path, monkeypatch):
    before = path.read_bytes()

    def fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="Input/output"):
        xh.to_hurray(year(40, start=60), path, append_dim="time")  # 5 MB: it reaches the file
    monkeypatch.undo()
    assert path.read_bytes() == before


def test_updates_commit_in_place_and_compact_and_convert_write_the_same_values(path, tmp_path):
    """Appends and region writes commit new versions in place; ``compact`` and
    ``convert`` write a new file, with the same values."""
    xh.to_hurray(year(1, start=60), path, append_dim="time")
    fix = year(2, start=10) * 0 - 1
    xh.to_hurray(fix.drop_vars("time"), path, region={"time": slice(10, 12)})
    reader = open_reader(path)
    assert reader.version == VERSION and reader.header.generation == 3
    assert verify_file(path) == []
    expected = year(61)
    expected["t2m"][10:12] = -1
    xr.testing.assert_identical(xr.open_dataset(path, engine="hurray").load(), expected)
    converted = tmp_path / "converted.hurray"
    assert main(["convert", str(path), str(converted)]) == 0
    compact(path)
    for done in (path, converted):
        assert open_reader(done).version == VERSION
        assert verify_file(done) == []
        xr.testing.assert_identical(xr.open_dataset(done, engine="hurray").load(), expected)


def test_an_update_that_rewrites_an_object_writes_a_new_file_of_every_value(path):
    """A file rewritten whole is a new file: an object that an append rewrites (an
    fsspec store; not committed in place) is of generation 1, with every value."""
    import fsspec

    url = f"memory://update-{os.getpid()}/year.hurray"
    fsspec.filesystem("memory").pipe_file(url, path.read_bytes())
    xh.to_hurray(year(1, start=60), url, append_dim="time")
    reader = open_reader(url)
    assert reader.version == VERSION and reader.header.generation == 1
    assert verify_file(url) == []
    xr.testing.assert_identical(xr.open_dataset(url, engine="hurray").load(), year(61))
