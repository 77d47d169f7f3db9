"""What a file records of its pyramid, read without xarray or dask: the record of how
the levels were made (:class:`Pyramid`, the :data:`PYRAMID_ATTR` attribute) and the
levels the ``multiscales`` layout names (:func:`level_names`).  ``hurray info`` and
the backend's opening of a pyramid read them; :mod:`.overviews` builds pyramids.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..container.limits import MAX_LENGTH
from ..errors import HurrayError, HurrayFormatError, HurrayTypeError, HurrayValueError
from ..zarr.conventions import MAX_ATTRIBUTE_JSON_BYTES, convention_attrs, load_attribute_json

RESAMPLINGS = ("mean", "nearest", "mode", "min", "max")
"""The values of ``resampling``."""

PYRAMID_ATTR = "hurray_overviews"
"""The root attribute (JSON text) recording how the levels were made, so that an
append extends each of them in the same way: ``dims``, ``factors``, ``resampling``."""

MAX_FACTOR = 2 * MAX_LENGTH
"""The largest factor a pyramid may have: twice the longest axis a file may hold."""


def _record_problem(value: Any) -> str | None:
    """What makes ``value`` (parsed JSON) no record of overviews, or None."""
    if not isinstance(value, dict) or set(value) != {"dims", "factors", "resampling"}:
        return "it is not an object of 'dims', 'factors' and 'resampling'"
    dims, factors, resampling = value["dims"], value["factors"], value["resampling"]
    if (
        not isinstance(dims, list)
        or not dims
        or not all(isinstance(d, str) for d in dims)
        or len(set(dims)) != len(dims)
    ):
        return f"'dims' is not a list of distinct dimension names: {dims!r}"
    if not isinstance(factors, list):
        return f"'factors' is not a list: {factors!r}"
    try:
        checked_factors(factors)
    except HurrayError as err:
        return str(err)
    if not isinstance(resampling, dict) or not all(
        isinstance(m, str) and m in RESAMPLINGS for m in resampling.values()
    ):
        return f"'resampling' is not an object of variable names to one of {RESAMPLINGS}"
    return None


@dataclass(frozen=True)
class Pyramid:
    """How the levels of a pyramid are made.

    Attributes
    ----------
    dims
        The dimensions coarsened.
    factors
        The factor of each coarser level against level 0, increasing, each a multiple
        of the one before.
    resampling
        The resampling of each variable along ``dims`` (coordinates and bounds too).
    """

    dims: tuple[str, ...]
    factors: tuple[int, ...]
    resampling: Mapping[str, str]

    def record(self) -> str:
        """The JSON text of :data:`PYRAMID_ATTR`."""
        return json.dumps(
            {
                "dims": list(self.dims),
                "factors": list(self.factors),
                "resampling": dict(self.resampling),
            },
            sort_keys=True,
        )

    @classmethod
    def from_record(cls, text: str) -> Pyramid:
        """The pyramid recorded by :meth:`record`, checked as a new one is (distinct
        dimensions, factors of :func:`checked_factors`, known resamplings).

        Raises
        ------
        HurrayValueError
            When ``text`` is not such a record.
        """
        try:
            value = load_attribute_json(PYRAMID_ATTR, text)
        except HurrayFormatError as err:
            problem: str | None = str(err)
        else:
            problem = _record_problem(value)
        if problem is not None:
            raise HurrayValueError(
                f"the attribute {PYRAMID_ATTR!r} is not a record of overviews: {problem}",
                value=text[:200],
            )
        return cls(
            dims=tuple(value["dims"]),
            factors=tuple(value["factors"]),
            resampling=dict(value["resampling"]),
        )


def checked_factors(factors: Any) -> tuple[int, ...]:
    """``factors`` as the factors of coarser levels, once checked: integers from 2 to
    :data:`MAX_FACTOR`, increasing, each a multiple of the one before.

    Raises
    ------
    HurrayTypeError, HurrayValueError
        For anything else, naming what is wrong.
    """
    if isinstance(factors, str | bytes | Mapping) or not isinstance(factors, Iterable):
        raise HurrayTypeError(
            "overviews must be a number of levels (an integer) or the factors of the "
            f"levels (a list of integers), got {factors!r}",
            value=factors,
        )
    found = tuple(factors)
    if not found or not all(
        isinstance(f, int | np.integer) and not isinstance(f, bool | np.bool_) for f in found
    ):
        raise HurrayTypeError(
            f"overview factors must be a list of at least one integer, got {list(found)!r}",
            value=found,
        )
    previous = 1
    for factor in found:
        if factor <= previous or factor % previous or factor > MAX_FACTOR:
            raise HurrayValueError(
                f"overview factors {list(found)} must increase from 2, each a multiple of "
                "the one before (each level is made from the previous one), up to "
                f"{MAX_FACTOR}",
                value=found,
            )
        previous = int(factor)
    return tuple(int(f) for f in found)


def level_names(attrs: Mapping[Any, Any], groups: Iterable[str]) -> list[str]:
    """The groups of the levels of a pyramid whose root has ``attrs`` and child
    ``groups``, finest first: the ``multiscales`` layout's assets, as Hurray and Zarr
    files hold it.

    Raises
    ------
    HurrayValueError
        When the root has no ``multiscales`` layout of assets, or one naming groups
        it lacks or naming one twice.
    """
    held = attrs.get("multiscales")
    value = convention_attrs(attrs).get("multiscales")
    if held is None:
        raise HurrayValueError(
            "the tree has no overviews: its root has no 'multiscales' attribute with a layout"
        )
    layout = value.get("layout") if isinstance(value, Mapping) else None
    if (
        not isinstance(layout, list)
        or not layout
        or not all(isinstance(e, Mapping) and isinstance(e.get("asset"), str) for e in layout)
    ):
        raise HurrayValueError(
            "the root's 'multiscales' attribute is not a multiscales object with a layout "
            "of assets (JSON text of at most "
            f"{MAX_ATTRIBUTE_JSON_BYTES} bytes where a Hurray file holds it)"
        )
    names = [str(entry["asset"]) for entry in layout]
    if len(set(names)) != len(names):
        raise HurrayValueError(f"the multiscales layout names a level twice: {names}")
    missing = [n for n in names if n not in set(groups)]
    if missing:
        raise HurrayValueError(f"the multiscales layout names levels {missing} the tree lacks")
    return names


def recorded_pyramid(attrs: Mapping[Any, Any]) -> Pyramid | None:
    """The pyramid a file's root attributes record, or None."""
    text = attrs.get(PYRAMID_ATTR)
    return Pyramid.from_record(text) if isinstance(text, str) else None
