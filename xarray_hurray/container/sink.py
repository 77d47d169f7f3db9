"""The protocol every sink of a write follows: where stored chunks go, all or nothing.

Every sink is a :class:`Sink` (commit or abort, all or nothing), and takes the
chunks of a write one of two ways, by its protocol:

- :class:`ChunkSink` (every sink but one): the encoded chunks come to the writing
  process and the engine hands them to :meth:`ChunkSink.write_chunks`, a run at a
  time;
- :class:`TaskSink`: :meth:`TaskSink.runs_in_tasks` describes how the placement of
  the write is cut into runs and gives a writer of one run (:class:`TaskRuns`).
  The engine has each run written by a task that joins its encoded chunks where
  they were encoded, so that the chunks never reach the writing process, and
  hands what the tasks returned to :meth:`TaskSink.written` before the commit (a
  new ``s3://`` object, whose runs the tasks upload as parts).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Generic, Protocol, Self, TypeVar

import numpy as np


class RunReceipt(Protocol):
    """What the writer of a run returns to the writing process (small: sizes, CRCs,
    the store's receipt of a part; never the chunks)."""

    @property
    def length(self) -> int:
        """Bytes the run takes in the target (what a progress bar counts)."""


R = TypeVar("R", bound=RunReceipt)


@dataclass(frozen=True)
class TaskRuns(Generic[R]):
    """The runs of a sink whose chunks are written by the tasks that encode them.

    Parameters
    ----------
    cuts
        Where each run starts in the write's chunks (those of every part of the plan,
        one part after the other, each in its placement order), then the number of
        chunks: run ``k`` is chunks ``[cuts[k], cuts[k + 1])``.
    write_run
        Writes one run inside a task: called with the run's number ``k``, the stored
        bytes of its chunks, in turn (``b""``: a chunk left out), and their CRC-32C
        (0 for a chunk left out).  Picklable: it runs on whichever Dask worker holds
        the chunks.
    label, unit
        What the progress bar calls the write and its runs.
    """

    cuts: np.ndarray
    write_run: Callable[[int, Sequence[bytes], Sequence[int]], R]
    label: str
    unit: str = "runs"

    @property
    def count(self) -> int:
        """The number of runs."""
        return len(self.cuts) - 1


class Sink(ABC):
    """Where a write puts stored chunks: a new file, a new version of a file, an
    object.  Its life is open, write runs, then commit or abort:

    - opened by its constructor, before any chunk is encoded (so a target that
      cannot be written fails first);
    - the runs are written, as its protocol says (:class:`ChunkSink`,
      :class:`TaskSink`);
    - :meth:`commit` makes the new version the target's at one instant;
      :meth:`abort` gives it up, and the previous version stays.

    As a context manager it commits when the block succeeds, and aborts when the
    block raises or the commit does.  The error of the write is the one raised: an
    abort that fails too is told in a note on it.
    """

    @abstractmethod
    def commit(self) -> None:
        """Complete the write: the new version becomes the target's."""

    @abstractmethod
    def abort(self) -> None:
        """Give up the write; the previous version stays."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            self._abort_for(exc)
            return
        try:
            self.commit()
        except BaseException as err:
            self._abort_for(err)
            raise

    def _abort_for(self, error: BaseException) -> None:
        """Abort because of ``error``; a failure of the abort itself becomes notes on
        ``error`` (its message, then its own notes), which stays the error raised."""
        try:
            self.abort()
        except Exception as failed:
            error.add_note(f"aborting the write failed too: {failed!r}")
            for note in getattr(failed, "__notes__", ()):
                error.add_note(note)


class ChunkSink(Sink):
    """A sink that takes the encoded chunks in the writing process, in the order it
    says (the placement order of the new version for every sink but an in-place
    commit, which takes any order)."""

    @abstractmethod
    def write_chunks(
        self,
        name: str,
        chunk_ids: np.ndarray,
        data: Sequence[bytes | None],
        crcs: Sequence[int] | None = None,
    ) -> None:
        """Store chunks ``chunk_ids`` (row-major ids in the grid of the new version) of
        the variable at path ``name`` with the stored bytes ``data``, in turn; None
        leaves a chunk out (a missing chunk, which reads as the fill).  ``crcs``, where
        given, are the CRC-32C of ``data``, computed where the chunks were encoded
        (see :class:`~xarray_hurray.container.chunk.EncodedRun`); None: the sink
        computes them."""


class TaskSink(Sink, Generic[R]):
    """A sink whose chunks never reach the writing process: the tasks that encode
    them write them, a run at a time."""

    @abstractmethod
    def runs_in_tasks(self) -> TaskRuns[R]:
        """How the placement of the write is cut into runs, and the writer of one."""

    @abstractmethod
    def written(self, results: Sequence[R]) -> None:
        """Take, in the writing process, what the run writer returned for every run,
        in run order, once all are written (before :meth:`commit`)."""
