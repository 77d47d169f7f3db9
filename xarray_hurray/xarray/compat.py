"""The private parts of xarray that the xarray adapter relies on, in one place (dask's
are in ``xarray_hurray/write/compat.py``).

Each is imported here and nowhere else, with what replaces it on the oldest versions
``pyproject.toml`` admits, so that a change upstream breaks this module (with a
message naming the versions), not a write halfway through.
"""

from __future__ import annotations

from typing import Any

import xarray as xr
from xarray import conventions
from xarray.backends.api import DATAARRAY_NAME, DATAARRAY_VARIABLE
from xarray.backends.common import ensure_dtype_not_object
from xarray.coding import times, variables
from xarray.coding.common import pop_to

CF_RELATED_DATA: tuple[str, ...] = tuple(conventions.CF_RELATED_DATA)
"""The attributes naming other variables of a dataset (``grid_mapping``, ``bounds``,
``cell_measures``...), which ``decode_coords="all"`` moves into a variable's encoding
and CF encoding moves back into its attributes."""

__all__ = [
    "CF_RELATED_DATA",
    "DATAARRAY_NAME",
    "DATAARRAY_VARIABLE",
    "encode_cf_variable_keeping_bools",
    "ensure_dtype_not_object",
]


def encode_cf_variable_keeping_bools(var: xr.Variable, name: Any) -> xr.Variable:
    """CF-encode ``var`` as xarray's Zarr backend does: times, scale and offset, fill
    values and enums are encoded; booleans stay booleans (the format stores them).

    xarray >= 2026.09 names that chain ``conventions.ZARR_CODERS``; before it,
    ``encode_cf_variable`` always added the boolean coder, so the same chain is run
    here coder by coder, as ``encode_cf_variable`` runs it.
    """
    zarr_coders = getattr(conventions, "ZARR_CODERS", None)
    if zarr_coders is not None:
        encoded: xr.Variable = conventions.encode_cf_variable(var, name=name, coders=zarr_coders)
        return encoded
    conventions.ensure_not_multiindex(var, name=name)
    for coder in (
        times.CFDatetimeCoder(),
        times.CFTimedeltaCoder(),
        variables.CFScaleOffsetCoder(),
        variables.CFMaskCoder(),
        variables.NativeEnumCoder(),
        variables.NonStringCoder(),
        variables.DefaultFillvalueCoder(),
    ):
        var = coder.encode(var, name=name)
    for attr_name in conventions.CF_RELATED_DATA:
        pop_to(var.encoding, var.attrs, attr_name)
    return var
