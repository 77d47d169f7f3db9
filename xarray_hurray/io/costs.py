"""The cost model behind the merge policy of remote reads.

A read of a region needs a set of byte ranges; the reader issues them as requests, up
to ``concurrency`` at a time, over one network link.  Each request waits ``latency``
seconds before its first byte, and all requests share the link's ``bandwidth``:

    time ~ (requests / concurrency) * latency + bytes / bandwidth

Merging two ranges across a gap of ``g`` bytes removes one request, saving
``latency / concurrency`` seconds, and moves ``g`` more bytes, costing
``g / bandwidth``.  Merging pays while ``g <= latency * bandwidth / concurrency``: that
is the largest gap worth reading through.  A merged request is capped at the bytes
the link moves during ``concurrency`` latency periods, so that one request never
holds the link for much longer than a full round of requests would.

``docs/remote.md`` gives the numbers for object storage and what they yield.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import HurrayValueError
from .plan import MergePolicy


@dataclass(frozen=True)
class CostModel:
    """Latency, bandwidth and concurrency of a byte store, and the policy they imply.

    Parameters
    ----------
    latency
        Seconds from issuing a request to its first byte.
    bandwidth
        Bytes per second of the link all requests share.
    concurrency
        Requests in flight at once.
    """

    latency: float
    bandwidth: float
    concurrency: int

    def __post_init__(self) -> None:
        if not (self.latency > 0 and self.bandwidth > 0):
            raise HurrayValueError(
                f"CostModel needs a positive latency and bandwidth, got latency={self.latency!r} "
                f"and bandwidth={self.bandwidth!r}"
            )
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise HurrayValueError(
                f"CostModel.concurrency must be a positive integer, got {self.concurrency!r}"
            )

    @property
    def max_gap(self) -> int:
        """Largest gap in bytes whose transfer costs no more than the request it saves."""
        return int(self.latency * self.bandwidth / self.concurrency)

    @property
    def max_request(self) -> int:
        """Bytes the link moves during ``concurrency`` latency periods."""
        return max(int(self.latency * self.bandwidth * self.concurrency), 1)

    def seconds(self, requests: int, nbytes: int) -> float:
        """Modelled time of a read of ``requests`` requests moving ``nbytes`` bytes."""
        rounds = requests / self.concurrency
        return rounds * self.latency + nbytes / self.bandwidth

    def merge_policy(self) -> MergePolicy:
        """The merge policy this model implies."""
        return MergePolicy(max_gap=self.max_gap, max_request=self.max_request)


OBJECT_STORE = CostModel(latency=0.020, bandwidth=100e6, concurrency=10)
"""Object storage (S3, GCS, Azure, HTTP servers) read from a nearby machine: 20 ms to the
first byte, 100 MB/s of link, 10 requests in flight (the connection pool of s3fs and of
obstore's ranged reads).  Merges gaps up to 200 kB into requests of up to 20 MB."""
