"""A read of a few elements of a large chunk costs what the chunk stores and what the
read returns, not what the chunk decodes to (docs/reliability.md, "What a file can
make a reader allocate"): a row-major chunk is known row-major without building its
permutation, and a large one of which a read takes a small box is decoded a piece at
a time, keeping only the box (:meth:`ChunkCodec.decode_part`).

Before, 10 elements of a 256 MiB float32 chunk took 1.6 GiB, and of a 66 KB zstd
frame declaring 2 GiB (RLE blocks) 40 s and 12 GiB; writing the 256 MiB chunk took
1.3 GiB.  The bounds are checked with tracemalloc here and with the peak resident
memory of a fresh process among the slow tests.
"""

from __future__ import annotations

import math
import os
import struct
import sys

import numcodecs
import numpy as np
import pytest
import xarray as xr
import zstandard
from allocations import measured
from hypothesis import given
from hypothesis import strategies as st
from scripts import ROOT

import xarray_hurray as xh
from xarray_hurray.container import ChunkCodec
from xarray_hurray.container.bounded import (
    STREAM_WINDOW_BYTES,
    ZSTD_BLOCK_BYTES,
    decode_bounded,
    decoded_pieces,
)
from xarray_hurray.container.chunk import PART_DECODE_BYTES
from xarray_hurray.container.select import OuterSelection
from xarray_hurray.testing.frames import one_chunk_file, one_chunk_variable, rle_frame

sys.path.insert(0, str(ROOT / "benchmarks"))
import large_chunk

MIB = 2**20

BOUND = 16 * MIB
"""What a read of ten elements may allocate (tracemalloc) beside what it stores."""


# ----------------------------------------------------------- decoding in pieces


def outcome(step):
    """What ``step()`` gives: its bytes, or the kind of error it raises."""
    try:
        return bytes(step())
    except (ValueError, RuntimeError) as err:
        return type(err).__name__


def pieces_of(codecs, data: bytes, limit: int, piece: int = 1000):
    """The bytes :func:`decoded_pieces` gives, joined (``b"whole"``: it leaves the
    bytes to a whole decode)."""
    pieces = decoded_pieces(codecs, data, limit, piece)
    if pieces is None:
        return b"whole"
    out = bytearray()
    for got in pieces:
        assert len(got) <= max(piece, ZSTD_BLOCK_BYTES)
        out += got
    return out


@given(
    st.binary(min_size=1, max_size=20_000).map(lambda b: b * 3),
    st.sampled_from([{"id": "zstd", "level": 1}, {"id": "zstd", "level": 9}, {"id": "zlib"}]),
    st.one_of(st.none(), st.tuples(st.integers(0, 10**6), st.integers(1, 255))),
    st.integers(0, 100),
)
def test_pieces_are_the_whole_decode_or_its_refusal(data, config, flip, slack):
    """Pieces of a zstd frame or zlib stream join to the bytes a whole decode gives,
    damaged ones too, or both refuse it with the same kind of error."""
    codec = numcodecs.get_codec(dict(config))
    frame = bytearray(codec.encode(data))
    if flip is not None:
        frame[flip[0] % len(frame)] ^= flip[1]
    limit = len(data) + slack
    whole = outcome(lambda: decode_bounded([codec], bytes(frame), limit))
    pieces = outcome(lambda: pieces_of([codec], bytes(frame), limit))
    # a damaged header may ask for a window past the bound: then decoded whole
    assert pieces == whole or (flip is not None and pieces == b"whole")
    if flip is None:
        assert whole == data


@pytest.mark.parametrize("window", [None, 2**21, 2**31])
@pytest.mark.parametrize("size", [1, ZSTD_BLOCK_BYTES, 3 * ZSTD_BLOCK_BYTES + 5])
def test_frames_of_rle_blocks_decode_block_by_block_as_the_library_does(window, size):
    frame = rle_frame(size, 0x42, window)
    zstd = numcodecs.Zstd()
    expected = outcome(lambda: zstandard.ZstdDecompressor().decompress(frame))
    assert expected == b"\x42" * size
    assert outcome(lambda: pieces_of([zstd], frame, size)) == expected
    # a frame that declares more than its blocks hold, or less
    for declared in {size + 1, size - 1} - {0}:
        wrong = frame.replace(struct.pack("<Q", size), struct.pack("<Q", declared), 1)
        assert outcome(lambda w=wrong: pieces_of([zstd], w, size + 1)) == "RuntimeError"
        assert outcome(lambda w=wrong: decode_bounded([zstd], w, size + 1)) == "RuntimeError"


