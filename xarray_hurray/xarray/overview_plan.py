"""The plan of a pyramid, checked before anything is computed or written: the
dimensions it coarsens, the factors of its levels (no more than are of use) and the
resampling of each variable (see :mod:`.overviews` for what each means)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..errors import HurrayTypeError, HurrayValueError
from .dims import default_dims
from .overview_chunks import stored_chunks
from .pyramid import RESAMPLINGS, Pyramid, checked_factors
from .tree import NodeEncoding


def is_count(overviews: Any) -> bool:
    """Whether ``overviews`` is a number of levels (an integer, not a boolean)."""
    return isinstance(overviews, int | np.integer) and not isinstance(overviews, bool | np.bool_)


def useful_levels(ds: xr.Dataset, dims: Sequence[str]) -> tuple[int, str]:
    """How many levels of factors 2, 4, 8... are of use: down to the first that fits
    in one stored chunk (:func:`stored_chunks`) of every data variable along ``dims``,
    since a coarser one is read no faster (at least one level); and why, for a
    message."""
    first, why = 0, "level 0 already fits in one chunk of every variable"
    for name, var in ds.data_vars.items():
        chunks = stored_chunks(var.variable, dims)
        for dim, n, c in zip(var.dims, var.shape, chunks, strict=True):
            level = 0
            while dim in dims and -(-n // 2**level) > max(c, 1):  # (0: the writer refuses)
                level += 1
            if level > first:
                first = level
                why = (
                    f"level {level} (factor {2**level}) is the first that fits in one chunk "
                    f"of every variable ({name!r} has {-(-n // 2**level)} cells along "
                    f"{dim!r} there, in chunks of {c})"
                )
    return max(first, 1), why


def _flags(var: xr.Variable) -> bool:
    return any(key in var.attrs for key in ("flag_values", "flag_masks", "flag_meanings"))


def default_resampling(var: xr.Variable) -> str:
    """The resampling that keeps the meaning of ``var``: ``"mode"`` for integers,
    booleans and flags (CF ``flag_values``, ``flag_masks``, ``flag_meanings``),
    ``"nearest"`` for anything not a number (times, text), ``"mean"`` for the rest
    (continuous fields, complex ones too)."""
    if var.dtype.kind not in "biufc":
        return "nearest"
    if var.dtype.kind in "biu" or _flags(var):
        return "mode"
    return "mean"


def bounds_of(ds: xr.Dataset, dims: Sequence[str]) -> dict[Hashable, Hashable]:
    """The CF bounds variables of the 1-D coordinates along ``dims``: bounds to coordinate.

    Raises
    ------
    ValueError
        For bounds of another shape than ``(n, 2)`` along a coarsened dimension.
    """
    found: dict[Hashable, Hashable] = {}
    for name, var in ds.variables.items():
        target = var.attrs.get("bounds", var.encoding.get("bounds"))
        if not isinstance(target, str) or target not in ds.variables:
            continue
        bounds = ds.variables[target]
        if not set(bounds.dims) & set(dims):
            continue
        if (
            var.ndim != 1
            or bounds.ndim != 2
            or bounds.dims[0] != var.dims[0]
            or bounds.shape[1] != 2
        ):
            raise HurrayValueError(
                f"the bounds {target!r} of {name!r} have dims {bounds.dims} and shape "
                f"{bounds.shape}: only the (n, 2) bounds of a 1-D coordinate are coarsened; "
                "drop them before making overviews"
            )
        found[target] = name
    return found


def _check_resampling(ds: xr.Dataset, resampling: Any) -> None:
    """Refuse a ``resampling`` that is neither a name nor a mapping, or that names
    variables the dataset lacks."""
    if resampling is not None and not isinstance(resampling, str | Mapping):
        raise HurrayTypeError(
            f"resampling must be one of {RESAMPLINGS} or a mapping of variable names to "
            f"them, got {resampling!r}",
            value=resampling,
        )
    if isinstance(resampling, Mapping):
        unknown = [k for k in resampling if k not in ds.variables]
        if unknown:
            raise HurrayValueError(
                f"resampling given for {unknown}, which are not variables of the dataset"
            )


def choose_resampling(
    ds: xr.Dataset, dims: Sequence[str], resampling: str | Mapping[Hashable, str] | None
) -> dict[str, str]:
    """The resampling of every variable along ``dims``: ``resampling`` (one name, or by
    variable) else :func:`default_resampling`; coordinates ``"mean"`` when they are
    numbers, ``"nearest"`` otherwise; CF bounds take theirs from their edges.

    Raises
    ------
    HurrayValueError, HurrayTypeError
        For an unknown resampling or variable, a resampling other than nearest for
        values that are not numbers, min or max for complex ones, or ``resampling``
        neither a name nor a mapping.
    """
    _check_resampling(ds, resampling)
    bounds = bounds_of(ds, dims)
    chosen: dict[str, str] = {}
    for name, var in ds.variables.items():
        if not set(var.dims) & set(dims) or name in bounds:
            continue
        if isinstance(resampling, str):
            method = resampling if name in ds.data_vars else None
        elif isinstance(resampling, Mapping):
            method = resampling.get(name)
        else:
            method = None
        if method is None:
            numeric = var.dtype.kind in "fc" or (var.dtype.kind in "iu" and name in ds.coords)
            method = (
                ("mean" if numeric else "nearest") if name in ds.coords else default_resampling(var)
            )
        if method not in RESAMPLINGS:
            raise HurrayValueError(
                f"variable {name!r}: unknown resampling {method!r}; choose one of {RESAMPLINGS}"
            )
        if var.dtype.kind not in "biufc" and method != "nearest":
            raise HurrayValueError(
                f"variable {name!r} holds {var.dtype} values, which only 'nearest' resamples, "
                f"not {method!r}"
            )
        if var.dtype.kind == "c" and method in ("min", "max"):
            raise HurrayValueError(
                f"variable {name!r} holds complex values, which have no order for {method!r}; "
                "choose 'mean', 'nearest' or 'mode'"
            )
        chosen[str(name)] = method
    return chosen


def _chosen_dims(ds: xr.Dataset, dims: str | Sequence[Hashable] | None) -> tuple[str, ...]:
    """The dimensions a pyramid of ``ds`` coarsens: ``dims`` (one name, or several),
    checked, else :func:`~.dims.default_dims`.

    Raises
    ------
    HurrayValueError
        For dimensions the dataset lacks or named twice, or none at all.
    """
    if dims is None:
        chosen = default_dims(ds)
        if not chosen:
            raise HurrayValueError(
                f"overviews coarsen no time or vertical dimension by default, and the "
                f"dataset has no other ({tuple(ds.dims)}): name the dimensions to coarsen "
                "with overview_dims"
            )
        return chosen
    chosen = (dims,) if isinstance(dims, str) else tuple(str(d) for d in dims)
    unknown = [d for d in chosen if d not in ds.dims]
    if unknown:
        raise HurrayValueError(
            f"overview dims {unknown} are not dimensions of the dataset {tuple(ds.dims)}"
        )
    if len(set(chosen)) != len(chosen):
        raise HurrayValueError(f"overview dims {list(chosen)} name a dimension twice")
    if not chosen:
        raise HurrayValueError("overviews need at least one dimension to coarsen")
    return chosen


def _checked_count(overviews: Any) -> int:
    """``overviews``, a number of levels, once checked to be at least 1."""
    count = int(overviews)
    if count < 1:
        raise HurrayValueError(f"overviews must be at least 1 level, got {count}")
    return count


def with_encoding(ds: xr.Dataset, encoding: NodeEncoding) -> xr.Dataset:
    """``ds`` with the ``encoding`` given for its variables merged into their own, from
    which the coarser levels take their storage settings
    (:func:`~.overview_chunks.level_encoding`)."""
    if not encoding:
        return ds
    ds = ds.copy()
    for name, settings in encoding.items():
        if name in ds.variables:
            ds[name].encoding = {**ds[name].encoding, **settings}
    return ds


def check_level_arguments(
    ds: xr.Dataset,
    overviews: Any,
    dims: str | Sequence[Hashable] | None,
    resampling: Any,
) -> None:
    """Check the arguments of a pyramid of ``ds`` as far as they stand alone, whether
    the pyramid is new or a file's: ``overviews`` a number of levels or their factors,
    ``dims`` (when given) dimensions of ``ds``, ``resampling`` a name, or names by
    variable of ``ds``, of the resamplings there are.  What depends on the levels
    made (how many are of use, what each variable's type allows) is checked as they
    are made (:func:`plan_pyramid`), or against a file's (``LevelsRequest.check_against``).

    Raises
    ------
    HurrayTypeError, HurrayValueError
        Naming the argument and what is wrong.
    """
    if is_count(overviews):
        _checked_count(overviews)
    else:
        checked_factors(overviews)
    if dims is not None:
        _chosen_dims(ds, dims)
    _check_resampling(ds, resampling)
    names = resampling.values() if isinstance(resampling, Mapping) else [resampling]
    unknown = [name for name in names if name is not None and name not in RESAMPLINGS]
    if unknown:
        raise HurrayValueError(
            f"unknown resampling {unknown[0]!r}; choose one of {RESAMPLINGS}", value=unknown[0]
        )


def plan_pyramid(
    ds: xr.Dataset,
    overviews: int | Sequence[int],
    dims: str | Sequence[Hashable] | None = None,
    resampling: str | Mapping[Hashable, str] | None = None,
) -> Pyramid:
    """The pyramid ``multiscale`` makes of ``ds``, checked: a number of levels no
    larger than :func:`useful_levels`, factors below twice the longest dimension
    coarsened (a larger one makes the one cell a smaller one already makes).

    Raises
    ------
    HurrayValueError, HurrayTypeError
        For bad or useless factors, unknown dimensions and resamplings that do not fit.
    """
    chosen = _chosen_dims(ds, dims)
    if is_count(overviews):
        count = _checked_count(overviews)
        useful, why = useful_levels(ds, chosen)
        if count > useful:
            raise HurrayValueError(
                f"overviews={count} asks for more levels than are of use: {why}, and a "
                f"coarser level is read no faster; ask for at most {useful}, or give the "
                "factors of the levels",
                value=count,
            )
        factors = tuple(2**k for k in range(1, count + 1))
    else:
        factors = checked_factors(overviews)
    sizes = {d: ds.sizes[d] for d in chosen}
    limit = 2 * max(sizes.values())
    if factors[-1] >= limit:
        raise HurrayValueError(
            f"overview factor {factors[-1]} coarsens {sizes} to one cell, as a factor "
            f"half as large already does: factors must be below {limit}",
            value=factors,
        )
    return Pyramid(chosen, factors, choose_resampling(ds, chosen, resampling))
