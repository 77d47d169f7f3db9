"""The frames ``js/bench/zstd.js`` decodes, made by this package's zstd encoder, with
the native library's decode speed and the Python reader's outcome of damaged frames.

Usage: ``python js/bench/zstd_frames.py DIR [--repeats N] [--mutants N]``.  DIR
receives:

- ``NAME.raw`` and ``NAME.zst``: float32 fields as chunks of 64 KiB (128 x 128) and
  4 MiB (1024 x 1024), each encoded as the writer encodes a chunk
  (``container.codecs.ZstdEncoder``: one frame, its content size, no checksum) at
  levels 1, 3 and 9.  ``smooth`` is the field of ``benchmarks/js_maps.py`` (sines of
  longitude plus latitude, compressible); ``noisy`` a temperature field in kelvin with
  noise of 0.05 K, whose low mantissa bits are random, as in measured or simulated
  data (it compresses little).
- ``BASE.zst`` and, in the manifest, mutants of them: 1 to 4 bytes of each changed
  (mostly near the front, where the headers and tables are), or one bit flipped, each
  with what the Python reader makes of it (``container.bounded.decode_bounded``, as a
  chunk of one zstd codec and the base's size): the SHA-256 of the decoded bytes, or
  None where it refuses it.
- ``manifest.json``: ``{"chunks": [{name, field, bytes, level, frame_bytes,
  native_mbs}], "bases": [{name, bytes}], "mutants": [{base, changes: [[offset,
  byte]], python}]}``; ``native_mbs`` is the decode speed of python-zstandard (the
  reference library, compiled), best of ``--repeats``, in MB of decoded bytes a
  second.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import zstandard

from xarray_hurray.container.bounded import decode_bounded
from xarray_hurray.container.codecs import ZstdEncoder

LEVELS = [1, 3, 9]
SIDES = {"64KiB": 128, "4MiB": 1024}


def smooth(side: int) -> np.ndarray:
    """The field of ``benchmarks/js_maps.py`` on a ``side`` x ``side`` grid of 0.25 deg."""
    lat = 89.875 - 0.25 * np.arange(side)
    lon = -179.875 + 0.25 * np.arange(side)
    lon2, lat2 = np.meshgrid(lon, lat)
    return (np.sin(np.radians(lon2) * 3) * 10 + lat2 / 3).astype(np.float32)


def noisy(side: int) -> np.ndarray:
    """Temperatures of 250 to 310 K varying smoothly, with noise of 0.05 K."""
    y, x = np.mgrid[0:side, 0:side] / 37.0
    values = 280 + 20 * np.sin(x) * np.cos(0.7 * y) + 10 * np.sin(3.1 * x + y)
    values += 0.05 * np.random.default_rng(3).standard_normal(values.shape)
    return values.astype(np.float32)


FIELDS = {"smooth": smooth, "noisy": noisy}


def native_speed(frame: bytes, size: int, repeats: int) -> float:
    """MB/s of python-zstandard decoding ``frame``, best of ``repeats`` timed calls of
    at least 4 MiB of output each (a chunk decoded several times over)."""
    decompressor = zstandard.ZstdDecompressor()
    calls = max(1, (4 << 20) // size)
    best = float("inf")
    for _ in range(repeats):
        decompressor.decompress(frame)
        start = time.perf_counter()
        for _ in range(calls):
            decompressor.decompress(frame)
        best = min(best, (time.perf_counter() - start) / calls)
    return size / 1e6 / best


def python_outcome(frame: bytes, size: int) -> str | None:
    """The SHA-256 of what the Python reader decodes ``frame`` to, or None."""
    try:
        decoded = bytes(decode_bounded([numcodecs.Zstd()], frame, size))
    except (ValueError, RuntimeError):
        return None
    return hashlib.sha256(decoded).hexdigest()


def mutate(rng: random.Random, frame: bytes) -> list[tuple[int, int]]:
    """Changes to ``frame``: one bit flipped, or 1 to 4 bytes replaced, at offsets
    drawn mostly near the front."""
    if rng.random() < 0.5:
        at = int(len(frame) * rng.random() ** 3)
        return [(at, frame[at] ^ (1 << rng.randrange(8)))]
    count = rng.randint(1, 4)
    return [(int(len(frame) * rng.random() ** 3), rng.randrange(256)) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dir", type=Path)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--mutants", type=int, default=4000)
    args = parser.parse_args()
    out: Path = args.dir
    out.mkdir(parents=True, exist_ok=True)

    chunks: list[dict[str, Any]] = []
    for field, make in FIELDS.items():
        for label, side in SIDES.items():
            raw = make(side).tobytes()
            (out / f"{field}-{label}.raw").write_bytes(raw)
            for level in LEVELS:
                name = f"{field}-{label}-l{level}"
                frame = ZstdEncoder(level, checksum=False)(raw)
                (out / f"{name}.zst").write_bytes(frame)
                chunks.append(
                    {
                        "name": name,
                        "raw": f"{field}-{label}",
                        "field": field,
                        "bytes": len(raw),
                        "level": level,
                        "frame_bytes": len(frame),
                        "native_mbs": native_speed(frame, len(raw), args.repeats),
                    }
                )

    # the damaged frames: small chunks of both fields, with and without a checksum,
    # at a fast level and at 19 (its larger tables and longer matches)
    bases: list[dict[str, Any]] = []
    for field, side, level, checksum in [
        ("noisy", 64, 3, True),
        ("noisy", 64, 1, False),
        ("smooth", 64, 9, False),
        ("smooth", 96, 19, True),
        ("noisy", 128, 19, False),
    ]:
        raw = FIELDS[field](side).tobytes()
        name = f"base-{field}-{side}-l{level}{'-checksum' if checksum else ''}"
        frame = ZstdEncoder(level, checksum=checksum)(raw)
        (out / f"{name}.zst").write_bytes(frame)
        bases.append({"name": name, "bytes": len(raw), "frame": frame})
    rng = random.Random(20240607)
    mutants = []
    for k in range(args.mutants):
        base = bases[k % len(bases)]
        changed = bytearray(base["frame"])
        changes = mutate(rng, base["frame"])
        for at, value in changes:
            changed[at] = value
        mutants.append(
            {
                "base": base["name"],
                "changes": changes,
                "python": python_outcome(bytes(changed), base["bytes"]),
            }
        )
    manifest = {
        "chunks": chunks,
        "bases": [{"name": b["name"], "bytes": b["bytes"]} for b in bases],
        "mutants": mutants,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
