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
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import zstandard
from numcodecs.abc import Codec

from .checksum import Bytes

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_BLOSC_HEADER = struct.Struct("<BBBBIII")
_BLOSC_MEMCPYED = 0x02
_BLOSC_DONT_SPLIT = 0x10

ZSTD_BLOCK_BYTES = 128 * 2**10
"""The most content one Zstandard block holds (RFC 8878 § 3.1.1.2.4)."""

STREAM_WINDOW_BYTES = 32 * 2**20
"""Largest window (the decoded bytes a decoder keeps to resolve back references) of
a frame decoded in pieces (:func:`decoded_pieces`); a frame needing more is decoded
whole.  Every frame this package writes needs at most 8 MiB (zstd level 19;
level 3, the default, 2 MiB) and a zlib stream 32 KiB."""


def expansion_bound(size: int) -> int:
    """The most bytes any allowed codec writes when encoding ``size`` bytes.

    Incompressible input grows a little (block headers, frame headers); this is a
    generous bound on that growth for zstd, lz4, zlib and blosc.
    """
    # zstd and lz4 add at most about 1/255 of the input plus a frame header, zlib 5 bytes
    # per 16 KiB block plus 6, blosc a 16-byte header plus per-block headers: 1/64
    # and 1 KiB cover all four with room to spare, while still refusing a bomb
    return size + size // 64 + 1024


class _ZstdFrame(NamedTuple):
    """What the header and block headers of one Zstandard frame say (RFC 8878)."""

    declared: int
    """The content size."""
    window: int
    """The bytes of content its decoder keeps for back references: the whole
    content for a single-segment frame, else what its window descriptor says."""
    blocks: list[tuple[int, int, int]]
    """Each block as ``(type, offset of its content, size)``: type 0 raw (``size``
    bytes stored), 1 RLE (one byte stored, repeated ``size`` times), 2 compressed."""
    checksum: bool
    """Whether a content checksum follows the blocks."""


def _zstd_frame(data: Bytes) -> _ZstdFrame:
    """The frame ``data``, which must be exactly one Zstandard frame that declares its
    content size: the decoder would decode every frame that follows, whatever the
    first one declares, so nothing may follow it (not even a skippable frame)."""
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
    # RFC 8878 § 3.1.1.1.4: a two-byte Frame_Content_Size field stores the size minus
    # 256 (sizes below 256 use the one-byte form), so that form covers 256 to 65791
    declared = size + 256 if fcs_size == 2 else size
    if single_segment:
        window = declared
    else:  # § 3.1.1.1.2: a power of two, plus eighths of it
        base = 1 << (10 + (data[5] >> 3))
        window = base + base // 8 * (data[5] & 7)
    checksum = bool(descriptor & 4)
    blocks = _zstd_blocks(data, start + fcs_size)
    kind, at, length = blocks[-1]
    end = at + (1 if kind == 1 else length) + 4 * checksum
    if end != len(data):
        raise ValueError(
            f"a chunk must be one Zstandard frame; {len(data) - end} bytes follow the frame"
        )
    return _ZstdFrame(declared, window, blocks, checksum)


def _zstd_content_size(data: Bytes) -> int:
    """The content size declared by the Zstandard frame ``data`` (see :func:`_zstd_frame`)."""
    return _zstd_frame(data).declared


def _zstd_blocks(data: Bytes, offset: int) -> list[tuple[int, int, int]]:
    """The blocks of the frame whose blocks start at ``offset``, up to its last (see
    :attr:`_ZstdFrame.blocks`).  Each block header (3 bytes, little-endian) holds a
    last-block flag, the block type and the block size; an RLE block stores one byte."""
    blocks = []
    last = False
    while not last:
        if offset + 3 > len(data):
            raise ValueError("truncated Zstandard frame: a block header is cut short")
        header = int.from_bytes(data[offset : offset + 3], "little")
        last, kind, size = bool(header & 1), (header >> 1) & 3, header >> 3
        if kind == 3:
            raise ValueError("a Zstandard block of the reserved type 3")
        blocks.append((kind, offset + 3, size))
        offset += 3 + (1 if kind == 1 else size)
    return blocks


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


