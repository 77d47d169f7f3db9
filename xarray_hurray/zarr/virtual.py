"""A VirtualiZarr parser for Hurray files: Zarr arrays whose chunks are byte ranges of
the file, read in place.

Needs the ``virtualizarr`` extra::

    from obstore.store import LocalStore
    from obspec_utils.registry import ObjectStoreRegistry
    from virtualizarr import open_virtual_dataset

    from xarray_hurray.zarr.virtual import HurrayParser

    registry = ObjectStoreRegistry({"file:///data/": LocalStore("/data/")})
    vds = open_virtual_dataset("file:///data/x.hurray", registry=registry,
                               parser=HurrayParser())

Every stored chunk of a variable with a fixed-size element type (numbers, booleans;
times are stored as numbers) becomes a reference to its bytes in the file.  Each
array's codecs are zarr's ``bytes`` (little-endian), then ``numcodecs.hurray``
(:class:`~xarray_hurray.zarr.permute_codec.HurrayPermuteCodec`: the variable's layout,
chunk shape and type), then the file's compressors as Zarr codecs, so any zarr-python
with this package installed decodes them, from Icechunk or from kerchunk references
(Zarr v2, where the same chain is the ``hurray`` filter and the compressors).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import zarr.codecs
import zarr.codecs.numcodecs
from obspec_utils.registry import ObjectStoreRegistry
from virtualizarr.manifests import ChunkManifest, ManifestArray, ManifestGroup, ManifestStore
from virtualizarr.manifests.utils import create_v3_array_metadata
from virtualizarr.parsers.utils import encode_cf_fill_value

from ..container import ContainerReader, VariableMeta
from ..container.elements import parse_element_type
from ..io.obstore_source import ObstoreSource
from .numcodecs_codec import HurrayNumcodec
from .permute_codec import HurrayPermuteCodec
from .stored_chunk import FIXED_SIZE_KINDS

ZARR_COMPRESSORS: dict[str, Any] = {
    "zstd": lambda config: zarr.codecs.ZstdCodec(
        level=config.get("level", 0), checksum=config.get("checksum", False)
    ),
    "blosc": lambda config: zarr.codecs.numcodecs.Blosc(**config),
    "zlib": lambda config: zarr.codecs.numcodecs.Zlib(**config),
    "lz4": lambda config: zarr.codecs.numcodecs.LZ4(**config),
}
"""The Zarr v3 codec that decodes what each numcodecs compressor of a file wrote."""


class UnreferenceableWarning(UserWarning):
    """A variable of a Hurray file was left out of a virtual dataset."""


def unreferenceable(var: VariableMeta) -> str | None:
    """Why zarr cannot decode the stored chunks of ``var`` in place, or None if it can."""
    dtype = parse_element_type(var.dtype)
    if dtype.kind not in FIXED_SIZE_KINDS:
        return (
            f"its element type {var.dtype!r} is stored in the file's own variable-length "
            "encoding, which no Zarr codec decodes"
        )
    unknown = [c.get("id") for c in var.codecs if c.get("id") not in ZARR_COMPRESSORS]
    if unknown:
        return f"its codecs {unknown} have no Zarr equivalent here"
    return None


def zarr_codecs(var: VariableMeta) -> list[Any]:
    """The Zarr v3 codec chain that decodes the stored chunks of ``var``."""
    dtype = parse_element_type(var.dtype)
    permute = HurrayPermuteCodec(HurrayNumcodec(var.layout, var.chunks, dtype, "little"))
    compressors = [
        ZARR_COMPRESSORS[c["id"]]({k: v for k, v in c.items() if k != "id"}) for c in var.codecs
    ]
    return [zarr.codecs.BytesCodec(endian="little"), permute, *compressors]


def manifest_array(reader: ContainerReader, var: VariableMeta, url: str) -> ManifestArray:
    """The virtual array of ``var``: its metadata and a reference per stored chunk."""
    dtype = parse_element_type(var.dtype)
    attributes = dict(var.attrs)
    fill_value = attributes.get("_FillValue")
    if fill_value is not None:
        # xarray's zarr backend reads the CF attribute in its encoded form.
        attributes["_FillValue"] = encode_cf_fill_value(fill_value, dtype)
    metadata = create_v3_array_metadata(
        shape=var.shape,
        data_type=dtype,
        chunk_shape=var.chunks,
        fill_value=fill_value,
        codecs=[codec.to_dict() for codec in zarr_codecs(var)],
        attributes=attributes,
        dimension_names=var.dims,
    )
    grid = tuple(math.ceil(n / c) for n, c in zip(var.shape, var.chunks, strict=True))
    index = reader.index(var.name)
    # a missing chunk (format 1.1: size 0) has no reference: zarr reads it as the fill
    paths = np.where(index["size"] == 0, "", url).astype(np.dtypes.StringDType())
    manifest = ChunkManifest.from_arrays(
        paths=paths.reshape(grid),
        offsets=index["offset"].astype(np.uint64).reshape(grid),
        lengths=index["size"].astype(np.uint64).reshape(grid),
        validate_paths=False,
    )
    return ManifestArray(metadata=metadata, chunkmanifest=manifest)


class HurrayParser:
    """Create a VirtualiZarr ``ManifestStore`` from a Hurray file.

    Parameters
    ----------
    skip_variables
        Variables to leave out.

    Notes
    -----
    Variables zarr cannot decode in place (strings and fixed-length text, stored in
    the file's own variable-length encoding) are left out with an
    :class:`UnreferenceableWarning` naming each; read them with
    ``xr.open_dataset(path, engine="hurray")``.  Zarr does not check the file's
    per-chunk CRC32C checksums; ``hurray verify`` does.
    """

    def __init__(self, skip_variables: Iterable[str] | None = None) -> None:
        self.skip_variables = set(skip_variables or ())

    def __call__(self, url: str, registry: ObjectStoreRegistry) -> ManifestStore:
        """Parse the file at ``url`` (read through ``registry``) into a ``ManifestStore``."""
        store, path = registry.resolve(url)
        reader = ContainerReader(ObstoreSource(store, path))
        arrays: dict[str, ManifestArray] = {}
        for var in reader.metadata.variables:
            if var.name in self.skip_variables:
                continue
            reason = unreferenceable(var)
            if reason is not None:
                warnings.warn(
                    f"{url}: variable {var.name!r} is left out of the virtual dataset: "
                    f"{reason}; read it with engine='hurray'",
                    UnreferenceableWarning,
                    stacklevel=2,
                )
                continue
            arrays[var.name] = manifest_array(reader, var, url)
        attributes: Mapping[str, Any] = reader.metadata.attrs
        return ManifestStore(
            group=ManifestGroup(arrays=arrays, attributes=dict(attributes)), registry=registry
        )
