"""A byte source that logs the requests it serves, for planning tools and benchmarks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .plan import MergePolicy
from .source import ByteSource


class CountingSource(ByteSource):
    """Serve reads from ``source`` and record each request as ``(start, stop)``.

    One recorded entry is one request the wrapped source received; merged ranges
    count once.  :attr:`batches` holds the number of requests of each call: the
    requests of one call go out together (a remote source sends them concurrently),
    so each call costs one round trip.
    """

    def __init__(self, source: ByteSource) -> None:
        self.source = source
        self.requests: list[tuple[int, int]] = []
        self.batches: list[int] = []

    @property
    def name(self) -> str:
        return self.source.name

    @property
    def bytes_read(self) -> int:
        """Bytes requested so far."""
        return sum(stop - start for start, stop in self.requests)

    def read(self, start: int, stop: int) -> bytes:
        self.requests.append((start, stop))
        self.batches.append(1)
        return self.source.read(start, stop)

    def read_ranges(self, ranges: np.ndarray) -> list[bytes]:
        self._record(ranges)
        return self.source.read_ranges(ranges)

    def read_ranges_as_completed(self, ranges: np.ndarray) -> Iterator[tuple[int, bytes]]:
        self._record(ranges)
        return self.source.read_ranges_as_completed(ranges)

    async def read_ranges_async(self, ranges: np.ndarray) -> list[bytes]:
        self._record(ranges)
        return await self.source.read_ranges_async(ranges)

    def _record(self, ranges: np.ndarray) -> None:
        self.requests.extend((int(a), int(b)) for a, b in ranges)
        if len(ranges):
            self.batches.append(len(ranges))

    def size(self) -> int | None:
        return self.source.size()

    @property
    def local(self) -> bool:
        return self.source.local

    def default_policy(self) -> MergePolicy:
        return self.source.default_policy()

    def __getstate__(self) -> dict[str, Any]:
        return {"source": self.source, "requests": [], "batches": []}
