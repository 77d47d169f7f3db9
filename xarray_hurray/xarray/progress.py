"""A one-line progress bar on a text stream, for long writes."""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 24
REFRESH_SECONDS = 0.2


class ProgressBar:
    """Chunks and bytes written so far, redrawn in place at most every 0.2 s.

    Parameters
    ----------
    label
        What is being written, shown before the bar.
    total
        Number of chunks to write.
    stream
        Where the bar is drawn; standard error when ``None``.
    """

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.stream = stream or sys.stderr
        self.done = 0
        self.nbytes = 0
        self._start = time.perf_counter()
        self._drawn = -REFRESH_SECONDS

    def update(self, chunks: int, nbytes: int) -> None:
        """Count ``chunks`` more chunks holding ``nbytes`` stored bytes."""
        self.done += chunks
        self.nbytes += nbytes
        now = time.perf_counter()
        if now - self._drawn >= REFRESH_SECONDS:
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
        rate = self.nbytes / elapsed / 1e6
        self.stream.write(
            f"\r{self.label} |{'#' * filled}{' ' * (BAR_WIDTH - filled)}| {fraction:4.0%} "
            f"{self.done}/{self.total} chunks, {self.nbytes / 1e6:.1f} MB, "
            f"{rate:.1f} MB/s, {elapsed:.1f} s"
        )
        self.stream.flush()