def decoded_pieces(
    codecs: Sequence[Codec], data: Bytes, limit: int, piece_bytes: int
) -> Iterator[memoryview] | None:
    """The bytes :func:`decode_bounded` gives, as consecutive pieces of at most
    ``piece_bytes``, each valid until the next is asked for; None where the chain
    cannot be decoded so: anything but one zstd frame whose window is at most
    :data:`STREAM_WINDOW_BYTES` or one zlib stream.

    Decoding holds the window and one piece, never the whole output, so that a
    read needing a little of a large chunk costs memory for that little.  The
    checks are those of :func:`decode_bounded`: a frame declaring more than
    ``limit`` bytes is refused before any is decoded, and one that decodes to
    another size than it declares fails once that is known (when its last piece
    is asked for).

    Raises
    ------
    ValueError, RuntimeError
        As :func:`decode_bounded` raises them, while the pieces are taken.
    """
    if len(codecs) != 1 or codecs[0].codec_id not in ("zstd", "zlib"):
        return None
    if codecs[0].codec_id == "zlib":
        return _zlib_pieces(data, limit, piece_bytes)
    frame = _zstd_frame(data)
    if frame.declared > limit:
        raise ValueError(
            f"the zstd frame declares {frame.declared} bytes, more than the {limit} this "
            "chunk can hold"
        )
    if not frame.declared:  # decode_bounded's own path, which no chunk takes
        return None
    # raw and RLE blocks refer to nothing before them: decoded here, a block at a
    # time, whatever window the frame declares (2 GiB of one byte repeated is 16,384
    # RLE blocks, 64 KiB; a single-segment frame declares its whole content as its
    # window).  A content checksum is left to the library, which checks it.
    largest = min(frame.window, ZSTD_BLOCK_BYTES)
    if not frame.checksum and all(k < 2 and n <= largest for k, _, n in frame.blocks):
        return _zstd_plain_pieces(data, frame, piece_bytes)
    if frame.window > STREAM_WINDOW_BYTES:
        return None
    return _zstd_pieces(data, frame.declared, piece_bytes)


def _zstd_plain_pieces(data: Bytes, frame: _ZstdFrame, piece_bytes: int) -> Iterator[memoryview]:
    """The content of the frame ``data`` of raw and RLE blocks alone (see
    :func:`decoded_pieces`): each raw block as it is stored, and each run of RLE
    blocks repeating one byte in pieces of ``piece_bytes``."""
    view = memoryview(data)
    repeated = memoryview(b"")  # a piece of one byte repeated, made once per byte
    run = (-1, 0)  # the byte the RLE blocks read so far repeat, and how many times
    got = 0

    def flush(byte: int, count: int) -> Iterator[memoryview]:
        nonlocal repeated
        if count and repeated[:1] != bytes([byte]):
            repeated = memoryview(bytes([byte]) * piece_bytes)
        for start in range(0, count, piece_bytes):
            yield repeated[: min(piece_bytes, count - start)]

    for kind, at, size in frame.blocks:
        got += size
        if got > frame.declared:
            break
        if kind == 1 and run[0] in (-1, view[at]):
            run = (view[at], run[1] + size)
            continue
        yield from flush(*run)
        run = (view[at], size) if kind == 1 else (-1, 0)
        if kind == 0:
            yield view[at : at + size]
    yield from flush(*run)
    if got != frame.declared:
        raise RuntimeError(f"Zstd decompression error: expected {frame.declared} bytes, got {got}")


def _zstd_pieces(data: Bytes, declared: int, piece_bytes: int) -> Iterator[memoryview]:
    """The ``declared`` bytes of the single Zstandard frame ``data``, a piece at a
    time (see :func:`decoded_pieces`)."""
    # a decompressor of its own: a stream left half read (the caller stopped) must
    # not leave this thread's shared context in the middle of a frame
    reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=False)
    piece = bytearray(piece_bytes)
    got = 0
    try:
        while n := reader.readinto(piece):
            got += n
            if got > declared:
                break
            yield memoryview(piece)[:n]
    except zstandard.ZstdError as err:
        raise RuntimeError(f"Zstd decompression error: {err}") from None
    if got != declared:
        raise RuntimeError(f"Zstd decompression error: expected {declared} bytes, got {got}")


def _zlib_pieces(data: Bytes, limit: int, piece_bytes: int) -> Iterator[memoryview]:
    """The bytes of the single zlib stream ``data``, at most ``limit``, a piece at a
    time (see :func:`decoded_pieces`)."""
    stream = zlib.decompressobj()
    rest: Bytes = data
    got = 0
    while not stream.eof:
        try:
            out = stream.decompress(rest, piece_bytes)
        except zlib.error as err:
            raise ValueError(f"invalid zlib stream: {err}") from err
        rest = stream.unconsumed_tail
        if not out and not rest:
            break  # the input is used up before the stream's end
        got += len(out)
        if got > limit:
            raise ValueError(f"the zlib stream expands past {limit} bytes")
        yield memoryview(out)
    if not stream.eof or stream.unused_data:
        raise ValueError("the zlib stream is truncated or followed by extra bytes")
