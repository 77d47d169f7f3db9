"""Write the zstd frames the JavaScript decoder's tests decode, made here by
python-zstandard and numcodecs, with the bytes they must decode to.

Usage: ``python zstd_fixtures.py DIR``.  DIR receives ``NAME.raw`` (an input),
``FRAME.zst`` (a frame or frames) and ``manifest.json``: ``{"frames": [{"frame":
FRAME, "raw": NAME, ...what made it}]}``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import zstandard

KiB = 1024
MiB = 1024 * KiB
SIZES = [0, 1, 100, 64 * KiB, 1 * MiB, 5 * MiB]
LEVELS = [-5, -1, 1, 3, 9, 19]
# The levels of inputs past 1 MiB: level 19 is slow to compress, and the others'
# frames of such inputs differ little from those of 1 MiB.
LARGE_LEVELS = [-1, 3, 9]


def random_bytes(size: int, seed: int = 1) -> bytes:
    return np.random.default_rng(seed).bytes(size)


def zeros(size: int) -> bytes:
    return bytes(size)


def text(size: int) -> bytes:
    """Lines of a few words and numbers, as in a log: short repeats everywhere."""
    rng = np.random.default_rng(2)
    words = ["station", "temperature", "pressure", "wind", "north", "east", "ok", "missing"]
    count = size // 20 + 1  # lines are longer than 20 bytes
    picks = rng.integers(0, len(words), (count, 2))
    numbers = rng.integers(0, 100, count)
    values = rng.random(count)
    lines = [
        f"{words[a]} {n} {words[b]} {v:.3f}\n"
        for (a, b), n, v in zip(picks, numbers, values, strict=True)
    ]
    return "".join(lines).encode()[:size]


def field(size: int, noise: float) -> bytes:
    """A smooth float32 field of sines (noise: the scale of added normal noise)."""
    n = (size + 3) // 4
    side = max(1, int(np.sqrt(n)) + 1)
    y, x = np.mgrid[0:side, 0:side].astype(np.float64) / 37.0
    values = np.sin(x) * np.cos(0.7 * y) + 0.25 * np.sin(3.1 * x + y)
    values += noise * np.random.default_rng(3).standard_normal(values.shape)
    return values.astype(np.float32).tobytes()[:size]


KINDS: dict[str, Callable[[int], bytes]] = {
    "random": random_bytes,
    "zeros": zeros,
    "text": text,
    "sines": lambda size: field(size, 0.0),
    "noisy": lambda size: field(size, 1e-3),
}


def compress(data: bytes, level: int, checksum: bool, content_size: bool, **params: Any) -> bytes:
    if params:
        parameters = zstandard.ZstdCompressionParameters.from_level(
            level, write_checksum=checksum, write_content_size=content_size, **params
        )
        return zstandard.ZstdCompressor(compression_params=parameters).compress(data)
    compressor = zstandard.ZstdCompressor(
        level=level, write_checksum=checksum, write_content_size=content_size
    )
    return compressor.compress(data)


def streamed(data: bytes, piece: int) -> bytes:
    """A frame from a stream: no content size, a block ended after each piece."""
    stream = zstandard.ZstdCompressor(level=3, write_checksum=True).compressobj()
    parts = []
    for start in range(0, len(data), piece):
        parts.append(stream.compress(data[start : start + piece]))
        parts.append(stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK))
    parts.append(stream.flush())
    return b"".join(parts)


def skippable(payload: bytes) -> bytes:
    return (0x184D2A53).to_bytes(4, "little") + len(payload).to_bytes(4, "little") + payload


def main(out: Path) -> None:
    frames: list[dict[str, Any]] = []

    def add(name: str, frame: bytes, raw: str, **made: Any) -> None:
        (out / f"{name}.zst").write_bytes(frame)
        frames.append({"frame": name, "raw": raw, **made})

    def raw(name: str, data: bytes) -> str:
        (out / f"{name}.raw").write_bytes(data)
        return name

    flags = 0
    for kind, make in KINDS.items():
        for size in SIZES:
            data = make(size)
            name = raw(f"{kind}-{size}", data)
            for level in LEVELS:
                if size > 1 * MiB and level not in LARGE_LEVELS:
                    continue
                # every level meets each of the four header variants over the sizes
                checksum, content_size = bool(flags & 1), bool(flags & 2)
                flags += 1
                frame = compress(data, level, checksum, content_size)
                add(
                    f"{name}-l{level}",
                    frame,
                    name,
                    level=level,
                    checksum=checksum,
                    content_size=content_size,
                )

    # level 19 with its large window: a repeat 2 MiB back
    first = random_bytes(1 * MiB, seed=4)
    data = first + text(1 * MiB) + first
    name = raw("window", data)
    add("window-l19", compress(data, 19, True, True, window_log=23), name, level=19)
    # long-distance matching: a repeat 32 MiB back, an offset of more than 24 bits
    first = random_bytes(256 * KiB, seed=5)
    data = first + bytes(32 * MiB) + first
    name = raw("long", data)
    add("long-ldm", compress(data, 1, True, False, enable_ldm=True, window_log=26), name, level=1)
    # streamed frames: no content size, blocks cut short by flushes
    data = KINDS["noisy"](3 * MiB)
    name = raw("streamed", data)
    small = raw("streamed-200k", data[: 200 * KiB])
    add("streamed-piece-1000", streamed(data[: 200 * KiB], 1000), small)
    add("streamed-piece-300k", streamed(data, 300 * KiB), name)
    # small blocks whose literals reuse the Huffman table before them (treeless, 1 stream)
    add("streamed-piece-300", streamed(text(64 * KiB), 300), f"text-{64 * KiB}")
    # literals of a dozen values, whose Huffman weights are stored directly
    rng = np.random.default_rng(7)
    data = rng.geometric(0.3, 64 * KiB).clip(1, 12).astype(np.uint8).tobytes()
    add("few-symbols-l3", compress(data, 3, False, True), raw("few-symbols", data), level=3)
    # a block of random bytes, then one of pieces of it in order, each followed by "x":
    # literals all one byte (RLE), offsets all of one code (an RLE table)
    first = random_bytes(128 * KiB, seed=11)
    pieces = [first]
    at = 0
    while at < 100 * KiB:
        length = int(rng.integers(20, 80))
        pieces.append(first[at : at + length] + b"x")
        at += length
    data = b"".join(pieces)
    add("pieces-l19", compress(data, 19, True, True), raw("pieces", data), level=19)
    # that block, then pieces of it from anywhere, back to back: blocks of sequences
    # all without literals (literal lengths of an RLE table)
    pieces = [first]
    while sum(map(len, pieces)) < 428 * KiB:
        length = int(rng.integers(20, 80))
        at = int(rng.integers(0, len(first) - length))
        pieces.append(first[at : at + length])
    data = b"".join(pieces)
    add("jumps-l19", compress(data, 19, False, True), raw("jumps", data), level=19)
    # several frames, a skippable one among them, and an empty one
    a, b = text(70 * KiB), KINDS["sines"](300 * KiB)
    frame = (
        compress(a, 3, True, True)
        + skippable(b"not zstd" * 10)
        + compress(b, 9, False, False)
        + compress(b"", 1, True, True)
        + skippable(b"")
    )
    add("several", frame, raw("several", a + b), level=None)
    # numcodecs' Zstd codec, as Zarr stores write chunks
    for level, checksum in [(1, False), (5, True), (-3, False), (22, False)]:
        data = KINDS["noisy"](1 * MiB if level != 22 else 256 * KiB)
        name = raw(f"numcodecs-{len(data)}", data)
        frame = bytes(numcodecs.Zstd(level=level, checksum=checksum).encode(data))
        add(f"numcodecs-l{level}", frame, name, level=level, checksum=checksum)

    # every length of XXH64's tail (stripes of 32, then 8-, 4- and 1-byte steps)
    for size in range(72):
        data = random_bytes(size, seed=6)
        add(f"checksum-{size}", compress(data, 3, True, True), raw(f"checksum-{size}", data))
    # frames the tests damage; each has a checksum, so that a change is caught even
    # where what is left still parses
    for kind, size, level in [
        ("text", 3000, 9),
        ("text", 64 * KiB, 19),
        ("noisy", 64 * KiB, 3),
        ("noisy", 300 * KiB, 3),
        ("sines", 64 * KiB, -1),
    ]:
        data = KINDS[kind](size)
        name = raw(f"{kind}-{size}", data)
        add(f"damage-{kind}-{size}-l{level}", compress(data, level, True, True), name, damage=True)

    (out / "manifest.json").write_text(json.dumps({"frames": frames}, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
