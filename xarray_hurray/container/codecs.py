"""The codec chain of a variable: numcodecs configurations from an allow-list."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import numcodecs
import numpy as np
from numcodecs.abc import Codec

from ..errors import HurrayValueError
from .bounded import decode_bounded

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


class CodecChain:
    """Apply a parsed chain: :meth:`encode` in order, :meth:`decode` in reverse."""

    def __init__(self, configs: Sequence[Mapping[str, Any]]) -> None:
        self.codecs = [numcodecs.get_codec(dict(config)) for config in configs]

    def encode(self, data: np.ndarray) -> bytes:
        """Encoded bytes of ``data`` (a contiguous array)."""
        out: Any = data
        for codec in self.codecs:
            out = codec.encode(out)
        return bytes(out) if not isinstance(out, np.ndarray) else out.tobytes()

    def decode(self, data: bytes, limit: int) -> bytes:
        """The bytes ``data`` was encoded from; frames declaring more than ``limit``
        bytes are rejected before they are decoded (:func:`.bounded.decode_bounded`)."""
        return decode_bounded(self.codecs, data, limit)
