"""Kerchunk references to a Hurray file, in standard Zarr v3 metadata.

A Hurray chunk stored in the row-major layout is exactly what zarr's ``bytes``
serializer writes (elements in C order, little-endian, padded to the full chunk at the
grid's edge), compressed by numcodecs codecs that Zarr readers have as well.  So a
reference to its byte range in the file, with Zarr v3 metadata naming ``bytes`` and
the compressor, is read by any Zarr v3 reader that takes kerchunk references
(fsspec's ``ReferenceFileSystem`` under zarr-python, zarrita's ``ReferenceStore``),
without this package.  :func:`kerchunk_references` builds them; ``hurray refs`` writes
them; :mod:`.virtual` (VirtualiZarr) uses the same metadata.

Pure JSON: no zarr and no VirtualiZarr, so it works wherever the package installs.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from xarray.backends.zarr import FillValueCoder

from ..container import ContainerReader, VariableMeta
from ..container.elements import parse_element_type
from ..container.metadata import dots_only
from ..errors import HurrayFormatError, HurrayValueError
from ..layout import RowMajorLayout
from .conventions import convention_attrs
from .stored_chunk import FIXED_SIZE_KINDS

REFERENCES_VERSION = 1
"""The version of the kerchunk reference format written (``{"version": 1, "refs": ...}``)."""

BLOSC_SHUFFLES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
"""numcodecs' blosc shuffle numbers to the names of Zarr v3's ``blosc`` codec."""


def _blosc(config: Mapping[str, Any], itemsize: int) -> dict[str, Any]:
    shuffle = config.get("shuffle", 1)
    if shuffle == -1:  # numcodecs' AUTOSHUFFLE: bit shuffle for bytes, else byte shuffle
        shuffle = 2 if itemsize == 1 else 1
    settings = {
        "cname": config.get("cname", "lz4"),
        "clevel": config.get("clevel", 5),
        "shuffle": BLOSC_SHUFFLES[shuffle],
        "typesize": itemsize,
        "blocksize": config.get("blocksize", 0),
    }
    return {"name": "blosc", "configuration": settings}


def _numcodecs(name: str) -> Callable[[Mapping[str, Any], int], dict[str, Any]]:
    def codec(config: Mapping[str, Any], itemsize: int) -> dict[str, Any]:
        settings = {k: v for k, v in config.items() if k != "id"}
        return {"name": f"numcodecs.{name}", "configuration": settings}

    return codec


ZARR_COMPRESSORS: dict[str, Callable[[Mapping[str, Any], int], dict[str, Any]]] = {
    "zstd": lambda config, _: {
        "name": "zstd",
        "configuration": {
            "level": config.get("level", 0),
            "checksum": config.get("checksum", False),
        },
    },
    "blosc": _blosc,
    # zlib streams (not gzip) and numcodecs' LZ4 frames have no Zarr v3 core codec:
    # these are the names zarr-python and zarrita both give the numcodecs codecs
    "zlib": _numcodecs("zlib"),
    "lz4": _numcodecs("lz4"),
}
"""Zarr v3 codec metadata that decodes what each numcodecs compressor of a file wrote,
from the file's codec configuration and the element size."""


class UnreferenceableWarning(UserWarning):
    """A variable of a Hurray file was left out of its references or virtual dataset."""


def stored_row_major(var: VariableMeta) -> bool:
    """Whether the stored chunks of ``var`` hold their elements in C order with nothing
    else: the row-major layout, or a curve that is the identity on its chunk shape
    (a Morton layout of one power-of-two axis, as older writers gave 1-D chunks)."""
    layout = var.layout
    if isinstance(layout, RowMajorLayout):
        return True
    size = math.prod(var.chunks)
    if layout.buffer_size(var.chunks) != size:
        return False  # padding: more bytes than zarr's chunk
    return bool(np.array_equal(layout.positions(var.chunks).reshape(-1), np.arange(size)))


def unreferenceable(var: VariableMeta, *, other_layouts: bool) -> str | None:
    """Why references cannot give the stored chunks of ``var`` to zarr, or None.

    Parameters
    ----------
    var
        The variable.
    other_layouts
        Whether chunks in an element layout other than row-major can be referenced
        (through this package's ``numcodecs.hurray`` codec); if not, they cannot.
    """
    dtype = parse_element_type(var.dtype)
    if dtype.kind not in FIXED_SIZE_KINDS:
        return (
            f"its element type {var.dtype!r} is stored in the file's own encoding, "
            "which no Zarr codec decodes"
        )
    unknown = [c.get("id") for c in var.codecs if c.get("id") not in ZARR_COMPRESSORS]
    if unknown:
        return f"its codecs {unknown} have no Zarr equivalent here"
    if not other_layouts and not stored_row_major(var):
        return (
            f"its chunks are stored in the {var.layout.name} element layout, which only "
            "this package's codec decodes (write it with layout='row-major' for standard "
            "references)"
        )
    return None


