"""``Dataset.hurray``: the writer as a Dataset accessor."""

from __future__ import annotations

import os
from typing import Any

import xarray as xr
from dask.delayed import Delayed

from ..io import UploadTarget
from .writer import to_hurray


@xr.register_dataset_accessor("hurray")
class HurrayAccessor:
    """Hurray methods of a Dataset: ``ds.hurray.to_hurray(path, ...)``."""

    def __init__(self, dataset: xr.Dataset) -> None:
        self._dataset = dataset

    def to_hurray(
        self, path: str | os.PathLike[str] | UploadTarget, **kwargs: Any
    ) -> Delayed | None:
        """Write the dataset to ``path``; the arguments and the result are those of
        :func:`xarray_hurray.to_hurray`."""
        return to_hurray(self._dataset, path, **kwargs)
