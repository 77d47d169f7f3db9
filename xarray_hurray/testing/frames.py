"""Zstandard frames made by hand, and files of one chunk stored as such a frame: the
decompression bombs of the tests and benchmarks of what a large chunk costs a reader
(a frame of a few kilobytes that declares gigabytes)."""

from __future__ import annotations

import os
import struct
from typing import Any

from ..container.bounded import ZSTD_BLOCK_BYTES
from ..container.metadata import DatasetMeta, VariableMeta
from ..layout import Layout, RowMajorLayout
from .sparse import write_sparse_file


def rle_frame(size: int, byte: int, window: int | None) -> bytes:
    """A Zstandard frame of ``size`` bytes of ``byte`` in RLE blocks of 128 KiB (the
    largest block: 4 bytes each).

    Parameters
    ----------
    size
        The bytes the frame decodes to, declared in its header.
    byte
        The value of every byte.
    window
        A power of two of at least 1 KiB, the window the frame declares, or None for
        a single-segment frame (whose window is its whole content).

    Returns
    -------
    bytes
        The frame: magic number, header, blocks; no checksum.
    """
    if window is None:
        header = bytes([0xE0])  # an 8-byte content size, single segment
    else:
        header = bytes([0xC0, (window.bit_length() - 11) << 3])  # and the window's exponent
    blocks = bytearray()
    for start in range(0, size, ZSTD_BLOCK_BYTES):
        length = min(ZSTD_BLOCK_BYTES, size - start)
        last = start + length == size
        # block header: size, type 1 (RLE), whether it is the last; then its one byte
        blocks += ((length << 3) | (1 << 1) | last).to_bytes(3, "little") + bytes([byte])
    return b"\x28\xb5\x2f\xfd" + header + struct.pack("<Q", size) + bytes(blocks)


ZSTD: tuple[dict[str, Any], ...] = ({"id": "zstd", "level": 0, "checksum": False},)
"""The codecs of :func:`one_chunk_file`: one zstd frame, no checksum of its own."""


def one_chunk_variable(
    shape: tuple[int, int],
    codecs: tuple[dict[str, Any], ...] = ZSTD,
    layout: Layout | None = None,
) -> VariableMeta:
    """A float32 variable ``v`` (dims ``y``, ``x``) of ``shape`` in one chunk.

    Parameters
    ----------
    shape
        The variable's shape, its chunk's too.
    codecs
        The chunk's codecs (numcodecs configurations).
    layout
        The elements' layout in the chunk; row-major if None.
    """
    return VariableMeta(
        name="v",
        dims=("y", "x"),
        shape=shape,
        dtype="float32",
        chunks=shape,
        layout=layout or RowMajorLayout(),
        codecs=codecs,
    )


def one_chunk_file(path: str | os.PathLike[str], shape: tuple[int, int], frame: bytes) -> None:
    """Write a file of :func:`one_chunk_variable` of ``shape``, row-major and zstd,
    whose one chunk's stored bytes are ``frame``.

    Parameters
    ----------
    path
        The file to write (replaced).
    shape
        The variable's shape, its chunk's too.
    frame
        The chunk's stored bytes, trusted: a frame that decodes to another size makes
        a file every read of which fails.
    """
    metadata = DatasetMeta(attrs={}, variables=(one_chunk_variable(shape),))
    write_sparse_file(path, metadata, {"v": {0: frame}})