def zarr_codecs(var: VariableMeta, permute: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """The Zarr v3 codec metadata that decodes the stored chunks of ``var``: ``bytes``,
    then ``permute`` (what turns row-major bytes into the variable's layout, where it
    is not row-major), then its compressors."""
    itemsize = parse_element_type(var.dtype).itemsize
    serializer: dict[str, Any] = {"name": "bytes"}
    if itemsize > 1:
        serializer["configuration"] = {"endian": "little"}
    compressors = [ZARR_COMPRESSORS[c["id"]](c, itemsize) for c in var.codecs]
    return [serializer, *permute, *compressors]


def _float(value: float) -> float | str:
    """A float as Zarr v3 metadata writes one: non-finite values by name."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def zarr_fill_value(var: VariableMeta) -> Any:
    """The Zarr v3 ``fill_value`` of ``var``: what its missing chunks hold."""
    fill = np.asarray(var.fill)
    if fill.dtype.kind == "c":
        return [_float(float(fill.real)), _float(float(fill.imag))]
    if fill.dtype.kind == "f":
        return _float(float(fill))
    return fill.item()


def json_attribute(value: Any) -> Any:
    """An attribute value as JSON holds it: numpy scalars and arrays as numbers and lists."""
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [json_attribute(v) for v in value]
    if isinstance(value, dict):
        return {k: json_attribute(v) for k, v in value.items()}
    return value


def zarr_attributes(var: VariableMeta) -> dict[str, Any]:
    """The attributes of ``var`` for Zarr v3 metadata, ``_FillValue`` in the form
    xarray's zarr backend reads it back.

    Raises
    ------
    HurrayFormatError
        For a ``_FillValue`` that is no value of the variable's type (as xarray's
        reading of the file refuses it).
    """
    dtype = parse_element_type(var.dtype)
    attributes = {k: json_attribute(v) for k, v in var.attrs.items()}
    if "_FillValue" in var.attrs:
        fill = np.asarray(var.attrs["_FillValue"])
        try:
            attributes["_FillValue"] = FillValueCoder.encode(fill.item(), dtype)
        except (TypeError, ValueError, OverflowError) as err:
            raise HurrayFormatError(
                f"variable {var.name!r}: its _FillValue {fill.tolist()!r} is no value of its "
                f"type {dtype}: {err}",
                value=var.name,
            ) from err
    return attributes


def array_metadata(var: VariableMeta, codecs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The Zarr v3 metadata (``zarr.json``) of ``var``, its chunks decoded by ``codecs``."""
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(var.shape),
        "data_type": parse_element_type(var.dtype).name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(var.chunks)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": zarr_fill_value(var),
        "codecs": list(codecs),
        "attributes": zarr_attributes(var),
        "dimension_names": list(var.dims),
    }


def chunk_keys(var: VariableMeta, chunk_ids: np.ndarray) -> list[str]:
    """The Zarr v3 keys (default encoding, ``/``) of chunks ``chunk_ids`` (row-major
    flat indices) of ``var``."""
    ids = np.asarray(chunk_ids, dtype=np.int64)
    if not var.grid_shape:
        return ["c"] * len(ids)  # a scalar's one chunk
    coords = [c.tolist() for c in np.unravel_index(ids, var.grid_shape)]
    return ["/".join(["c", *map(str, point)]) for point in zip(*coords, strict=True)]


def zarr_group_attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """A group's attributes as a Zarr group holds them: JSON values, the objects of
    Zarr conventions (a pyramid's ``multiscales``) decoded from the JSON text a
    Hurray file holds them as."""
    return {k: json_attribute(v) for k, v in convention_attrs(attrs).items()}


REFERENCES_ATTR = "hurray_references"
"""The root group attribute of the references that says which version of the file
they were made from, and that they hold for that version only."""


