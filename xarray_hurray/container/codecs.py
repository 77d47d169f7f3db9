"""The codec chain of a variable: numcodecs configurations from an allow-list."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any, TypeAlias

import numcodecs
import numpy as np
import zstandard
from numcodecs.abc import Codec

from ..errors import HurrayValueError
from .bounded import decode_bounded
from .checksum import Bytes

ALLOWED_CODECS = ("zstd", "lz4", "zlib", "blosc")
"""numcodecs ids a chain may hold.  An empty chain stores the bytes as they are."""

CodecSpec: TypeAlias = str | Mapping[str, Any] | Codec | None
"""What users name a codec by: an id, a numcodecs config or codec, or None."""


def parse_codecs(
    spec: CodecSpec | Sequence[CodecSpec], *, try_encoding: bool = False
) -> tuple[dict[str, Any], ...]:
    """The full numcodecs configurations of a codec chain.

    Parameters
    ----------
    spec
        ``None`` or ``"none"`` for no codec, a codec id such as ``"zstd"``, a numcodecs
        config dict or :class:`numcodecs.abc.Codec`, or a list of those applied in order.
    try_encoding
        Also encode a few bytes with each codec: numcodecs takes settings it cannot
        use (``{"id": "zlib", "level": 99}``, a blosc ``cname`` it does not know, a zstd
        ``level`` that is not a number) and fails only when encoding, which a writer
        must find out before it creates its file.  Reading needs no encoding.

    Raises
    ------
    ValueError
        For a codec outside :data:`ALLOWED_CODECS` or an invalid configuration.
    """
    items = list(spec) if isinstance(spec, list | tuple) else [spec]
    configs = []
    for item in items:
        if item is None or item == "none":
            continue
        if isinstance(item, str):
            item = {"id": item}
        elif isinstance(item, Codec):
            item = item.get_config()
        if not isinstance(item, Mapping) or item.get("id") not in ALLOWED_CODECS:
            raise HurrayValueError(
                f"unsupported codec {item!r}; expected None, 'none' or one of "
                f"{', '.join(ALLOWED_CODECS)} (as a name, a numcodecs config or codec)",
                value=item,
            )
        try:
            codec = numcodecs.get_codec(dict(item))
            if try_encoding:
                codec.encode(np.arange(64, dtype=np.uint8))
            configs.append(codec.get_config())
        except (TypeError, ValueError, OverflowError, RuntimeError, zlib.error) as err:
            raise HurrayValueError(
                f"invalid {item['id']} codec configuration {dict(item)}: {err}", value=item
            ) from err
    return tuple(configs)


ZSTD_MIN_LEVEL = -(1 << 17)
"""The lowest compression level of the zstd library (``ZSTD_minCLevel``); lower
levels are clamped to it, as the library clamps them for numcodecs."""


class ZstdEncoder:
    """numcodecs' zstd encoding with one compression context per thread, kept
    from call to call.

    numcodecs makes a new context for every call, which takes longer than
    compressing a small chunk (about 9 us of the 10 us that 64 bytes take).  The
    frames are those numcodecs writes, made by the same library (``zstandard``
    bundles it, as numcodecs does): one frame that records its content size, with a
    checksum when ``checksum`` is set; the level is clamped to the library's range,
    as the library clamps it for numcodecs.  Pickles as its settings: each process
    and thread makes its own contexts.
    """

    def __init__(self, level: int, checksum: bool) -> None:
        self.level = min(max(int(level), ZSTD_MIN_LEVEL), zstandard.MAX_COMPRESSION_LEVEL)
        self.checksum = bool(checksum)

    def __call__(self, data: Any) -> bytes:
        """The zstd frame of the bytes of ``data`` (a contiguous array or bytes)."""
        key = (self.level, self.checksum)
        contexts: dict[tuple[int, bool], zstandard.ZstdCompressor] | None
        contexts = getattr(_CONTEXTS, "compressors", None)  # this thread's
        if contexts is None:
            contexts = _CONTEXTS.compressors = {}
        compressor = contexts.get(key)
        if compressor is None:
            compressor = contexts[key] = zstandard.ZstdCompressor(
                level=self.level, write_checksum=self.checksum, write_content_size=True
            )
        try:
            return compressor.compress(data)
        except BaseException:
            # a context that failed half way is not trusted with the next frame
            del contexts[key]
            raise


_CONTEXTS = threading.local()
"""Each thread's zstd compression contexts (``compressors``, by level and checksum)."""


class CodecChain:
    """Apply a parsed chain: :meth:`encode` in order, :meth:`decode` in reverse."""

    def __init__(self, configs: Sequence[Mapping[str, Any]]) -> None:
        self.codecs = [numcodecs.get_codec(dict(config)) for config in configs]

    @cached_property
    def _encoders(self) -> list[Callable[[Any], Any]]:
        """The encoding steps, made at the first :meth:`encode`: a reader never makes
        them, so a file recording nonsense in a setting only encoding uses (a zstd
        level of ``[[1]]``) still reads, instead of failing with a TypeError; a write
        into such a file is refused here (:func:`parse_codecs` tries each), naming
        the settings."""
        parse_codecs([codec.get_config() for codec in self.codecs], try_encoding=True)
        return [
            ZstdEncoder(codec.level, codec.checksum) if codec.codec_id == "zstd" else codec.encode
            for codec in self.codecs
        ]

    def encode(self, data: np.ndarray) -> bytes:
        """Encoded bytes of ``data`` (a contiguous array)."""
        out: Any = data
        for encode in self._encoders:
            out = encode(out)
        return bytes(out) if not isinstance(out, np.ndarray) else out.tobytes()

    def decode(self, data: Bytes, limit: int, into: memoryview | None = None) -> Bytes:
        """The bytes ``data`` was encoded from, in ``into`` where the chain can decode
        them there (see :func:`.bounded.decode_bounded`); frames declaring more than
        ``limit`` bytes are rejected before they are decoded."""
        return decode_bounded(self.codecs, data, limit, into)
