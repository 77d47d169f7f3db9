"""What a write into variables a file or store already holds checks against them, for
``to_hurray`` and ``to_zarr`` alike; ``stored`` is always those variables as
``open_dataset`` decodes them (read lazily: only the coordinates compared are read).

- An append adds values along ``append_dim`` after those held: index values held
  already (a time written twice) are refused, as is a coordinate without
  ``append_dim`` that differs from the one held (a shifted ``lat``), which the append
  would keep, placing the new values on the old grid.  Zarr and xarray accept both.
- A variable written into keeps its stored attributes: those the data gives other
  values (a changed ``units``) are not written, which :func:`changed_attrs` finds for
  a warning (:func:`warn_changed_attrs`).
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..errors import AttrsDroppedWarning, HurrayValueError
from .encoding import written_encoding


def _values_text(values: Any, limit: int = 5) -> str:
    """The first ``limit`` of ``values`` as text, ``...`` after them when there are more."""
    # through pandas: times as 2024-01-01 06:00:00, not in nanoseconds
    items = [str(v) for v in pd.Index(np.asarray(values).ravel()[: limit + 1])]
    return ", ".join(items[:limit]) + (", ..." if len(items) > limit else "")


def _check_new_index_values(
    ds: xr.Dataset, stored: Mapping[Hashable, xr.Variable], append_dim: Hashable, where: str
) -> None:
    """Refuse values of the index along ``append_dim`` that ``where`` holds already."""
    held = stored.get(append_dim)
    if append_dim not in ds.indexes or held is None or held.ndim != 1:
        return
    new = ds.indexes[append_dim]
    again = new[new.isin(held.values)]
    if len(again):
        raise HurrayValueError(
            f"append_dim={append_dim!r}: {len(again)} of the values appended are already "
            f"in {where} ({_values_text(again)}; it holds {held.size} from "
            f"{_values_text(held.values[:1])} to {_values_text(held.values[-1:])}); an "
            "append adds values after those held: drop these from the data, or write them "
            "where they are with region=",
            value=append_dim,
        )


def _same_values(new: np.ndarray, held: np.ndarray) -> np.ndarray:
    """Where two arrays of one shape hold the same values, missing ones included; the
    new values taken as the stored type, as the write would store them (a float64
    coordinate of a float32 one compares as float32)."""
    if held.dtype.kind in "biufcmM" and new.dtype.kind in "biufcmM":
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # out of range casts: they differ below
            new = new.astype(held.dtype)
    same = np.asarray(new == held)
    if held.dtype.kind in "fcmM":
        same |= pd.isnull(new) & pd.isnull(held)
    return same


def _check_coordinates(
    ds: xr.Dataset, stored: Mapping[Hashable, xr.Variable], append_dim: Hashable, where: str
) -> None:
    """Refuse a coordinate without ``append_dim`` whose values differ from those held."""
    for name in ds.coords:
        var, held = ds.variables[name], stored.get(name)
        if append_dim in var.dims or held is None or set(var.dims) != set(held.dims):
            continue  # dimensions that do not fit are refused with the others
        var = var.transpose(*held.dims)
        if var.shape != held.shape:
            continue
        same = _same_values(np.asarray(var.values), np.asarray(held.values))
        if same.all():
            continue
        at = tuple(int(i) for i in np.argwhere(~same)[0])
        index = ", ".join(map(str, at))
        raise HurrayValueError(
            f"coordinate {name!r} differs from the one in {where} ({name}[{index}] is "
            f"{_values_text(held.values[at])} there, {_values_text(var.values[at])} here), "
            f"which an append along {append_dim!r} keeps: the values appended would be "
            "placed on the grid held; put them on that grid first (reindex or "
            "interpolate), or write a new file",
            value=name,
        )


def check_append(
    ds: xr.Dataset,
    stored: Mapping[Hashable, xr.Variable],
    append_dim: Hashable,
    where: str = "the file",
) -> None:
    """Check an append of ``ds`` along ``append_dim`` into ``where``, whose variables
    that ``ds`` also has are ``stored`` (decoded).

    Raises
    ------
    HurrayValueError
        For index values along ``append_dim`` held already, naming them, and for a
        coordinate without ``append_dim`` other than the one held, naming it and the
        first value that differs.
    """
    _check_new_index_values(ds, stored, append_dim, where)
    _check_coordinates(ds, stored, append_dim, where)


def _same_attr(given: Any, held: Any) -> bool:
    """Whether an attribute's value given and the value held are the same (numbers of
    any type, arrays and lists element by element)."""
    if isinstance(given, str | bytes) or isinstance(held, str | bytes):
        return bool(given == held)
    try:
        return bool(np.array_equal(np.asarray(given), np.asarray(held), equal_nan=True))
    except TypeError:  # no NaN in these
        return bool(np.array_equal(np.asarray(given), np.asarray(held)))


def changed_attrs(
    ds: xr.Dataset, stored: Mapping[Hashable, xr.Variable]
) -> dict[Hashable, dict[str, tuple[Any, Any]]]:
    """The attributes that variables of ``ds`` written into those ``stored`` give other
    values than the stored ones (or that these lack), which the write does not keep:
    by variable, the value given and the one held (None where it has none).  An
    attribute that the stored variable's decoding moved into its encoding (a time's
    ``units``) is compared there."""
    found: dict[Hashable, dict[str, tuple[Any, Any]]] = {}
    for name, var in ds.variables.items():
        held = stored.get(name)
        if held is None:
            continue
        kept = {**written_encoding(held.encoding), **held.attrs}
        changed = {
            key: (value, kept.get(key))
            for key, value in var.attrs.items()
            if key not in kept or not _same_attr(value, kept[key])
        }
        if changed:
            found[name] = changed
    return found


def warn_changed_attrs(changed: Mapping[str, Mapping[str, tuple[Any, Any]]], where: str) -> None:
    """Warn, once for a whole write, of the attributes :func:`changed_attrs` found
    (``changed``: by variable path), naming each, the value given and the one kept."""
    if not changed:
        return
    described = "; ".join(
        f"{name!r}: "
        + ", ".join(
            f"{key}={given!r} (kept {held!r})"
            if held is not None
            else f"{key}={given!r} (none kept)"
            for key, (given, held) in attrs.items()
        )
        for name, attrs in changed.items()
    )
    warnings.warn(
        f"attributes not written: variables {where} holds keep their stored attributes, "
        f"and the data gives others: {described}.  Write {where} anew to change them",
        AttrsDroppedWarning,
        stacklevel=3,
    )