def test_raw_and_rle_blocks_mixed_decode_as_the_library_does():
    raw = bytes(range(256)) * 3
    blocks = (len(raw) << 3 | 0).to_bytes(3, "little") + raw
    blocks += (1000 << 3 | 1 << 1 | 1).to_bytes(3, "little") + b"\x07"
    frame = b"\x28\xb5\x2f\xfd\xe0" + struct.pack("<Q", len(raw) + 1000) + blocks
    expected = zstandard.ZstdDecompressor().decompress(frame)
    assert expected == raw + b"\x07" * 1000
    assert bytes(pieces_of([numcodecs.Zstd()], frame, len(expected))) == expected


def test_chains_that_cannot_be_decoded_in_pieces_say_so():
    data = np.arange(100_000, dtype="f4").tobytes()
    limit = len(data)
    assert decoded_pieces([], data, limit, 1000) is None
    for config in ({"id": "lz4"}, {"id": "blosc"}):
        codec = numcodecs.get_codec(config)
        assert decoded_pieces([codec], codec.encode(data), limit, 1000) is None
    two = [numcodecs.Zlib(), numcodecs.Zstd()]
    assert decoded_pieces(two, two[1].encode(two[0].encode(data)), limit, 1000) is None
    # a frame of compressed blocks that asks for a window past the streaming bound
    params = zstandard.ZstdCompressionParameters(window_log=26)
    wide = zstandard.ZstdCompressor(compression_params=params).compress(data * 400)
    assert decoded_pieces([numcodecs.Zstd()], wide, len(data) * 400, 1000) is None
    assert STREAM_WINDOW_BYTES < 2**26


# ------------------------------------------------------ a chunk, a box of it


def codec_of(shape, codecs, layout=None) -> ChunkCodec:
    return ChunkCodec(one_chunk_variable(shape, codecs, layout))


BIG = (2048, 2048)
"""A chunk of 16 MiB of float32: large enough to be decoded in pieces."""


@pytest.fixture(scope="module")
def big_chunk():
    assert 4 * math.prod(BIG) >= PART_DECODE_BYTES
    rng = np.random.default_rng(5)
    return (np.add.outer(np.arange(BIG[0]), np.arange(BIG[1])) % 1000).astype("f4") + rng.integers(
        0, 3, BIG
    ).astype("f4")


KEYS = [
    (slice(0, 1), slice(0, 10)),
    (slice(2047, 2048), slice(2038, 2048)),
    (slice(100, 400), slice(1000, 1200)),
    (slice(0, 2048), slice(5, 6)),
    (np.array([3, 1900, 7]), slice(10, 20)),
    (np.array([2047]), np.array([0, 2047, 1024])),
    (slice(None), slice(None)),  # the whole chunk: decoded whole
]


ZLIB = ({"id": "zlib", "level": 1},)
CODECS = [({"id": "zstd"},), pytest.param(ZLIB, marks=pytest.mark.slow), ({"id": "lz4"},), ()]
"""The codecs a chunk is stored with: zlib's 16 MiB compresses slowly, among the slow
tests (its pieces are checked against its whole decode above)."""


@pytest.mark.parametrize("codecs", CODECS, ids=["zstd", "zlib", "lz4", "none"])
def test_a_box_of_a_chunk_is_the_whole_decode_indexed(big_chunk, codecs):
    codec = codec_of(BIG, codecs)
    data = codec.encode(big_chunk)
    whole = codec.decode(data)
    for key in KEYS:
        _, index = OuterSelection.build(key, BIG, BIG).piece(0)
        np.testing.assert_array_equal(codec.decode_part(data, index), whole[index])
        np.testing.assert_array_equal(codec.decode_part(data, index), big_chunk[index])


