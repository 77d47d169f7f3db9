"""CRC-32C checksums (Castagnoli), as used for every part of a Hurray file."""

from __future__ import annotations

import google_crc32c

from ..errors import HurrayFormatError


def crc32c(data: bytes) -> int:
    """The CRC-32C of ``data`` as an unsigned 32-bit integer."""
    value: int = google_crc32c.value(bytes(data))
    return value


def extend_crc32c(crc: int, data: bytes) -> int:
    """The CRC-32C of the bytes a checksum ``crc`` covers followed by ``data``, so
    that a large part can be checked a block at a time (``crc`` 0 for no bytes)."""
    value: int = google_crc32c.extend(crc, bytes(data))
    return value


def verify(data: bytes, expected: int, what: str) -> None:
    """Raise a :class:`HurrayFormatError` naming ``what`` unless ``crc32c(data) == expected``."""
    verify_crc(crc32c(data), expected, what)


def verify_crc(actual: int, expected: int, what: str) -> None:
    """Raise a :class:`HurrayFormatError` naming ``what`` unless the computed
    ``actual`` crc32c is ``expected``."""
    if actual != expected:
        raise HurrayFormatError(
            f"checksum mismatch in {what}: stored crc32c {expected:#010x}, computed {actual:#010x}"
        )
