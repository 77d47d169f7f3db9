"""The bytes of a file its reader has fetched already, which reads cut chunks from
instead of asking the source again.

A reader keeps two kinds, each with a lifetime of its own (:class:`ByteCache`):

- the *head*, the open's first read (:class:`~.model.FileBytes`), for as long as the
  reader lives.  Chunks of index coordinates and bounds that a new file places right
  after the head (:mod:`.front`) are cut from it;
- the bytes *read ahead* of a pan (:mod:`.readahead`), per variable: the answers of its
  last two waves of requests ahead, each at most :func:`~.readahead.ahead_bytes`.  A
  new wave replaces the older of the two, so that the next step of the pan still
  finds what the step before fetched for it.  A copy of the reader starts without them.

A read works on a :class:`Spans`: the bytes it may cut from, taken once as it is
planned and never changed after.  What a read found there is there until it is done,
whatever other threads keep or let go of meanwhile; bytes only one read may use (what
:meth:`~.reader.ContainerReader.hold` fetched for the variables it decodes) are added
to that read's spans alone.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from .checksum import Bytes

Fetched = tuple[tuple[int, Bytes], ...]
"""Bytes of the file fetched already, as ``(offset, bytes)``."""


@dataclass(frozen=True)
class Spans:
    """The bytes fetched already that one read may cut from (immutable)."""

    parts: Fetched = ()

    def joined(self, more: Fetched) -> Spans:
        """These spans and ``more``."""
        return Spans((*self.parts, *more))

    def inside(self, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """Which ranges ``[starts[k], stops[k])`` lie inside one of the spans."""
        inside = np.zeros(len(starts), dtype=bool)
        for offset, blob in self.parts:
            inside |= (starts >= offset) & (stops <= offset + len(blob))
        return inside

    def cut(self, start: int, stop: int) -> Bytes | None:
        """Bytes ``[start, stop)`` cut from a span holding them all (a view, or the
        span itself where it is exactly those bytes); None where none does."""
        for offset, blob in self.parts:
            if offset <= start and stop <= offset + len(blob):
                if (start, stop) == (offset, offset + len(blob)):
                    return blob
                return memoryview(blob)[start - offset : stop - offset]
        return None


NOTHING = Spans()
"""No bytes fetched."""


class ByteCache:
    """The head of a file and the bytes read ahead of pans over its variables.

    Parameters
    ----------
    head
        The open's first read: the file's first bytes.
    """

    def __init__(self, head: bytes) -> None:
        self.head = head
        self._head = Spans(((0, head),))
        self._ahead: dict[str, tuple[Fetched, Fetched]] = {}
        """The bytes read ahead for each variable by its last two waves."""
        self._lock = threading.Lock()

    def spans(self, name: str, head: bool) -> Spans:
        """What a read of variable ``name`` may cut from: the head where ``head`` is
        true, and what was read ahead of a pan over ``name``."""
        found = self._ahead.get(name)
        if found is None:
            return self._head if head else NOTHING
        return Spans((*self._head.parts, *found[0], *found[1]) if head else found[0] + found[1])

    def keep_ahead(self, name: str, wave: Fetched) -> None:
        """Keep ``wave``, bytes read ahead of a pan over ``name``, in the place of the
        older of the two waves kept."""
        with self._lock:
            self._ahead[name] = (self._ahead.get(name, ((), ()))[1], wave)

    def __reduce__(self) -> tuple[type[ByteCache], tuple[bytes]]:
        # a copy starts with the head alone: what a pan read ahead stays with it
        return ByteCache, (self.head,)
