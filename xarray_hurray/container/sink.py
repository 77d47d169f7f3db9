"""The protocol every sink of a write follows: where stored chunks go, all or nothing."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from types import TracebackType
from typing import Self

import numpy as np


class ChunkSink(ABC):
    """Where a write puts stored chunks: a new file, a new version of a file, an
    object.  Its life is open, write runs, then commit or abort:

    - opened by its constructor, before any chunk is encoded (so a target that
      cannot be written fails first);
    - :meth:`write_chunks` takes runs of chunks in the order the sink says (the
      placement order of the new version for every sink but an in-place commit,
      which takes any order);
    - :meth:`commit` makes the new version the target's at one instant;
      :meth:`abort` gives it up, and the previous version stays.

    As a context manager it commits when the block succeeds, and aborts when the
    block raises or the commit does.
    """

    @abstractmethod
    def write_chunks(self, name: str, chunk_ids: np.ndarray, data: Sequence[bytes | None]) -> None:
        """Store chunks ``chunk_ids`` (row-major ids in the grid of the new version) of
        the variable at path ``name`` with the stored bytes ``data``, in turn; None
        leaves a chunk out (a missing chunk, which reads as the fill)."""

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
        if exc_type is not None:
            self.abort()
            return
        try:
            self.commit()
        except BaseException:
            self.abort()
            raise
