"""Reads from a local file: pieces handed in placement order to the threads that read
and decode them, each chunk decompressed into a buffer of its thread and placed; a
read of one whole chunk is that chunk as decoded."""

from __future__ import annotations

import itertools
import sys
import tracemalloc
from pathlib import Path

import google_crc32c
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import xarray_hurray as xh
from xarray_hurray.container import ContainerReader, checksum, read_paths, threads
from xarray_hurray.io import LocalFileSource
from xarray_hurray.testing import CountingSource

SIDE, CHUNK = 80, 16


@pytest.fixture(scope="module")
def truth() -> np.ndarray:
    values = np.random.default_rng(3).standard_normal((SIDE, SIDE)).astype("f4")
    values[16:48, 32:64] = np.nan  # chunks of the fill value alone: missing chunks
    return values


# every codec path: zstd decodes into the thread's buffer, the others into bytes of
# their own; the curve layout permutes, the row-major one is a view of the buffer
FILES = [
    ("zstd", "auto"),
    ("zstd", "row-major"),
    ("none", "auto"),
    ("lz4", "row-major"),
    ("zlib", "auto"),
]


@pytest.fixture(scope="module", params=FILES, ids=["-".join(f) for f in FILES])
def path(request, tmp_path_factory, truth) -> Path:
    codecs, layout = request.param
    path = tmp_path_factory.mktemp("pieces") / "f.hurray"
    ds = xr.Dataset({"v": (("y", "x"), truth)})
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (CHUNK, CHUNK)}}, codecs=codecs, layout=layout)
    return path


KEYS = [
    (slice(None), slice(None)),
    (slice(3, 77), slice(10, 50)),
    (slice(5, 79, 7), np.array([79, 0, 33, 33, 12])),
    (17, slice(None)),
    (slice(16, 32), slice(0, 16)),  # one whole chunk
    (slice(64, 80), slice(64, 80)),  # the last chunk, whole
]


@settings(max_examples=25, deadline=None)
@given(piece=st.sampled_from([1, 700, 3000, 2**30]), key=st.sampled_from(KEYS))
def test_every_piece_size_reads_the_values(path, truth, piece, key):
    # a piece of one byte reads each chunk alone; of 1 GiB each request whole
    old = read_paths.PIECE_BYTES
    read_paths.PIECE_BYTES = piece
    try:
        counting = CountingSource(LocalFileSource(path))
        got = ContainerReader(counting).read("v", key)
    finally:
        read_paths.PIECE_BYTES = old
    np.testing.assert_array_equal(got, truth[key])
    # after the head, the pieces, each a request of its own, each once, and no chunk
    # read twice; the decode threads read them as they take them, so two threads'
    # pieces may reach the file in either order (see the next test for the order)
    pieces = counting.requests[1:]
    assert counting.batches[1:] == [1] * len(pieces)
    ordered = sorted(pieces)
    assert all(stop <= start for (_, stop), (start, _) in itertools.pairwise(ordered))


@pytest.mark.parametrize("piece", [1, 3000])
def test_pieces_are_handed_to_the_decode_threads_in_placement_order(path, monkeypatch, piece):
    """With one thread, the order the pieces are handed out is the order they are read:
    front to back through the file."""
    monkeypatch.setattr(read_paths, "PIECE_BYTES", piece)
    monkeypatch.setattr(threads, "pool_threads", lambda: 1)
    counting = CountingSource(LocalFileSource(path))
    ContainerReader(counting).read("v", (slice(3, 77), slice(10, 50)))
    starts = [start for start, _ in counting.requests[1:]]
    assert len(starts) > 1 and starts == sorted(starts)


def test_pieces_are_cut_between_chunks_at_the_piece_size(path, monkeypatch):
    monkeypatch.setattr(read_paths, "PIECE_BYTES", 3000)
    counting = CountingSource(LocalFileSource(path))
    opened = ContainerReader(counting)
    entries = opened.index("v")
    stored = entries[entries["size"] > 0]
    ends = set((stored["offset"] + stored["size"]).tolist())
    opened.read("v")
    pieces = counting.requests[1:]
    assert all(stop in ends for _, stop in pieces)  # no chunk is cut
    sizes = {int(o): int(s) for o, s in zip(stored["offset"], stored["size"], strict=True)}
    for start, stop in pieces:
        # over the piece size only when its first chunk alone is
        assert stop - start <= max(3000, sizes[start])
    assert sum(stop - start for start, stop in pieces) == int(stored["size"].sum())


def test_a_whole_chunk_is_read_as_one_request_into_an_array_of_its_own(path, truth):
    counting = CountingSource(LocalFileSource(path))
    opened = ContainerReader(counting)
    key = (slice(16, 32), slice(0, 16))
    first = opened.read("v", key)
    assert len(counting.requests) == 2  # the head, then the chunk
    assert first.flags.writeable
    first[:] = 7  # the caller's to change: the next read is not
    np.testing.assert_array_equal(opened.read("v", key), truth[key])


def test_a_read_holds_the_pieces_being_decoded_not_every_chunk_read(tmp_path):
    # 8 MiB of noise (about as large stored): the read holds its result, a few pieces
    # and the threads' buffers, not the 8 MiB of stored chunks before decoding them
    values = np.random.default_rng(0).standard_normal((1024, 2048)).astype("f4")
    path = tmp_path / "noise.hurray"
    xh.to_hurray(
        xr.Dataset({"v": (("y", "x"), values)}), path, encoding={"v": {"chunks": (128, 128)}}
    )
    opened = xh.open_reader(path)
    opened.read("v", (slice(0, 128), slice(0, 256)))  # the pool and the codec made
    tracemalloc.start()
    try:
        got = opened.read("v")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(got, values)
    assert peak - values.nbytes < 4 * read_paths.PIECE_BYTES + 2 * 2**20


def test_damaged_chunks_in_pieces_raise_the_first_in_the_selections_order(tmp_path, truth):
    path = tmp_path / "f.hurray"
    ds = xr.Dataset({"v": (("y", "x"), truth)})
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (CHUNK, CHUNK)}})
    entries = xh.open_reader(path).index("v")
    blob = bytearray(path.read_bytes())
    for chunk in (24, 3):  # row-major ids: 3 comes first in the selection
        blob[int(entries["offset"][chunk]) + int(entries["size"][chunk]) // 2] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(xh.HurrayFormatError, match=r"checksum mismatch in chunk 3 of"):
        xh.open_reader(path).read("v")


@pytest.mark.parametrize("fast", [True, False])
def test_checksums_of_slices_of_any_buffer(fast, monkeypatch):
    if not fast:
        monkeypatch.setitem(sys.modules, "crc32c", None)  # not installed
    extend = checksum._implementation()
    data = np.random.default_rng(1).bytes(3 * 2**20)
    assert extend(0, b"123456789") == 0xE3069283  # RFC 3720's check value
    for lo, hi in ((0, len(data)), (5, 2**20 + 9), (100, 100), (7, 70000)):
        expected = google_crc32c.value(data[lo:hi])
        assert extend(0, memoryview(data)[lo:hi]) == expected
        assert extend(0, bytearray(data[lo:hi])) == expected
        # a checksum extended over two parts is that of the whole
        middle = (lo + hi) // 2
        assert extend(extend(0, data[lo:middle]), memoryview(data)[middle:hi]) == expected
