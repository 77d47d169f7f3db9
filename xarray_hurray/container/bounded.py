"""Decoding a codec chain without letting the data choose how much memory it takes.

Every codec the format allows records, or implies, how many bytes its output has.
Before a codec runs, that size is read from its frame header and checked against a
limit, so a small chunk cannot expand into a huge allocation (a decompression bomb):
decoding stops at the chunk's declared size.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import zstandard
from numcodecs.abc import Codec

from .checksum import Bytes

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_BLOSC_HEADER = struct.Struct("<BBBBIII")
_BLOSC_MEMCPYED = 0x02
_BLOSC_DONT_SPLIT = 0x10


def expansion_bound(size: int) -> int:
    """The most bytes any allowed codec writes when encoding ``size`` bytes.

    Incompressible input grows a little (block headers, frame headers); this is a
    generous bound on that growth for zstd, lz4, zlib and blosc.
    """
    # zstd and lz4 add at most about 1/255 of the input plus a frame header, zlib 5 bytes
    # per 16 KiB block plus 6, blosc a 16-byte header plus per-block headers: 1/64
    # and 1 KiB cover all four with room to spare, while still refusing a bomb
    return size + size // 64 + 1024


def _zstd_content_size(data: Bytes) -> int:
    """The content size declared by the Zstandard frame ``data`` (RFC 8878), which must
    be exactly one frame: the decoder would decode every frame that follows, whatever
    the first one declares, so nothing may follow it (not even a skippable frame)."""
    if len(data) < 5 or data[:4] != _ZSTD_MAGIC:
        raise ValueError("not a Zstandard frame: wrong magic number")
    descriptor = data[4]
    single_segment = (descriptor >> 5) & 1
    dict_id_size = (0, 1, 2, 4)[descriptor & 3]
    fcs_size = (single_segment, 2, 4, 8)[descriptor >> 6]
    if fcs_size == 0:
        raise ValueError("the Zstandard frame does not declare its content size")
    start = 5 + (1 - single_segment) + dict_id_size
    if len(data) < start + fcs_size:
        raise ValueError("truncated Zstandard frame header")
    size = int.from_bytes(data[start : start + fcs_size], "little")
    end = _zstd_frame_end(data, start + fcs_size, has_checksum=bool(descriptor & 4))
    if end != len(data):
        raise ValueError(
            f"a chunk must be one Zstandard frame; {len(data) - end} bytes follow the frame"
        )
    # RFC 8878 § 3.1.1.1.4: a two-byte Frame_Content_Size field stores the size minus
    # 256 (sizes below 256 use the one-byte form), so that form covers 256 to 65791
    return size + 256 if fcs_size == 2 else size


def _zstd_frame_end(data: Bytes, offset: int, has_checksum: bool) -> int:
    """Where the frame whose blocks start at ``offset`` ends: after its last block and
    its checksum.  Each block header (3 bytes, little-endian) holds a last-block flag,
    the block type and the block size; an RLE block stores one byte."""
    last = False
    while not last:
        if offset + 3 > len(data):
            raise ValueError("truncated Zstandard frame: a block header is cut short")
        header = int.from_bytes(data[offset : offset + 3], "little")
        last, kind, size = bool(header & 1), (header >> 1) & 3, header >> 3
        if kind == 3:
            raise ValueError("a Zstandard block of the reserved type 3")
        offset += 3 + (1 if kind == 1 else size)
    return offset + 4 * has_checksum


def _lz4_content_size(data: Bytes) -> int:
    if len(data) < 4:
        raise ValueError("truncated LZ4 chunk: no length prefix")
    size: int = struct.unpack_from("<I", data)[0]
    return size


def _blosc_content_size(data: Bytes) -> int:
    if len(data) < _BLOSC_HEADER.size:
        raise ValueError("truncated Blosc frame header")
    _, _, flags, typesize, nbytes, blocksize, cbytes = _BLOSC_HEADER.unpack_from(data)
    if cbytes != len(data):
        raise ValueError(f"the Blosc frame records {cbytes} bytes but has {len(data)}")
    # c-blosc (1.x) splits a whole block into one stream per byte of its type when the
    # frame is compressed, not marked "don't split", and the type has at most 16
    # bytes and the block 128 elements; each stream decodes to the block's size over
    # the type's, rounded down, and the bytes past them are left as they were in a
    # scratch buffer: such a block is refused rather than read undefined
    split = not flags & (_BLOSC_MEMCPYED | _BLOSC_DONT_SPLIT) and 0 < typesize <= 16
    if split and blocksize // typesize >= 128 and nbytes >= blocksize and blocksize % typesize:
        raise ValueError(
            f"invalid Blosc frame: a block of {blocksize} bytes does not split into "
            f"{typesize} streams"
        )
    return int(nbytes)


_local = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """This thread's zstd decompressor.  numcodecs' Zstd makes a decompression
    context for every chunk (about 15 us, the larger part of decoding a 4 KiB
    chunk); a context kept per thread is made once.  Not shared between threads: a
    context is not thread-safe."""
    found: zstandard.ZstdDecompressor | None = getattr(_local, "zstd", None)
    if found is None:
        found = _local.zstd = zstandard.ZstdDecompressor()
    return found


def _zstd_decode(
    decompressor: zstandard.ZstdDecompressor, data: Bytes, declared: int, into: memoryview | None
) -> Bytes:
    """The ``declared`` bytes of the single Zstandard frame ``data`` (checked by
    :func:`_zstd_content_size`), decoded with ``decompressor``: into ``into`` when it
    holds exactly ``declared`` bytes, else into new bytes.  A bad frame raises
    RuntimeError, as numcodecs' Zstd does."""
    try:
        if into is not None and len(into) == declared:
            # the whole frame is in the input and the output holds its content, so
            # the library decodes it in one pass straight into ``into``
            got = decompressor.stream_reader(data, read_across_frames=False).readinto(into)
            out: Bytes = into
        else:
            out = decompressor.decompress(data)
            got = len(out)
    except zstandard.ZstdError as err:
        raise RuntimeError(f"Zstd decompression error: {err}") from None
    if got != declared:
        raise RuntimeError(f"Zstd decompression error: expected {declared} bytes, got {got}")
    return out


