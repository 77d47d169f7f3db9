"""What a step of a test allocates, measured with tracemalloc."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def measured(step: Callable[[], T]) -> tuple[T, float, int]:
    """``step()``, its wall time in seconds and the peak bytes it allocated while it
    ran (tracemalloc: Python's and numpy's allocations)."""
    tracemalloc.start()
    try:
        start = time.perf_counter()
        value = step()
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return value, seconds, peak
