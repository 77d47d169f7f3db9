"""A least-recently-used cache bounded by the bytes of the arrays it holds."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar

import numpy as np


class Sized(Protocol):
    """What the cache holds: something that says how many bytes it takes."""

    @property
    def nbytes(self) -> int: ...


T = TypeVar("T", bound=Sized)


class ByteLRU:
    """Map keys to read-only arrays (or objects holding them, with an ``nbytes``),
    evicting the least recently used past ``max_bytes``.

    An array larger than the whole budget is returned but not kept.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """Bytes currently held."""
        return self._bytes

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """Return the value cached under ``key``, building and caching it if absent
        (an array is made read-only; other values keep their arrays read-only)."""
        with self._lock:
            hit: T | None = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        value = build()
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        if value.nbytes > self.max_bytes:
            return value
        with self._lock:
            if key not in self._items:
                self._items[key] = value
                self._bytes += value.nbytes
            while self._bytes > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self._bytes -= evicted.nbytes
        return value

    def clear(self) -> None:
        """Drop every cached array."""
        with self._lock:
            self._items.clear()
            self._bytes = 0
