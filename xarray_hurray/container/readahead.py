"""Reading ahead on a pan: a read of a box the same size as the variable's last one,
right beside it, is taken as a step of a pan, and the next boxes the pan would read
are fetched in the same wave of requests.

Whether it pays is the cost model's (:mod:`xarray_hurray.io.costs`): the bytes read
ahead cost their transfer, and save a round trip when the pan goes on.  A merge
policy made from a model caps a request at what the link moves in ``in_flight``
latencies, so ``max_request / in_flight`` is what it moves in one latency: the
bytes a read may fetch ahead.  A policy with no ``in_flight`` states no model, and
a local source has no latency: neither reads ahead.

A pan is one client's reads, one after another: :class:`Pans` follows the last box
of each variable only while reads come one at a time, so that the tasks of a dask
computation, which read chunks side by side on several threads, never read ahead of
each other (each would fetch what the others fetch themselves).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ..io import MergePolicy
from .select import Key

Box = tuple[tuple[int, int], ...]
"""A selection of unit-step slices: ``(start, stop)`` per axis."""

AHEAD_STEPS = 16
"""Most boxes a pan reads ahead, whatever the budget."""


def box_of(key: Sequence[Key] | None, shape: Sequence[int]) -> Box | None:
    """``key`` as a box of ``shape``, when it is unit-step slices of positive length;
    None for any other key."""
    if key is None or len(key) != len(shape) or not shape:
        return None
    box = []
    for k, n in zip(key, shape, strict=True):
        if not isinstance(k, slice):
            return None
        start, stop, step = k.indices(n)
        if step != 1 or stop <= start:
            return None
        box.append((start, stop))
    return tuple(box)


def next_boxes(last: Box | None, box: Box, shape: Sequence[int], count: int) -> list[Box]:
    """The ``count`` boxes a pan would read after ``box``, when ``box`` is ``last``
    moved by its own length along exactly one axis (either way); each clipped to
    ``shape``, up to the edge.  Empty when ``box`` is no step of a pan."""
    if last is None or len(last) != len(box):
        return []
    moved = [axis for axis, (a, b) in enumerate(zip(last, box, strict=True)) if a != b]
    if len(moved) != 1:
        return []
    axis = moved[0]
    (start, stop), (last_start, last_stop) = box[axis], last[axis]
    length = stop - start
    if last_stop - last_start != length or abs(start - last_start) != length:
        return []
    shift = start - last_start
    out = []
    for step in range(1, count + 1):
        lo, hi = start + step * shift, stop + step * shift
        lo, hi = max(lo, 0), min(hi, shape[axis])
        if hi <= lo:
            break
        out.append((*box[:axis], (lo, hi), *box[axis + 1 :]))
    return out


def ahead_bytes(policy: MergePolicy) -> int:
    """Bytes a read may fetch ahead under ``policy``: what its link moves in one
    latency (0 for a policy that states no cost model)."""
    if policy.in_flight is None:
        return 0
    return policy.max_request // policy.in_flight


class Pans:
    """The last box each variable's reads took (:func:`box_of`), while reads come one at
    a time.  Reads that overlap (dask's tasks, a server's concurrent requests) are no
    steps of one client's pan: once such a spell of overlapping reads is over, every
    box is forgotten, so that the next read is no step either.  Thread-safe; a copy (a
    pickled reader) starts afresh.
    """

    def __init__(self) -> None:
        self._last: dict[str, Box] = {}
        self._reading = 0
        self._crowded = False
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[type[Pans], tuple[()]]:
        return Pans, ()

    @contextmanager
    def reading(self) -> Iterator[bool]:
        """Around one read: whether it is alone, the only read under way as it starts
        (only such a read may be a step of a pan, see :meth:`step`)."""
        with self._lock:
            self._reading += 1
            alone = self._reading == 1
            self._crowded |= not alone
        try:
            yield alone
        finally:
            with self._lock:
                self._reading -= 1
                if not self._reading and self._crowded:
                    self._last.clear()
                    self._crowded = False

    def step(self, name: str, box: Box) -> Box | None:
        """The box of the last read of ``name`` (None: none known), ``box`` taking its
        place; called by reads that are alone."""
        with self._lock:
            last = self._last.get(name)
            self._last[name] = box
        return last