_DECLARED_SIZE = {"zstd": _zstd_content_size, "lz4": _lz4_content_size}
_DECLARED_SIZE["blosc"] = _blosc_content_size


def _zlib_decode(data: Bytes, limit: int) -> bytes:
    stream = zlib.decompressobj()
    try:
        # zlib records no size: decompress one byte past the limit, enough to tell an
        # over-long stream without producing all of it
        out = stream.decompress(data, limit + 1)
    except zlib.error as err:
        raise ValueError(f"invalid zlib stream: {err}") from err
    if len(out) > limit:
        raise ValueError(f"the zlib stream expands past {limit} bytes")
    if not stream.eof or stream.unused_data:
        raise ValueError("the zlib stream is truncated or followed by extra bytes")
    return out


def decode_bounded(
    codecs: Sequence[Codec], data: Bytes, limit: int, into: memoryview | None = None
) -> Bytes:
    """Undo ``codecs`` (applied in order when encoding) on ``data``, never producing
    more than ``limit`` bytes at the last step or more than that step's input allows
    at the steps before it.

    ``data`` is read where it lies (bytes or a slice of a larger buffer).  When the
    last step is zstd and its frame declares ``len(into)`` bytes, they are decoded
    into ``into``, which is returned; otherwise the result is new bytes (or ``data``
    itself for an empty chain).

    Raises
    ------
    ValueError
        When a codec's frame declares more bytes than allowed, or is malformed.
    RuntimeError
        When a codec library rejects the data.
    """
    # Caps from the last decode back: the last one (undoing the first codec) may give
    # ``limit`` bytes; each decode before it gives the next one's input, which encoding
    # at most the next cap's bytes could have made: the expansion bound of that cap.
    # caps[0] is the first decode's, the outermost codec's.
    caps: list[int] = []
    for _ in codecs:
        caps.insert(0, expansion_bound(caps[0]) if caps else limit)
    out: Any = data
    for step, (codec, cap) in enumerate(zip(reversed(codecs), caps, strict=True)):
        # the frame parsers index bytes; a codec's array output is made bytes first
        out = out if isinstance(out, bytes | bytearray | memoryview) else bytes(out)
        if codec.codec_id == "zlib":
            out = _zlib_decode(out, cap)
            continue
        declared = _DECLARED_SIZE[codec.codec_id](out)
        if declared > cap:
            raise ValueError(
                f"the {codec.codec_id} frame declares {declared} bytes, more than the "
                f"{cap} this chunk can hold"
            )
        if codec.codec_id == "zstd" and declared:
            last = step == len(codecs) - 1
            out = _zstd_decode(_zstd_decompressor(), out, declared, into if last else None)
        else:  # a zstd frame of no bytes (no chunk has one) keeps numcodecs' decoder
            out = codec.decode(out)
    return out if isinstance(out, bytes | bytearray | memoryview) else np.asarray(out).tobytes()
