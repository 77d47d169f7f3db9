"""The cases that readers without this package check: how the expected values are
laid down beside the stores and references, and read back.

The manifest (``manifest.json``) lists one case per variable of each store or set
of references:

- ``kind``: ``"zarr"`` (a Zarr v3 store directory) or ``"refs"`` (kerchunk references);
- ``path``: the store or references, relative to the manifest's directory;
- ``variable``, ``shape``;
- ``decoded``: the values as xarray decodes them (its default CF decoding), a raw
  file of ``decoded_dtype`` elements in C order;
- ``region``: ``[start, stop)`` per axis of a region, and ``raw``: the stored values
  of that region (no CF decoding), ``raw_dtype`` elements in C order, for readers
  that do not decode CF conventions (zarrita).

Values are compared bit for bit, so NaN is expected exactly where NaN was written.
numpy only, so the plain environment can import it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

MANIFEST = "manifest.json"


def save_values(directory: Path, name: str, values: np.ndarray) -> tuple[str, str]:
    """Write ``values`` as ``name`` (C order, little-endian); return (file, dtype)."""
    values = np.ascontiguousarray(values)
    if values.dtype.byteorder == ">":
        values = values.astype(values.dtype.newbyteorder("<"))
    (directory / name).write_bytes(values.tobytes())
    return name, values.dtype.str


def load_values(directory: Path, name: str, dtype: str, shape: list[int]) -> np.ndarray:
    """The values :func:`save_values` wrote."""
    return np.frombuffer((directory / name).read_bytes(), dtype=dtype).reshape(shape)


def same_bits(found: np.ndarray, expected: np.ndarray) -> bool:
    """Whether two arrays hold the same elements bit for bit (NaN equal to NaN)."""
    found = np.ascontiguousarray(np.asarray(found).astype(expected.dtype, copy=False))
    return found.shape == expected.shape and found.tobytes() == expected.tobytes()


def load_manifest(directory: Path) -> list[dict[str, Any]]:
    """The cases of the manifest in ``directory``."""
    cases: list[dict[str, Any]] = json.loads((directory / MANIFEST).read_text())["cases"]
    return cases