@pytest.mark.parametrize("codecs", CODECS[:2], ids=["zstd", "zlib"])
def test_a_box_of_a_damaged_chunk_fails_as_the_whole_chunk_does(big_chunk, codecs):
    codec = codec_of(BIG, codecs)
    data = bytearray(codec.encode(big_chunk))
    data[len(data) // 2] ^= 0xFF
    _, index = OuterSelection.build((slice(0, 1), slice(0, 10)), BIG, BIG).piece(0)
    with pytest.raises((ValueError, RuntimeError)) as whole:
        codec.decode(bytes(data))
    with pytest.raises(type(whole.value)):
        codec.decode_part(bytes(data), index)


# ------------------------------------------------------------ through the reader


def test_ten_elements_of_a_64_mib_chunk_cost_the_ten(tmp_path):
    # past the 64 MiB a decoding thread keeps for its chunks
    field = np.full((4096, 4112), 3.5, dtype="f4")
    field[4095, 4086:4096] = np.arange(10)
    path = tmp_path / "big.hurray"
    ds = xr.Dataset({"v": (("y", "x"), field)})
    encoding = {"v": {"chunks": field.shape}}
    _, _, written = measured(lambda: xh.to_hurray(ds, path, encoding=encoding))
    # the chunk compressed where it lies, into the compressor's worst-case output (a
    # buffer of the chunk's size, of which the pages written are 64 KiB): no copy of
    # the chunk and no permutation (which took four times the chunk)
    assert written < field.nbytes + BOUND
    reader = xh.open_reader(path)
    got, _, peak = measured(lambda: reader.read("v", (4095, slice(4086, 4096))))
    np.testing.assert_array_equal(got, np.arange(10))
    assert peak < BOUND + os.path.getsize(path)


@pytest.mark.parametrize("window", [None, 2**21], ids=["single-segment", "windowed"])
def test_ten_elements_of_a_frame_declaring_2_gib_cost_the_ten(tmp_path, window):
    shape = (2**15, 2**14)  # 2 GiB of float32: the most one chunk may decode to
    path = tmp_path / "bomb.hurray"
    one_chunk_file(path, shape, rle_frame(4 * math.prod(shape), 0x42, window))
    assert os.path.getsize(path) < 70_000
    reader = xh.open_reader(path)
    expected = np.frombuffer(b"\x42" * 40, "<f4")
    for row in (0, shape[0] - 1):
        got, seconds, peak = measured(lambda r=row: reader.read("v", (r, slice(0, 10))))
        np.testing.assert_array_equal(got, expected)
        assert peak < BOUND
        assert seconds < 10  # 40 s before, on an idle machine


# ------------------------------------------------------------ a fresh process


def run_step(*args: object) -> dict[str, float]:
    """A step of the large-chunk benchmark (a write of 8192 x 8192 random float32 in
    one chunk, or a read of ten elements of a row) in a fresh process importing this
    package: its seconds and the growth of its peak resident memory."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = large_chunk.step(env, *args)
    assert "error" not in result, result
    return result


@pytest.mark.slow
def test_a_256_mib_chunk_writes_and_reads_in_the_stored_bytes_and_64_mib(tmp_path):
    """Peak resident memory of a fresh process, past what it held before the step:
    the write holds the stored chunk (random float32: 228 MiB) and little else, a
    read of ten elements the stored chunk (read whole, to check its checksum) and
    a piece of it decoded at a time."""
    path = tmp_path / "big.hurray"
    write = run_step("random", path, 8192)
    stored = os.path.getsize(path)
    assert write["grown"] < stored + 64 * MIB, (write, stored)
    for row in (0, 8191):
        read = run_step("read", path, 0, row)
        assert read["grown"] < stored + 64 * MIB, (read, stored)


@pytest.mark.slow
@pytest.mark.parametrize("window", [None, 2**21], ids=["single-segment", "windowed"])
def test_a_frame_declaring_2_gib_reads_in_64_mib(tmp_path, window):
    shape = (2**15, 2**14)
    path = tmp_path / "bomb.hurray"
    one_chunk_file(path, shape, rle_frame(4 * math.prod(shape), 0x42, window))
    for row in (0, shape[0] - 1):
        read = run_step("read", path, 0, row)
        assert read["grown"] < 64 * MIB, read
        assert read["seconds"] < 10, read
