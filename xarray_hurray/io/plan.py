"""Merging byte ranges into few requests under a stated policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..errors import HurrayTypeError, HurrayValueError


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
    in_flight
        Requests the source has in flight at once (None: no limit).  A read that
        needs more requests than this takes several rounds of latency.
    crowded_gap
        Largest gap read through in such a read, where each request saved also saves
        a share of a round; None (or a value not above ``max_gap``) keeps ``max_gap``.
    """

    max_gap: int = 64 * 1024
    max_request: int = 64 * 2**20
    in_flight: int | None = None
    crowded_gap: int | None = None

    def __post_init__(self) -> None:
        for field in FIELDS:
            value = getattr(self, field)
            if value is None and field in ("in_flight", "crowded_gap"):
                continue
            if not isinstance(value, int | np.integer) or value < 0:
                raise HurrayValueError(
                    f"MergePolicy.{field} must be a non-negative integer, got {value!r}"
                )
        if self.max_request == 0 or self.in_flight == 0:
            raise HurrayValueError("MergePolicy.max_request and in_flight must be positive")


FIELDS = ("max_gap", "max_request", "in_flight", "crowded_gap")
"""The fields of :class:`MergePolicy`, also the keys of its mapping form."""


def as_merge_policy(spec: MergePolicy | Mapping[str, int] | None) -> MergePolicy | None:
    """``spec`` as a :class:`MergePolicy`: a policy, a mapping of its fields, or None.

    Raises
    ------
    ValueError
        For a mapping with keys other than the fields of :class:`MergePolicy`, or bad
        values.
    TypeError
        For anything else.
    """
    if spec is None or isinstance(spec, MergePolicy):
        return spec
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - set(FIELDS))
        if unknown:
            raise HurrayValueError(
                f"unknown merge policy keys {unknown}; valid keys are {', '.join(FIELDS)}"
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


def group_runs(
    starts: ArrayLike, stops: ArrayLike, max_gap: int = 0, max_request: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Merge runs ``[start, stop)`` into groups, and tell which group holds each run.

    The merge of the byte ranges of a read into requests (:func:`plan_reads`), with
    the gap and the size bound of a merge policy.  Runs are taken in order of their
    start; a run joins the current group when it overlaps it, or when the gap before
    it is at most ``max_gap`` and the group then spans at most ``max_request``.  A run
    longer than ``max_request`` still makes a group of its own.

    Parameters
    ----------
    starts, stops
        The runs; ``stops[i] >= starts[i]`` is the caller's to check.
    max_gap
        Largest gap joined over; 0 joins touching runs only.
    max_request
        Largest span of a group built by joining; ``None`` for no bound.

    Returns
    -------
    groups : numpy.ndarray
        int64 ``(m, 2)`` of ``[start, stop)``, sorted and disjoint.
    group_of : numpy.ndarray
        int64 ``(n,)``: for each run, the row of ``groups`` that holds it.
    """
    starts = np.asarray(starts, dtype=np.int64).reshape(-1)
    count = len(starts)
    if count == 0:
        return np.empty((0, 2), dtype=np.int64), np.empty(0, dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    lo = starts[order]
    # reach[i]: the furthest stop among the first i + 1 runs.  Groups are disjoint and
    # increasing, so reach[i - 1] is also the stop of the group run i may join.
    reach = np.maximum.accumulate(np.asarray(stops, dtype=np.int64).reshape(-1)[order])
    new_group = np.empty(count, dtype=bool)
    new_group[0] = True
    new_group[1:] = lo[1:] - reach[:-1] > max_gap
    if max_request is not None:
        # Only groups spanning more than max_request need the run-by-run walk: there a
        # run that does not overlap starts a new group once joining would pass the bound.
        first = np.flatnonzero(new_group)
        last = np.append(first[1:], count) - 1
        for a, b in zip(first.tolist(), last.tolist(), strict=True):
            if reach[b] - lo[a] <= max_request:
                continue
            group_start = lo[a]
            for i in range(a + 1, b + 1):
                if lo[i] >= reach[i - 1] and reach[i] - group_start > max_request:
                    new_group[i] = True
                    group_start = lo[i]
    first = np.flatnonzero(new_group)
    last = np.append(first[1:], count) - 1
    group_of = np.empty(count, dtype=np.int64)
    group_of[order] = np.cumsum(new_group) - 1
    return np.stack([lo[first], reach[last]], axis=1), group_of


def plan_reads(starts: np.ndarray, stops: np.ndarray, policy: MergePolicy) -> ReadPlan:
    """Group byte ranges ``[starts[i], stops[i])`` into requests under ``policy``.

    Ranges are taken in order of their start; a range joins the current request when
    the gap before it is at most ``policy.max_gap`` bytes and the request stays within
    ``policy.max_request`` bytes.  Overlapping ranges always share a request.  When that
    leaves more than ``policy.in_flight`` requests, the ranges are grouped again with
    ``policy.crowded_gap`` in place of ``max_gap``.
    """
    starts = np.asarray(starts, dtype=np.int64).reshape(-1)
    stops = np.asarray(stops, dtype=np.int64).reshape(-1)
    if starts.shape != stops.shape or np.any(stops < starts):
        raise HurrayValueError("byte ranges need matching starts and stops with start <= stop")
    if len(starts) == 1:
        # one range is one request (a dask task's chunk): no grouping to do
        one = np.stack([starts, stops], axis=1)
        return ReadPlan(requests=one, request_of=np.zeros(1, dtype=np.int64))
    requests, request_of = group_runs(starts, stops, policy.max_gap, policy.max_request)
    crowded = policy.crowded_gap
    if (
        policy.in_flight is not None
        and len(requests) > policy.in_flight
        and crowded is not None
        and crowded > policy.max_gap
    ):
        requests, request_of = group_runs(starts, stops, crowded, policy.max_request)
    return ReadPlan(requests=requests, request_of=request_of)
