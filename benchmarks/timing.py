"""Timing shared by the benchmark scripts."""

from __future__ import annotations

import math
import time
from collections.abc import Callable


def best_time(repeats: int, fn: Callable[..., object], *args: object) -> float:
    """Best wall time of ``repeats`` calls of ``fn(*args)``, in seconds.

    The best rather than the mean: on a shared machine, slower runs measure the
    neighbours, not the code.
    """
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def best_times(repeats: int, *calls: Callable[[], object]) -> list[float]:
    """Best wall time of each of ``calls`` (no arguments), in seconds, over ``repeats``
    rounds that call each in turn.

    Taking turns gives every call the same share of a shared machine's quiet and busy
    moments, so ratios between them hold even while the neighbours' load changes.
    Each timed call follows an untimed one of the same call, so that it finds the
    caches as it leaves them, not as the call before it left them.
    """
    best = [math.inf] * len(calls)
    for _ in range(repeats):
        for k, call in enumerate(calls):
            call()
            start = time.perf_counter()
            call()
            best[k] = min(best[k], time.perf_counter() - start)
    return best
