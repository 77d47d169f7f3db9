"""The ``hurray`` engine of ``xarray.open_dataset``: lazy, chunk-aligned reads."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import AbstractDataStore, BackendArray, BackendEntrypoint
from xarray.backends.common import NONE_VAR_NAME
from xarray.backends.store import StoreBackendEntrypoint
from xarray.coding.strings import create_vlen_dtype
from xarray.core import indexing
from xarray.core.utils import FrozenDict

from ..container import ContainerReader, VariableMeta, has_magic, open_reader
from ..container.elements import STRING, parse_element_type
from ..container.limits import MAX_CHUNK_BYTES
from ..io import MergePolicy, is_url
from .cf_checks import check_cf_attrs, check_dimension_names
from .strings import decode_fill_bytes


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
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read
        )

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


class HurrayDataStore(AbstractDataStore):
    """The variables and attributes of one Hurray file, still CF-encoded."""

    def __init__(self, reader: ContainerReader) -> None:
        self.reader = reader

    def get_variables(self) -> FrozenDict:
        variables = {}
        check_dimension_names(self.reader.metadata.variables)
        for var in self.reader.metadata.variables:
            array = HurrayBackendArray(self.reader, var.name)
            check_cf_attrs(f"variable {var.name!r}", array.dtype.kind, var.attrs)
            attrs = decode_fill_bytes(array.dtype, var.attrs)
            encoding = _encoding(var) | {"source": self.reader.source.name}
            name = None if var.name == NONE_VAR_NAME else var.name
            variables[name] = xr.Variable(
                var.dims, indexing.LazilyIndexedArray(array), attrs, encoding
            )
        return FrozenDict(variables)

    def get_attrs(self) -> FrozenDict:
        check_cf_attrs("the dataset", None, self.reader.metadata.attrs)
        return FrozenDict(self.reader.metadata.attrs)

    def get_dimensions(self) -> FrozenDict:
        dims: dict[str, int] = {}
        for var in self.reader.metadata.variables:
            dims.update(zip(var.dims, var.shape, strict=True))
        return FrozenDict(dims)

    def close(self) -> None:
        """Release the source's file handle, if it holds one; a later lazy read opens
        it again (and checks that it is still the same file)."""
        close = getattr(self.reader.source, "close", None)
        if close is not None:
            close()


class HurrayBackendEntrypoint(BackendEntrypoint):
    """Open Hurray files with ``xr.open_dataset(path, engine="hurray")``."""

    description = "Hilbert/Morton-ordered single-file N-D array storage"
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
        except (OSError, AttributeError, TypeError):
            # xarray asks every backend about any object (a store, a directory, a
            # closed or text-mode file): whatever cannot be read is not ours
            return False

    def open_dataset(  # type: ignore[override]
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
    ) -> xr.Dataset:
        reader = open_reader(
            filename_or_obj,
            storage_options=storage_options,
            merge_policy=merge_policy,
            verify_checksums=verify_checksums,
            max_chunk_bytes=max_chunk_bytes,
        )
        return StoreBackendEntrypoint().open_dataset(
            HurrayDataStore(reader),
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            concat_characters=concat_characters,
            decode_coords=decode_coords,
            drop_variables=drop_variables,
            use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
        )