def version_note(reader: ContainerReader, url: str) -> str:
    """The text of :data:`REFERENCES_ATTR` for references to the file ``reader`` read
    at ``url``."""
    generation = getattr(reader.header, "generation", None)
    version = f"generation {generation}, " if generation is not None else ""
    return (
        f"made from {url} ({version}{reader.header.file_length} bytes); they hold for "
        "that version of the file only: hurray compact, a rewrite or a region write moves "
        "or replaces chunks, and references made before read wrong values (no Zarr reader "
        "checks them); make them again after any write, or check them with "
        "hurray refs --check"
    )


def kerchunk_references(reader: ContainerReader, url: str) -> dict[str, Any]:
    """Kerchunk references (version 1) to every variable of the file read by ``reader``
    whose chunks standard Zarr v3 codecs decode, as stored at ``url``.

    Every group of the file becomes a Zarr group, every such variable an array whose
    chunks are references ``[url, offset, length]`` to their bytes in the file (a
    missing chunk has none, and reads as the fill value), found from the stored
    chunks alone: a grid of mostly missing chunks costs what the file holds.
    Variables that cannot be referenced so (text, element layouts other than
    row-major, names no Zarr node may have) are left out with one
    :class:`UnreferenceableWarning` naming each and why.

    The references hold for this version of the file only (a compaction or rewrite
    moves chunks, and Zarr readers check no checksum): the root group's attribute
    :data:`REFERENCES_ATTR` says so, naming the version; :func:`stale_references`
    checks them against the file.
    """
    refs: dict[str, Any] = {}
    left_out: list[str] = []
    for group_path, group in reader.metadata.walk():
        if any(dots_only(part) for part in group_path.split("/")):
            # such a name (written by earlier versions) is no Zarr node's: the key
            # would name the group above; the variables below are left out
            left_out += [
                f"{f'{group_path}/{var.name}'!r} (its group's name is periods alone)"
                for var in group.variables
            ]
            continue
        prefix = f"{group_path}/" if group_path else ""
        attributes = zarr_group_attributes(group.attrs)
        if not group_path:
            attributes[REFERENCES_ATTR] = version_note(reader, url)
        node = {"zarr_format": 3, "node_type": "group", "attributes": attributes}
        refs[f"{prefix}zarr.json"] = json.dumps(node)
        for var in group.variables:
            path = f"{prefix}{var.name}"
            reason = (
                "its name is periods alone, which is no Zarr array's"
                if dots_only(var.name)
                else unreferenceable(var, other_layouts=False)
            )
            if reason is not None:
                left_out.append(f"{path!r} ({reason})")
                continue
            refs[f"{path}/zarr.json"] = json.dumps(array_metadata(var, zarr_codecs(var)))
            # stored chunks only, a batch at a time: a missing chunk has no entry
            for _, chunk_ids, entries in reader.stored_chunks(path):
                keys = chunk_keys(var, chunk_ids)
                for key, offset, size in zip(
                    keys, entries["offset"].tolist(), entries["size"].tolist(), strict=True
                ):
                    refs[f"{path}/{key}"] = [url, offset, size]
    if left_out:
        warnings.warn(
            f"{url}: variables left out of the references: {'; '.join(left_out)}; read "
            "them with engine='hurray'",
            UnreferenceableWarning,
            stacklevel=2,
        )
    return {"version": REFERENCES_VERSION, "refs": refs}


def stale_references(reader: ContainerReader, refs: Mapping[str, Any]) -> list[str]:
    """The keys of kerchunk references ``refs`` (made by :func:`kerchunk_references`)
    that do not give the chunks of the file ``reader`` reads as it is now: chunks
    whose bytes moved or changed (a compaction, a rewrite, a region write), chunks
    stored since, variables and groups no longer there or added, or the metadata of
    a variable or group (but the root) that changed.
    An empty list: they read what the file holds.

    Raises
    ------
    ValueError
        For ``refs`` that are not references of version 1 to one file.
    """
    given = refs.get("refs") if isinstance(refs, Mapping) else None
    if not isinstance(given, Mapping):
        raise HurrayValueError("these are not kerchunk references: no member 'refs'")
    urls = {value[0] for value in given.values() if isinstance(value, list) and value}
    if len(urls) > 1:
        raise HurrayValueError(f"these references name {len(urls)} files, not one: {sorted(urls)}")
    url = urls.pop() if urls else ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreferenceableWarning)  # left out alike both times
        now = kerchunk_references(reader, url)["refs"]
    # the root group's metadata names the version it was made from: not compared
    keys = (set(given) | set(now)) - {"zarr.json"}
    return sorted(key for key in keys if given.get(key) != now.get(key))
