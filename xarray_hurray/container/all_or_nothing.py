"""The context-manager rule every write of the container follows: all or nothing."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class AllOrNothing(ABC):
    """A write that either completes or leaves the previous version in place.

    As a context manager it calls :meth:`_complete` when the block succeeds, and
    :meth:`abort` when the block raises or finishing does.
    """

    @abstractmethod
    def _complete(self) -> None:
        """Complete the write: the new version becomes the file's."""

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
            self._complete()
        except BaseException:
            self.abort()
            raise
