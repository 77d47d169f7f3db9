"""A VirtualiZarr parser for Hurray files: Zarr arrays whose chunks are byte ranges of
the file, read in place.

Needs the ``virtualizarr`` extra::

    from obstore.store import LocalStore
    from obspec_utils.registry import ObjectStoreRegistry
    from virtualizarr import open_virtual_dataset, open_virtual_datatree

    from xarray_hurray.zarr.virtual import HurrayParser

    registry = ObjectStoreRegistry({"file:///data/": LocalStore("/data/")})
    vds = open_virtual_dataset("file:///data/x.hurray", registry=registry,
                               parser=HurrayParser())
    # every group of a tree or a pyramid, which Icechunk takes whole
    vdt = open_virtual_datatree("file:///data/pyramid.hurray", registry=registry,
                                parser=HurrayParser())
    vdt.vz.to_icechunk(session.store)

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
from collections.abc import Iterable
from typing import Any

import numpy as np
from obspec_utils.registry import ObjectStoreRegistry
from virtualizarr.manifests import ChunkManifest, ManifestArray, ManifestGroup, ManifestStore
from zarr.core.metadata import ArrayV3Metadata

from ..container import ContainerReader, DatasetMeta, VariableMeta
from ..container.elements import parse_element_type
from ..container.metadata import dots_only
from ..io.obstore_source import ObstoreSource
from .numcodecs_codec import HurrayNumcodec
from .permute_codec import HurrayPermuteCodec
from .references import (
    UnreferenceableWarning,
    array_metadata,
    stored_row_major,
    unreferenceable,
    zarr_codecs,
    zarr_group_attributes,
)

__all__ = ["HurrayParser", "UnreferenceableWarning", "manifest_array"]


def manifest_array(
    reader: ContainerReader, var: VariableMeta, path: str, url: str
) -> ManifestArray:
    """The virtual array of ``var`` (at ``path`` in the file): its metadata and a
    reference per stored chunk."""
    permute: list[dict[str, Any]] = []
    if not stored_row_major(var):
        dtype = parse_element_type(var.dtype)
        codec = HurrayPermuteCodec(HurrayNumcodec(var.layout, var.chunks, dtype, "little"))
        permute.append(codec.to_dict())
    codecs = zarr_codecs(var, permute)
    metadata = ArrayV3Metadata.from_dict(array_metadata(var, codecs))
    grid = tuple(math.ceil(n / c) for n, c in zip(var.shape, var.chunks, strict=True))
    index = reader.index(path)
    # a missing chunk (size 0) has no reference: zarr reads it as the fill
    paths = np.where(index["size"] == 0, "", url).astype(np.dtypes.StringDType())
    manifest = ChunkManifest.from_arrays(
        paths=paths.reshape(grid),
        offsets=index["offset"].astype(np.uint64).reshape(grid),
        lengths=index["size"].astype(np.uint64).reshape(grid),
        validate_paths=False,
    )
    return ManifestArray(metadata=metadata, chunkmanifest=manifest)


class HurrayParser:
    """Create a VirtualiZarr ``ManifestStore`` from a Hurray file: a group of it and
    every group below, as Zarr groups.

    Parameters
    ----------
    group
        The group whose tree becomes the store's root (a path, ``"a/b"``); by default
        the file's root, so that ``open_virtual_datatree`` gives every group (a
        pyramid's levels among them) and ``open_virtual_dataset`` the root's own
        variables; ``group="0"`` gives a pyramid's level 0 there.
    skip_variables
        Variables to leave out, by name in every group, or by path (``"0/v"``).

    Notes
    -----
    Variables zarr cannot decode in place (strings and fixed-length text, stored in
    the file's own encoding) are left out with an
    :class:`UnreferenceableWarning` naming each; read them with
    ``xr.open_dataset(path, engine="hurray")``.  Groups whose names are periods alone
    (which earlier versions wrote) are no Zarr node's, and are left out with one too.
    A group's attributes are those a Zarr group holds (the ``multiscales`` of a
    pyramid as JSON objects, see :mod:`.references`).  Zarr does not check the file's
    per-chunk CRC32C checksums; ``hurray verify`` does.
    """

    def __init__(
        self, group: str | None = None, skip_variables: Iterable[str] | None = None
    ) -> None:
        self.group = (group or "").strip("/")
        self.skip_variables = set(skip_variables or ())

    def __call__(self, url: str, registry: ObjectStoreRegistry) -> ManifestStore:
        """Parse the file at ``url`` (read through ``registry``) into a ``ManifestStore``.

        Raises
        ------
        HurrayKeyError
            When the file has no such group, naming the groups it has.
        """
        store, path = registry.resolve(url)
        reader = ContainerReader(ObstoreSource(store, path))
        top = reader.metadata.group(self.group)
        left_out: list[str] = []
        group = self._group(reader, top, self.group, url, left_out)
        if left_out:
            warnings.warn(
                f"{url}: left out of the virtual dataset: {'; '.join(left_out)}; read "
                "them with engine='hurray'",
                UnreferenceableWarning,
                stacklevel=2,
            )
        return ManifestStore(group=group, registry=registry)

    def _group(
        self, reader: ContainerReader, meta: DatasetMeta, path: str, url: str, left_out: list[str]
    ) -> ManifestGroup:
        """The group ``meta`` at ``path`` and the groups below it, leaving out (and
        naming in ``left_out``) what Zarr cannot hold."""
        prefix = f"{path}/" if path else ""
        arrays: dict[str, ManifestArray] = {}
        for var in meta.variables:
            where = f"{prefix}{var.name}"
            if var.name in self.skip_variables or where in self.skip_variables:
                continue
            reason = unreferenceable(var, other_layouts=True)
            if reason is not None:
                left_out.append(f"variable {where!r} ({reason})")
                continue
            arrays[var.name] = manifest_array(reader, var, where, url)
        groups: dict[str, ManifestGroup] = {}
        for child in meta.groups:
            if dots_only(child.name):
                left_out.append(f"group {prefix + child.name!r} (its name is periods alone)")
                continue
            groups[child.name] = self._group(reader, child, f"{prefix}{child.name}", url, left_out)
        attributes = zarr_group_attributes(meta.attrs)
        return ManifestGroup(arrays=arrays, groups=groups, attributes=attributes)
