"""A one-line progress bar on a text stream, for long writes: redrawn in place on a
terminal, one summary line at the end elsewhere (a log file has no use for ``\\r``)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from dask.callbacks import Callback

BAR_WIDTH = 24
REFRESH_SECONDS = 0.2


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class ProgressBar:
    """Units and bytes written so far, redrawn in place at most every 0.2 s when
    ``stream`` is a terminal; elsewhere only the final state is written, once.

    Parameters
    ----------
    label
        What is being written, shown before the bar.
    total
        Number of units to write.
    stream
        Where the bar is drawn; standard error when ``None``.
    unit
        What is counted: ``"chunks"`` or ``"parts"`` (with their bytes), or ``"tasks"``.
    """

    def __init__(
        self, label: str, total: int, stream: TextIO | None = None, unit: str = "chunks"
    ) -> None:
        self.label = label
        self.total = total
        self.stream = stream or sys.stderr
        self.unit = unit
        self.live = _is_terminal(self.stream)
        self.done = 0
        self.nbytes = 0
        self._start = time.perf_counter()
        self._drawn = -REFRESH_SECONDS

    def update(self, count: int, nbytes: int = 0) -> None:
        """Count ``count`` more units holding ``nbytes`` stored bytes."""
        self.done += count
        self.nbytes += nbytes
        now = time.perf_counter()
        if self.live and now - self._drawn >= REFRESH_SECONDS:
            self._drawn = now
            self._draw(now)

    def close(self) -> None:
        """Draw the final state and end the line."""
        self._draw(time.perf_counter())
        self.stream.write("\n")
        self.stream.flush()

    def _draw(self, now: float) -> None:
        fraction = self.done / self.total if self.total else 1.0
        filled = round(fraction * BAR_WIDTH)
        elapsed = max(now - self._start, 1e-9)
        volume = ""
        if self.unit != "tasks":
            rate = self.nbytes / elapsed / 1e6
            volume = f", {self.nbytes / 1e6:.1f} MB, {rate:.1f} MB/s"
        redraw = "\r" if self.live else ""
        self.stream.write(
            f"{redraw}{self.label} |{'#' * filled}{' ' * (BAR_WIDTH - filled)}|"
            f" {fraction:4.0%} {self.done}/{self.total} {self.unit}{volume}, {elapsed:.1f} s"
        )
        self.stream.flush()


class KeysDone(Callback):
    """Count each finished task of ``keys`` of a local scheduler's computation on
    ``bar``, with the bytes its result says it stored (its ``length``)."""

    def __init__(self, keys: Sequence[Any], bar: ProgressBar) -> None:
        Callback.__init__(self)
        self.keys = set(keys)
        self.bar = bar

    def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
        if key in self.keys:
            self.bar.update(1, result.length)


class DaskProgressBar(Callback):
    """A :class:`ProgressBar` counting the tasks of a dask computation, for writes
    that dask runs whole (Zarr and netCDF output)."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        Callback.__init__(self)
        self.label = label
        self.stream = stream
        self.bar: ProgressBar | None = None

    def _start_state(self, dsk: Any, state: dict[str, Any]) -> None:
        total = sum(len(state[k]) for k in ("ready", "waiting", "running", "finished"))
        self.bar = ProgressBar(self.label, total, self.stream, unit="tasks")

    def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def _finish(self, dsk: Any, state: Any, errored: bool) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
