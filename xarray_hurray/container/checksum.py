"""CRC-32C checksums (Castagnoli), as used for every part of a Hurray file.

Any contiguous buffer is checksummed where it lies.  With the ``crc32c`` package
(the ``fast`` extra) that costs no copy and the GIL is released on large buffers,
so decode threads checksum chunks side by side; ``google_crc32c`` (always
installed) takes only ``bytes``, so other buffers are copied first, and it holds
the GIL on buffers under 1 MiB.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias, cast

import google_crc32c

from ..errors import HurrayFormatError

Bytes: TypeAlias = bytes | bytearray | memoryview
"""The buffers checksummed (and decoded) where they lie."""


def _implementation() -> Callable[[int, Bytes], int]:
    """The fastest CRC-32C function installed, as ``extend(crc, data)``."""
    try:
        import crc32c as fast
    except ImportError:
        return lambda crc, data: cast(int, google_crc32c.extend(crc, bytes(data)))
    return lambda crc, data: fast.crc32c(data, crc)


_extend = _implementation()


def crc32c(data: Bytes) -> int:
    """The CRC-32C of the bytes of ``data`` (bytes, or any contiguous buffer) as an
    unsigned 32-bit integer."""
    return _extend(0, data)


def chunk_crcs(chunks: Sequence[Bytes | None], given: Sequence[int] | None = None) -> list[int]:
    """The CRC-32C of each of ``chunks`` (0 for a chunk left out: None or no bytes):
    ``given``, where the caller has them (computed where the chunks were encoded),
    else computed here."""
    if given is not None:
        return list(given)
    return [crc32c(data) if data else 0 for data in chunks]


def extend_crc32c(crc: int, data: Bytes) -> int:
    """The CRC-32C of the bytes a checksum ``crc`` covers followed by ``data``, so
    that a large part can be checked a block at a time (``crc`` 0 for no bytes)."""
    return _extend(crc, data)


def verify(data: Bytes, expected: int, what: str) -> None:
    """Raise a :class:`HurrayFormatError` naming ``what`` unless ``crc32c(data) == expected``."""
    verify_crc(crc32c(data), expected, what)


def verify_crc(actual: int, expected: int, what: str) -> None:
    """Raise a :class:`HurrayFormatError` naming ``what`` unless the computed
    ``actual`` crc32c is ``expected``."""
    if actual != expected:
        raise HurrayFormatError(
            f"checksum mismatch in {what}: stored crc32c {expected:#010x}, computed {actual:#010x}"
        )
