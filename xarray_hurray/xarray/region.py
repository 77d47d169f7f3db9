"""Where a region write goes in the file: :func:`resolve_region`, a region checked
with the request (:func:`~.request.parse_region`) placed against the dimensions of
the group it writes into, its ``"auto"`` entries found from the coordinates the
file holds."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd
import xarray as xr
from xarray import conventions

from ..container import ContainerReader
from ..errors import HurrayKeyError, HurrayValueError
from .backend import HurrayDataStore, file_dimensions
from .request import Region


def decoded_variables(
    base: ContainerReader, names: set[str], group: str = ""
) -> dict[Hashable, xr.Variable]:
    """Variables ``names`` of group ``group`` of the file, lazily decoded as
    ``open_dataset`` decodes them: their ``encoding`` is how the file encodes them."""
    store = HurrayDataStore(base, group)
    stored = {k: v for k, v in store.get_variables().items() if k in names}
    variables, _, _ = conventions.decode_cf_variables(stored, {})
    return dict(variables)


def _file_coordinate(base: ContainerReader, group: str, dim: Hashable) -> xr.Variable | None:
    """The coordinate ``dim`` as a DataTree node at ``group`` of the file sees it: the
    group's own, else the nearest ancestor's (coordinates are inherited)."""
    while True:
        stored = decoded_variables(base, {str(dim)}, group).get(dim)
        if stored is not None and stored.dims == (dim,):
            return stored
        if not group:
            return None
        group = group.rpartition("/")[0]


def _auto_region(ds: xr.Dataset, base: ContainerReader, dim: Hashable, group: str = "") -> slice:
    """The slice of ``dim`` in the file (seen from group ``group``) that the dataset's
    coordinate of ``dim`` covers."""
    if dim not in ds.variables:
        return slice(0, ds.sizes[dim])  # no coordinate: the dimension from its start
    stored = _file_coordinate(base, group, dim)
    if stored is None:
        raise HurrayKeyError(
            f"region='auto' needs the coordinate {dim!r} in the file to find where the "
            "dataset goes, and the file has none"
        )
    positions = pd.Index(stored.values).get_indexer(ds[dim].values)
    if (positions == -1).any():
        raise HurrayKeyError(
            f"Not all values of coordinate {dim!r} in the new array were found in the "
            "original file. Writing to a region requires that no dimensions or metadata "
            "are changed by the write."
        )
    if positions.size and (np.diff(positions) != 1).any():
        raise HurrayValueError(
            f"The auto-detected region of coordinate {dim!r} for writing new data to the "
            "original file had non-contiguous indices. Writing to a region requires that "
            "the new data constitute a contiguous subset of the original file."
        )
    start = int(positions[0]) if positions.size else 0
    return slice(start, start + positions.size)


def resolve_region(
    ds: xr.Dataset,
    base: ContainerReader,
    region: Region,
    group: str = "",
    coords: xr.Dataset | None = None,
) -> dict[Hashable, slice]:
    """``region`` (checked with the request, and cut to the dimensions of ``ds``)
    against the dimensions of group ``group`` of the file: ``"auto"`` entries found
    from the coordinates and every slice made absolute (``start``, ``stop``; step 1).
    ``coords`` holds the coordinates that place ``ds`` (by default its own; for a
    DataTree node, with those it inherits).

    Raises
    ------
    ValueError, KeyError
        For a dimension the file's group lacks, a slice out of its bounds, and
        coordinates ``"auto"`` cannot place.
    """
    if isinstance(region, str):  # "auto": every dimension
        region = dict.fromkeys(ds.dims, "auto")
    sizes = file_dimensions(base.metadata.group(group))
    resolved: dict[Hashable, slice] = {}
    for dim, value in region.items():
        if dim not in sizes:
            where = f"group {'/' + group!r} of the file" if group else "the file"
            raise HurrayValueError(
                f"region dimension {dim!r} is not a dimension of {where} {sizes}"
            )
        if isinstance(value, str):  # "auto"
            value = _auto_region(ds if coords is None else coords, base, dim, group)
        length = sizes[str(dim)]
        outside = [
            i for i in (value.start, value.stop) if i is not None and not -length <= i <= length
        ]
        if outside:
            raise HurrayValueError(
                f"region {dim!r}: {value} is out of bounds of the dimension's length "
                f"{length} in the file; a region writes into the file's extent (extend a "
                "dimension with append_dim)",
                value=value,
            )
        start, stop, _ = value.indices(length)
        resolved[dim] = slice(start, max(start, stop))
    return resolved
