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
