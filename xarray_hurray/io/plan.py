"""Merging byte ranges into few requests under a stated policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import HurrayTypeError, HurrayValueError
from ..layout import group_runs


@dataclass(frozen=True)
class MergePolicy:
    """When two byte ranges are fetched by one request.

    Parameters
    ----------
    max_gap
        Largest number of unwanted bytes read between two ranges to save a request.
    max_request
        Largest request built by merging; a single range larger than this is still
        fetched whole, by a request of its own.
    """

    max_gap: int = 64 * 1024
    max_request: int = 64 * 2**20

    def __post_init__(self) -> None:
        for field in ("max_gap", "max_request"):
            value = getattr(self, field)
            if not isinstance(value, int | np.integer) or value < 0:
                raise HurrayValueError(
                    f"MergePolicy.{field} must be a non-negative integer, got {value!r}"
                )
        if self.max_request == 0:
            raise HurrayValueError("MergePolicy.max_request must be positive")


def as_merge_policy(spec: MergePolicy | Mapping[str, int] | None) -> MergePolicy | None:
    """``spec`` as a :class:`MergePolicy`: a policy, a mapping of its fields, or None.

    Raises
    ------
    ValueError
        For a mapping with keys other than ``max_gap`` and ``max_request``, or bad values.
    TypeError
        For anything else.
    """
    if spec is None or isinstance(spec, MergePolicy):
        return spec
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - {"max_gap", "max_request"})
        if unknown:
            raise HurrayValueError(
                f"unknown merge policy keys {unknown}; valid keys are max_gap and max_request"
            )
        return MergePolicy(**spec)
    raise HurrayTypeError(f"merge_policy must be a MergePolicy or a mapping, got {spec!r}")


@dataclass(frozen=True)
class ReadPlan:
    """Requests serving a set of ranges.

    Attributes
    ----------
    requests
        int64 array ``(m, 2)`` of ``[start, stop)`` byte ranges, sorted and disjoint.
    request_of
        For each input range, the row of ``requests`` that contains it.
    """

    requests: np.ndarray
    request_of: np.ndarray


def plan_reads(starts: np.ndarray, stops: np.ndarray, policy: MergePolicy) -> ReadPlan:
    """Group byte ranges ``[starts[i], stops[i])`` into requests under ``policy``.

    Ranges are taken in order of their start; a range joins the current request when
    the gap before it is at most ``policy.max_gap`` bytes and the request stays within
    ``policy.max_request`` bytes.  Overlapping ranges always share a request.
    """
    starts = np.asarray(starts, dtype=np.int64).reshape(-1)
    stops = np.asarray(stops, dtype=np.int64).reshape(-1)
    if starts.shape != stops.shape or np.any(stops < starts):
        raise HurrayValueError("byte ranges need matching starts and stops with start <= stop")
    requests, request_of = group_runs(starts, stops, policy.max_gap, policy.max_request)
    return ReadPlan(requests=requests, request_of=request_of)
