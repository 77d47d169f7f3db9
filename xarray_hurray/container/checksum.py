"""CRC-32C checksums (Castagnoli), as used for every part of a Hurray file, and the
places the checksums of chunks, index pages and page tables are bound to.

Any contiguous buffer is checksummed where it lies.  With the ``crc32c`` package
(the ``fast`` extra) that costs no copy and the GIL is released on large buffers,
so decode threads checksum chunks side by side; ``google_crc32c`` (always
installed) takes only ``bytes``, so other buffers are copied first, and it holds
the GIL on buffers under 1 MiB.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, cast

import google_crc32c
import numpy as np

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


def verify(data: Bytes, expected: int, what: str, *, placed: bool = False) -> None:
    """Raise a :class:`HurrayFormatError` naming ``what`` unless ``crc32c(data) ==
    expected``; ``placed``: ``expected`` comes from a checksum bound to the part's place
    (:class:`Places`), which the message then says."""
    verify_crc(crc32c(data), expected, what, placed=placed)


def verify_crc(actual: int, expected: int, what: str, *, placed: bool = False) -> None:
    """Raise a :class:`HurrayFormatError` naming ``what`` unless the computed
    ``actual`` crc32c is ``expected`` (see :func:`verify`)."""
    if actual != expected:
        why = ": its bytes are damaged, or are another part's" if placed else ""
        raise HurrayFormatError(
            f"checksum mismatch in {what}: crc32c {actual:#010x} computed, {expected:#010x} "
            f"expected{why}"
        )


CHUNK_KEY, PAGE_KEY, TABLE_KEY = b"C", b"P", b"T"
"""The first byte of the key of a chunk, an index page and a page table."""

POLYNOMIAL = 0x82F63B78
"""The reflected CRC-32C polynomial."""


def place_key(kind: bytes, path: str, values: Sequence[int] = ()) -> bytes:
    """The key of a place (docs/spec/container.md, "Checksums bound to their place"):
    ``kind`` (:data:`CHUNK_KEY`, :data:`PAGE_KEY` or :data:`TABLE_KEY`), the byte
    length of the UTF-8 ``path`` of the variable as u32, the path, then ``values``
    (a chunk's grid coordinates, a page's number) as u64 each."""
    name = path.encode("utf-8")
    return kind + struct.pack(f"<I{len(name)}s{len(values)}Q", len(name), name, *values)


def _byte_tables(count: int) -> np.ndarray:
    """``T[d][v]``, ``d < count``: the CRC-32C register, started at zero and without
    the final exclusive or, after the byte ``v`` and ``d`` zero bytes.  The register
    is linear in the bytes it takes, so the CRC-32C of a key whose last ``L`` bytes
    change is that of the key with those bytes zero, exclusive-or ``T[L - 1 - j]`` of
    each byte ``j`` of them: a column of keys checksummed a byte column at a time."""
    tables = np.empty((count, 256), dtype=np.uint32)
    register = np.arange(256, dtype=np.uint32)
    for _ in range(8):  # the table of one byte, bit by bit
        carry = np.where(register & 1, np.uint32(POLYNOMIAL), np.uint32(0))
        register = (register >> np.uint32(1)) ^ carry
    tables[0] = register
    for d in range(1, count):  # one zero byte more
        tables[d] = (tables[d - 1] >> 8) ^ tables[0][tables[d - 1] & 0xFF]
    return tables


BYTE_TABLES = _byte_tables(8 * 32)
""":func:`_byte_tables` for the coordinates of a chunk of up to 32 axes (256 KiB)."""


@dataclass(frozen=True)
class Places:
    """The checksums of the places of one variable's chunks, index pages and page
    table: the CRC-32C of each place's key (:func:`place_key`).  The checksum a file
    stores for a part is the CRC-32C of its bytes exclusive-or its place's, so that a
    part found where another belongs fails its check; an exclusive or is its own
    inverse, so the same value binds a checksum of bytes to the place and gives it
    back from the one stored.

    Parameters
    ----------
    path
        The variable's path (``"a/b/name"``; ``"name"`` in the root group).
    grid_shape
        Chunks along each of its axes: a chunk's row-major number gives its
        coordinates.
    """

    path: str
    grid_shape: tuple[int, ...]
    _zeros: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # the key of the chunk at the origin: every chunk's key but its coordinates
        zeros = crc32c(place_key(CHUNK_KEY, self.path, [0] * len(self.grid_shape)))
        object.__setattr__(self, "_zeros", zeros)

    @property
    def table(self) -> int:
        """The place of the page table."""
        return crc32c(place_key(TABLE_KEY, self.path))

    def page(self, number: int) -> int:
        """The place of index page ``number``."""
        return crc32c(place_key(PAGE_KEY, self.path, [number]))

    def chunk(self, chunk_id: int) -> int:
        """The place of the chunk of row-major number ``chunk_id``."""
        coordinates = []
        for count in reversed(self.grid_shape):
            chunk_id, at = divmod(chunk_id, count)
            coordinates.append(at)
        return crc32c(place_key(CHUNK_KEY, self.path, coordinates[::-1]))

    def chunks(self, chunk_ids: np.ndarray) -> np.ndarray:
        """The places of the chunks of row-major numbers ``chunk_ids`` (uint32), the
        keys checksummed a byte column at a time (see :func:`_byte_tables`)."""
        ids = np.asarray(chunk_ids, dtype=np.int64).reshape(-1)
        out = np.full(len(ids), self._zeros, dtype=np.uint32)
        if not len(ids) or not self.grid_shape:
            return out
        # the coordinates axis by axis, the last varying fastest (numpy's unravel_index
        # refuses grids of more chunks than an int64 counts, which a file may declare)
        coordinates = np.empty((len(ids), len(self.grid_shape)), dtype="<u8")
        rest = ids
        for k in reversed(range(len(self.grid_shape))):
            rest, coordinates[:, k] = np.divmod(rest, self.grid_shape[k])
        columns = coordinates.view(np.uint8)  # the keys' last bytes
        last = columns.shape[1] - 1
        for j in np.flatnonzero(columns.any(axis=0)).tolist():  # zero bytes add nothing
            out ^= BYTE_TABLES[last - j][columns[:, j]]
        return out
