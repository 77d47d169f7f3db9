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
times are stored as numbers) becomes a reference to its bytes in the file, with the
metadata of :mod:`.references`: zarr's ``bytes`` (little-endian), then the file's
compressors as Zarr codecs, standard codecs only, for a variable stored row-major (the
writer's default).  A variable in another element layout gets
``numcodecs.hurray`` between them
(:class:`~xarray_hurray.zarr.permute_codec.HurrayPermuteCodec`: the variable's layout,
chunk shape and type), which zarr-python decodes where this package is installed, from
Icechunk or from kerchunk references (Zarr v2, where the same chain is the ``hurray``
filter and the compressors).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from obspec_utils.registry import ObjectStoreRegistry
from virtualizarr.manifests import ChunkManifest, ManifestArray, ManifestGroup, ManifestStore
from zarr.core.metadata import ArrayV3Metadata

from ..container import ContainerReader, VariableMeta
from ..container.elements import parse_element_type
from ..io.obstore_source import ObstoreSource
from .numcodecs_codec import HurrayNumcodec
from .permute_codec import HurrayPermuteCodec
from .references import (
    UnreferenceableWarning,
    array_metadata,
    stored_row_major,
    unreferenceable,
    zarr_codecs,
)

__all__ = ["HurrayParser", "UnreferenceableWarning", "manifest_array"]


def manifest_array(reader: ContainerReader, var: VariableMeta, url: str) -> ManifestArray:
    """The virtual array of ``var``: its metadata and a reference per stored chunk."""
    permute: list[dict[str, Any]] = []
    if not stored_row_major(var):
        dtype = parse_element_type(var.dtype)
        codec = HurrayPermuteCodec(HurrayNumcodec(var.layout, var.chunks, dtype, "little"))
        permute.append(codec.to_dict())
    codecs = zarr_codecs(var, permute)
    metadata = ArrayV3Metadata.from_dict(array_metadata(var, codecs))
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
    the file's own encoding) are left out with an
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
            reason = unreferenceable(var, other_layouts=True)
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
