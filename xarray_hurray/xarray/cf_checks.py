"""Checks of what a file hands to xarray's CF decoders, made before they run.

The format stores attributes of any JSON type; xarray's decoders assume the types the
CF conventions give them and fail in their own ways otherwise (``AttributeError``,
``LookupError``, numpy's ufunc type errors).  These checks turn such files into a
:class:`~xarray_hurray.container.HurrayFormatError` naming the variable and the
attribute.  What the decoders do with well-typed values (time units they cannot
parse, dates out of range) stays theirs; ``docs/reliability.md`` lists those errors.
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..container import HurrayFormatError, VariableMeta

TEXT_ATTRS = (
    "units",
    "calendar",
    "coordinates",
    "bounds",
    "grid_mapping",
    "ancillary_variables",
    "cell_measures",
    "formula_terms",
    "_Unsigned",
    "_Encoding",
)
"""Attributes the decoders read as text (splitting, parsing or comparing it)."""

NUMBER_ATTRS = ("scale_factor", "add_offset")
"""Attributes the decoders use as one real number."""

FILL_ATTRS = ("_FillValue", "missing_value")
"""Attributes the decoders compare with the data: values of the variable's kind."""


def _is_real(value: Any) -> bool:
    if isinstance(value, bool | np.bool_):
        return False
    if isinstance(value, int):  # numpy takes integers of 64 bits (signed or not), no more
        return -(2**63) <= value < 2**64
    if isinstance(value, float):
        return True
    return isinstance(value, np.generic | np.ndarray) and value.dtype.kind in "iuf"


def _reals(value: Any) -> list[Any] | None:
    """The items of ``value`` if it is one real number or a sequence of them, else None."""
    items = list(value) if isinstance(value, list | np.ndarray) else [value]
    if isinstance(value, np.ndarray) and value.ndim > 1:
        return None
    return items if items and all(_is_real(item) for item in items) else None


def _is_text(value: Any, kind: str) -> bool:
    return isinstance(value, str | np.str_) or (kind in "SO" and isinstance(value, bytes))


def encoding_misfit(kind: str) -> str | None:
    """Why a variable of numpy kind ``kind`` cannot carry ``_Encoding`` (None: it can).

    xarray's decoder decodes every element of a variable with ``_Encoding`` from
    bytes, so only bytes (``S<n>``, character arrays included) may name one: numbers
    and text that is already decoded have no ``decode``.
    """
    if kind == "S":
        return None
    return "text, not bytes" if kind in "UO" else "numbers"


def check_cf_attrs(what: str, kind: str | None, attrs: Mapping[str, Any]) -> None:
    """Check the types of the CF attributes of ``what`` (``"variable 'v'"``, or ``"the
    dataset"`` with ``kind`` None), a variable of numpy kind ``kind`` (``"O"`` for
    variable-length text).

    Raises
    ------
    HurrayFormatError
        Naming ``what``, the attribute and what it must be.
    """

    def refuse(attr: str, must: str) -> HurrayFormatError:
        return HurrayFormatError(
            f"{what}: CF attribute {attr!r} must be {must}, got {attrs[attr]!r}"
        )

    for attr in TEXT_ATTRS:
        if attr in attrs and not isinstance(attrs[attr], str):
            raise refuse(attr, "a string")
    if "_Encoding" in attrs:
        try:
            text_encoding = codecs.lookup(attrs["_Encoding"])._is_text_encoding
        except LookupError:
            text_encoding = False
        if not text_encoding:
            raise refuse("_Encoding", "the name of a text encoding such as 'utf-8'")
    if kind is None:
        return
    misfit = encoding_misfit(kind)
    if "_Encoding" in attrs and misfit is not None:
        raise refuse("_Encoding", f"absent, as the variable holds {misfit}")
    if "dtype" in attrs and not isinstance(attrs["dtype"], str):
        # xarray's boolean decoder compares it with "bool" (an array cannot be compared)
        raise refuse("dtype", "a string")
    for attr in NUMBER_ATTRS:
        if attr in attrs and kind in "SUO":  # the decoder would turn the text into numbers
            raise refuse(attr, "absent, as the variable holds text")
        if attr in attrs:
            items = _reals(attrs[attr])
            if items is None or len(items) != 1:
                raise refuse(attr, "one real number")
    for attr in FILL_ATTRS:
        if attr not in attrs:
            continue
        value = attrs[attr]
        if kind in "SUO":
            values = value if isinstance(value, list) else [value]
            if not values or not all(_is_text(v, kind) for v in values):
                raise refuse(attr, "text, as the variable holds text")
        elif _reals(value) is None and not (kind == "b" and isinstance(value, bool)):
            raise refuse(attr, "a number or a list of numbers, as the variable holds numbers")


def check_dimension_names(variables: Sequence[VariableMeta]) -> None:
    """Check that no scalar variable is named like a dimension: the format allows it,
    an xarray Dataset cannot hold it ("dimension already exists as a scalar variable").

    Raises
    ------
    HurrayFormatError
        Naming the variable and a variable that has the dimension.
    """
    owners = {dim: var.name for var in variables for dim in var.dims}
    for var in variables:
        if not var.dims and var.name in owners:
            raise HurrayFormatError(
                f"scalar variable {var.name!r} is named like a dimension of variable "
                f"{owners[var.name]!r}, which an xarray Dataset cannot hold; read this "
                "file with xarray_hurray.open_reader"
            )
