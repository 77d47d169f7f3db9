"""The codec chain's zstd encoder: numcodecs' frames, one context per thread; the
bounded decoder's refusals."""

from __future__ import annotations

import pickle
import struct
from concurrent.futures import ThreadPoolExecutor

import numcodecs
import numpy as np
import pytest
import zstandard
from numcodecs import zstd as numcodecs_zstd

from xarray_hurray.container.bounded import decode_bounded
from xarray_hurray.container.codecs import _CONTEXTS, CodecChain, ZstdEncoder

SAME_LIBRARY = numcodecs_zstd.VERSION_NUMBER == (lambda v: v[0] * 10000 + v[1] * 100 + v[2])(
    zstandard.ZSTD_VERSION
)


def inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [
        rng.standard_normal(16).astype("f4"),  # 64 bytes of noise
        np.sin(np.arange(4096) / 40).astype("f4"),
        np.zeros(70000, dtype="u1"),
        # 200 kB: a frame of two blocks (zstd's blocks hold 128 KiB), which the slow
        # levels 19 to 22 compress in tenths of a second
        rng.integers(0, 4, 100_000).astype("i2"),
    ]


@pytest.mark.parametrize("level", [-131073, -5, 0, 1, 3, 19, 22, 23, 100])
@pytest.mark.parametrize("checksum", [False, True])
def test_frames_are_numcodecs_frames_that_record_their_size(level, checksum):
    chain = CodecChain([{"id": "zstd", "level": level, "checksum": checksum}])
    reference = numcodecs.Zstd(level=level, checksum=checksum)
    for data in inputs():
        frame = chain.encode(data)
        assert reference.decode(frame) == data.tobytes()
        # one frame that declares its content size: the bounded decode takes it at
        # exactly that size and refuses one byte less
        assert decode_bounded(chain.codecs, frame, data.nbytes) == data.tobytes()
        with pytest.raises(ValueError, match="declares"):
            decode_bounded(chain.codecs, frame, data.nbytes - 1)
        assert bool(frame[4] & 4) == checksum  # the frame descriptor's checksum flag
        if SAME_LIBRARY:
            assert frame == reference.encode(data)


def test_threads_compress_at_once_each_with_its_own_context():
    encode = ZstdEncoder(3, False)
    rng = np.random.default_rng(1)
    blocks = [rng.integers(0, 9, n).astype("i4") for n in rng.integers(1, 5000, 400)]
    with ThreadPoolExecutor(4) as pool:
        frames = list(pool.map(encode, blocks))
    for block, frame in zip(blocks, frames, strict=True):
        assert numcodecs.Zstd().decode(frame) == block.tobytes()


def test_a_chain_pickles_as_its_settings_and_encodes_after():
    chain = CodecChain([{"id": "zstd", "level": 5, "checksum": True}])
    chain.encode(np.arange(10))  # this thread has a context now; it does not travel
    again = pickle.loads(pickle.dumps(chain))
    assert again.encode(np.arange(100)) == chain.encode(np.arange(100))


class _Failing:
    def compress(self, data: object) -> bytes:
        raise MemoryError("no room for the frame")


def test_a_failed_compression_drops_the_context_so_no_frame_runs_into_the_next():
    encode = ZstdEncoder(1, False)
    encode(np.arange(8))
    _CONTEXTS.compressors[(1, False)] = _Failing()
    with pytest.raises(MemoryError):
        encode(np.arange(8))
    frame = encode(np.arange(8))
    assert numcodecs.Zstd().decode(frame) == np.arange(8).tobytes()


def test_a_zstd_frame_decodes_into_a_buffer_of_its_declared_size():
    chain = CodecChain([{"id": "zstd", "level": 3}])
    for data in inputs():
        frame = chain.encode(data)
        into = bytearray(data.nbytes)
        # read from a slice of a larger buffer, as chunks are cut from a request
        padded = memoryview(b"xx" + frame + b"yy")[2:-2]
        out = decode_bounded(chain.codecs, padded, data.nbytes, memoryview(into))
        assert isinstance(out, memoryview) and out.obj is into
        assert bytes(into) == data.tobytes()
        # a buffer of another size is not used: the bytes are new
        other = memoryview(bytearray(data.nbytes + 1))
        assert decode_bounded(chain.codecs, frame, data.nbytes + 1, other) == data.tobytes()
        assert not any(other)


def test_a_blosc_block_that_does_not_split_into_its_streams_is_refused():
    """c-blosc splits a block of 1000 bytes of a 3-byte type into 3 streams of 333
    bytes and leaves its last byte as it finds it in a scratch buffer: refused, rather
    than read as whatever that byte was."""
    streams = b"".join(struct.pack("<I", 333) + bytes([k]) * 333 for k in range(3))
    body = struct.pack("<i", 20) + streams  # the block's offset, then its streams
    frame = bytes([2, 1, 0x01 | 1 << 5, 3]) + struct.pack("<III", 1000, 1000, 16 + len(body))
    frame += body
    with pytest.raises(ValueError, match="a block of 1000 bytes does not split into 3 streams"):
        decode_bounded([numcodecs.Blosc()], frame, 2**16)
    # the same block of 999 bytes splits evenly, and reads
    body = struct.pack("<i", 20) + streams
    even = bytes([2, 1, 0x01 | 1 << 5, 3]) + struct.pack("<III", 999, 999, 16 + len(body)) + body
    decoded = bytes(decode_bounded([numcodecs.Blosc()], even, 2**16))
    assert decoded == bytes([0, 1, 2]) * 333
