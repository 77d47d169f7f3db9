"""The cost model behind the merge policy of remote reads.

A read of a region needs a set of byte ranges; the reader issues all its requests at
once, up to ``concurrency`` in flight, over one network link.  Requests in flight
wait out their ``latency`` together, so a request adds only its ``overhead`` (the
client's and the server's work per request) to a read that fits in one round; all
requests share the link's ``bandwidth``:

    time ~ rounds * latency + requests * overhead + bytes / bandwidth,
    rounds = ceil(requests / concurrency)

Merging two ranges across a gap of ``g`` bytes removes one request and moves ``g``
more bytes.  While the read fits in one round, the request saved is worth its
overhead: merging pays while ``g <= overhead * bandwidth`` (``max_gap``).  A read
that needs more than one round also saves a ``1 / concurrency`` share of a round
with every request: then gaps up to ``(overhead + latency / concurrency) *
bandwidth`` are read through (``crowded_gap``).  A merged request is capped at the
bytes the link moves during ``concurrency`` latency periods, so that one request
never holds the link for much longer than a full round of requests would.

``docs/remote.md`` gives the numbers for object storage and what they yield.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import HurrayValueError
from .plan import MergePolicy


@dataclass(frozen=True)
class CostModel:
    """Latency, bandwidth, concurrency and per-request overhead of a byte store, and
    the policy they imply.

    Parameters
    ----------
    latency
        Seconds from issuing a request to its first byte.
    bandwidth
        Bytes per second of the link all requests share.
    concurrency
        Requests in flight at once.
    overhead
        Seconds one more request adds to a read whose requests are all in flight
        together (client and server work per request, not a round trip).
    """

    latency: float
    bandwidth: float
    concurrency: int
    overhead: float

    def __post_init__(self) -> None:
        if not (self.latency > 0 and self.bandwidth > 0 and self.overhead >= 0):
            raise HurrayValueError(
                "CostModel needs a positive latency and bandwidth and an overhead >= 0, got "
                f"latency={self.latency!r}, bandwidth={self.bandwidth!r}, "
                f"overhead={self.overhead!r}"
            )
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise HurrayValueError(
                f"CostModel.concurrency must be a positive integer, got {self.concurrency!r}"
            )

    @property
    def max_gap(self) -> int:
        """Largest gap in bytes whose transfer costs no more than the overhead of the
        request it saves, in a read of one round."""
        return int(self.overhead * self.bandwidth)

    @property
    def crowded_gap(self) -> int:
        """Largest gap worth reading through in a read of more than one round, where a
        request also costs its share of a round's latency."""
        return int((self.overhead + self.latency / self.concurrency) * self.bandwidth)

    @property
    def max_request(self) -> int:
        """Bytes the link moves during ``concurrency`` latency periods."""
        return max(int(self.latency * self.bandwidth * self.concurrency), 1)

    def seconds(self, requests: int, nbytes: int) -> float:
        """Modelled time of a read of ``requests`` requests moving ``nbytes`` bytes."""
        rounds = math.ceil(requests / self.concurrency)
        return rounds * self.latency + requests * self.overhead + nbytes / self.bandwidth

    def merge_policy(self) -> MergePolicy:
        """The merge policy this model implies."""
        return MergePolicy(
            max_gap=self.max_gap,
            max_request=self.max_request,
            in_flight=self.concurrency,
            crowded_gap=self.crowded_gap,
        )


OBJECT_STORE = CostModel(latency=0.020, bandwidth=100e6, concurrency=32, overhead=0.002)
"""Object storage (S3, GCS, Azure through fsspec or obstore) read from a nearby machine:
20 ms to the first byte, 100 MB/s of link, 32 requests in flight, and 2 ms of work per
request: a signed request through s3fs costs its client 2.1 ms of CPU (measured
against moto's server), and the store bills each request.  Merges gaps up to 200 kB
(262.5 kB in reads of more than 32 requests) into requests of up to 64 MB."""

PLAIN_HTTP = CostModel(latency=0.020, bandwidth=100e6, concurrency=32, overhead=0.0005)
"""A plain http(s) server read through the standard library: as :data:`OBJECT_STORE`,
but 0.5 ms of work per unsigned request (0.35 ms measured against the benchmarks'
latency server).  Merges gaps up to 50 kB (112.5 kB in reads of more than 32
requests)."""
