"""The ``hurray`` engine of ``xarray.open_dataset``, ``open_datatree`` and
``open_groups``: lazy, chunk-aligned reads."""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import AbstractDataStore, BackendArray, BackendEntrypoint
from xarray.backends.common import NONE_VAR_NAME
from xarray.backends.store import StoreBackendEntrypoint
from xarray.coding.strings import create_vlen_dtype
from xarray.core import indexing
from xarray.core.utils import Frozen, FrozenDict

from ..container import ContainerReader, DatasetMeta, VariableMeta, has_magic, open_reader
from ..container.elements import STRING, parse_element_type
from ..container.front import is_index_coordinate
from ..container.limits import MAX_CHUNK_BYTES, MAX_METADATA_CONTAINERS
from ..container.metadata import dots_only
from ..errors import HurrayValueError
from ..io import MergePolicy, is_url
from .cf_checks import check_cf_attrs, check_dimension_names
from .pyramid import level_names
from .strings import decode_fill_bytes
from .tree import group_path


class HurrayBackendArray(BackendArray):
    """One stored variable, read lazily with outer indexing."""

    def __init__(self, reader: ContainerReader, name: str) -> None:
        var = reader.variable(name)
        self.reader = reader
        self.name = name
        self.shape = var.shape
        self.dtype = (
            create_vlen_dtype(str) if var.dtype == STRING else parse_element_type(var.dtype)
        )

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        if isinstance(key, indexing.BasicIndexer) and all(
            isinstance(k, slice) and k.step in (None, 1) for k in key.tuple
        ):
            # unit-step slices (a dask task's block) go to the reader as they are, as
            # the adapter would hand them over, without its decomposition
            return self._read(key.tuple)
        out: np.ndarray = indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read
        )
        return out

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        """``self[key]`` for xarray's ``load_async``: the reader's asynchronous read, so
        that variables and regions awaited together fetch their bytes concurrently."""
        return await indexing.async_explicit_indexing_adapter(  # type: ignore[no-any-return]
            key, self.shape, indexing.IndexingSupport.OUTER, self._read_async
        )

    async def _read_async(self, key: tuple[Any, ...]) -> np.ndarray:
        return await self.reader.read_async(self.name, key)

    def _read(self, key: tuple[Any, ...]) -> np.ndarray:
        return self.reader.read(self.name, key)


def _encoding(var: VariableMeta) -> dict[str, Any]:
    chunks = dict(zip(var.dims, var.chunks, strict=True))
    return {
        "chunks": var.chunks,
        "preferred_chunks": chunks,
        "layout": var.layout.to_config(),
        "chunk_order": var.chunk_order,
        "chunk_axes": tuple(var.dims[a] for a in var.chunk_axes or ()),
        "codecs": list(var.codecs),
    }


def _names(drop: str | Iterable[str] | None) -> list[str]:
    """The names ``drop_variables`` gives: one name, several, or none."""
    if drop is None:
        return []
    return [drop] if isinstance(drop, str) else list(drop)


def file_dimensions(metadata: DatasetMeta) -> dict[str, int]:
    """The length of every dimension of the variables of a group of a file."""
    sizes: dict[str, int] = {}
    for var in metadata.variables:
        sizes.update(zip(var.dims, var.shape, strict=True))
    return sizes


def finest_level(metadata: DatasetMeta) -> str:
    """The group of level 0 of a file with overviews (its root without variables, its
    ``multiscales`` layout naming groups it has), else ``""``, the root."""
    if metadata.variables or "multiscales" not in metadata.attrs:
        return ""
    try:
        return level_names(metadata.attrs, [group.name for group in metadata.groups])[0]
    except HurrayValueError:
        return ""  # someone else's attribute of that name: the root, as any group


class HurrayDataStore(AbstractDataStore):
    """The variables and attributes of one group of a Hurray file (the root group by
    default), still CF-encoded."""

    def __init__(self, reader: ContainerReader, group: str = "") -> None:
        self.reader = reader
        self.group = group
        self.meta = reader.metadata.group(group)

    def get_variables(self) -> Frozen[Hashable, xr.Variable]:
        variables = {}
        check_dimension_names(self.meta.variables)
        for var in self.meta.variables:
            path = f"{self.group}/{var.name}" if self.group else var.name
            array = HurrayBackendArray(self.reader, path)
            check_cf_attrs(f"variable {path!r}", array.dtype.kind, var.attrs)
            attrs = decode_fill_bytes(array.dtype, var.attrs)
            encoding = _encoding(var) | {"source": self.reader.source.name}
            name = None if var.name == NONE_VAR_NAME else var.name
            variables[name] = xr.Variable(
                var.dims, indexing.LazilyIndexedArray(array), attrs, encoding
            )
        return FrozenDict(variables)

    def get_attrs(self) -> Frozen[Hashable, Any]:
        check_cf_attrs("the dataset", None, self.meta.attrs)
        return FrozenDict(self.meta.attrs)

    def get_dimensions(self) -> Frozen[Hashable, int]:
        return FrozenDict(file_dimensions(self.meta))

    def close(self) -> None:
        """Release the source's file handle, if it holds one; a later lazy read opens
        it again (and checks that it is still the same file)."""
        close = getattr(self.reader.source, "close", None)
        if close is not None:
            close()


DECODERS = (
    "mask_and_scale",
    "decode_times",
    "concat_characters",
    "decode_coords",
    "drop_variables",
    "use_cftime",
    "decode_timedelta",
)
"""The CF decoding arguments of ``open_dataset``, passed on to xarray's decoding."""


class HurrayBackendEntrypoint(BackendEntrypoint):
    """Open Hurray files with ``xr.open_dataset(path, engine="hurray")``."""

    description = "Hilbert/Morton-ordered single-file N-D array storage"
    supports_groups = True
    open_dataset_parameters = (
        "filename_or_obj",
        "mask_and_scale",
        "decode_times",
        "concat_characters",
        "decode_coords",
        "drop_variables",
        "use_cftime",
        "decode_timedelta",
        "storage_options",
        "merge_policy",
        "verify_checksums",
        "max_chunk_bytes",
        "max_metadata_containers",
        "group",
    )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if isinstance(filename_or_obj, str | os.PathLike):
            path = os.fspath(filename_or_obj)
            if path.endswith(".hurray"):
                return True
            if is_url(path):
                return False  # guessing must not send requests
        try:
            return has_magic(filename_or_obj)
        except (OSError, ValueError, AttributeError, TypeError):
            # xarray asks every backend about any object (a store, a directory, a
            # closed or text-mode file) and warns of any error: whatever cannot be
            # read is not ours
            return False

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        mask_and_scale: bool = True,
        decode_times: Any = True,
        concat_characters: bool = True,
        decode_coords: Any = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: Any = None,
        storage_options: Mapping[str, Any] | None = None,
        merge_policy: MergePolicy | Mapping[str, int] | None = None,
        verify_checksums: bool = True,
        max_chunk_bytes: int = MAX_CHUNK_BYTES,
        max_metadata_containers: int = MAX_METADATA_CONTAINERS,
        group: str | None = None,
    ) -> xr.Dataset:
        """The dataset of ``group`` (``"a/b"``); by default the root group, or, for a
        file with overviews (a root without variables whose ``multiscales`` layout
        names its groups), its level 0, the dataset at full resolution."""
        return self._open(filename_or_obj, dict(locals()), subtree=False)["/"]

    def open_groups_as_dict(
        self,
        filename_or_obj: Any,
        *,
        mask_and_scale: bool = True,
        decode_times: Any = True,
        concat_characters: bool = True,
        decode_coords: Any = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: Any = None,
        storage_options: Mapping[str, Any] | None = None,
        merge_policy: MergePolicy | Mapping[str, int] | None = None,
        verify_checksums: bool = True,
        max_chunk_bytes: int = MAX_CHUNK_BYTES,
        max_metadata_containers: int = MAX_METADATA_CONTAINERS,
        group: str | None = None,
    ) -> dict[str, xr.Dataset]:
        """Every group at or below ``group`` by its path from there (``"/"``,
        ``"/a"``, ``"/a/b"``), read from one opening of the file."""
        return self._open(filename_or_obj, dict(locals()), subtree=True)

    @staticmethod
    def _open(
        filename_or_obj: Any, arguments: dict[str, Any], subtree: bool
    ) -> dict[str, xr.Dataset]:
        """The datasets of ``arguments["group"]`` (and of the groups below it when
        ``subtree``) by their path from it, given the keyword ``arguments`` of
        :meth:`open_dataset`."""
        reader = open_reader(
            filename_or_obj,
            storage_options=arguments["storage_options"],
            merge_policy=arguments["merge_policy"],
            verify_checksums=arguments["verify_checksums"],
            max_chunk_bytes=arguments["max_chunk_bytes"],
            max_metadata_containers=arguments["max_metadata_containers"],
        )
        decoders = {key: arguments[key] for key in DECODERS}
        top = group_path(arguments["group"], new=False)
        if arguments["group"] is None and not subtree:
            top = finest_level(reader.metadata)
        try:
            node = reader.metadata.group(top)
        except KeyError as err:  # as xarray's other engines say a group is missing
            raise OSError(err.args[0]) from None
        paths = [path for path, _ in node.walk()] if subtree else [""]
        groups = [f"{top}/{path}".strip("/") for path in paths]
        # xarray reads every index coordinate whole to build its indexes: all in one
        # wave of requests (none where they lie in the head), not one after another
        dropped = set(_names(arguments["drop_variables"]))
        reader.hold(
            f"{group}/{var.name}".strip("/")
            for group in groups
            for var in reader.metadata.group(group).variables
            if is_index_coordinate(var) and var.name not in dropped
        )
        return {
            "/" + path: StoreBackendEntrypoint().open_dataset(
                HurrayDataStore(reader, group), **decoders
            )
            for path, group in zip(paths, groups, strict=True)
        }

    def open_datatree(self, filename_or_obj: Any, **kwargs: Any) -> xr.DataTree:
        """The tree of groups at or below ``group`` (keywords as
        :meth:`open_groups_as_dict`).

        Raises
        ------
        ValueError
            For a group named with periods alone (``"."``, ``".."``, which earlier
            writers took), which a tree's paths read as the group itself or its
            parent.
        """
        groups = self.open_groups_as_dict(filename_or_obj, **kwargs)
        for path in groups:
            if any(dots_only(part) for part in path.split("/")):
                raise HurrayValueError(
                    f"the group {path!r} has a name of periods alone, which a DataTree's "
                    "paths read as the group itself or its parent: open it with "
                    "open_dataset(group=...), or every group with xr.open_groups",
                    value=path,
                )
        return xr.DataTree.from_dict(groups)
