"""A new ``s3://`` object written as one multipart upload whose parts the Dask workers
upload themselves.

The placement sequence of every stored chunk is cut into runs of consecutive
chunks (:func:`~xarray_hurray.io.multipart.cut_runs`, :class:`PartLayout`), when
the sink is chosen; the sink, :class:`ObjectUpload`, has the engine write each run
in a task (:meth:`~xarray_hurray.container.sink.TaskSink.runs_in_tasks`), which joins
the run's encoded chunks, uploads them as one part (:class:`PartWriter`) and
returns only their sizes and CRCs.  Its commit packs the head
(:func:`~xarray_hurray.container.head.pack_head`), uploads it as part 1 and
completes the upload.  See the design notes ("Writes that scale past one
machine").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...container import DatasetMeta, VariableMeta
from ...container.elements import parse_element_type
from ...container.format import INDEX_ENTRY
from ...container.head import HeadPlan, pack_head
from ...container.sink import TaskRuns, TaskSink
from ...errors import HurrayValueError
from ...io.multipart import (
    DEFAULT_PART_BYTES,
    S3_RULES,
    MultipartUpload,
    Part,
    PartRules,
    cut_runs,
    start_multipart,
)

log = logging.getLogger(__name__)

STRING_BYTES = 16
"""Assumed bytes per variable-length string when sizing runs."""


@dataclass(frozen=True)
class RunResult:
    """What a run task returns: the part it uploaded (None: no part, the run holds
    no stored chunk, or it is the file's only run and its bytes are in ``data``),
    the part's length with its padding, and the size and CRC32C of each chunk."""

    part: Part | None
    length: int
    sizes: np.ndarray
    crcs: np.ndarray
    data: bytes | None = None


def _raw_bytes(var: VariableMeta) -> int:
    """Bytes of one chunk of ``var`` before compression (strings estimated)."""
    dtype = parse_element_type(var.dtype)
    itemsize = STRING_BYTES if dtype.kind == "O" else dtype.itemsize
    return int(var.layout.buffer_size(var.chunks)) * itemsize


@dataclass(frozen=True, eq=False)
class PartLayout:
    """Where the parts of a new object go: part 1 the head, then one part per run,
    then the pages that follow the chunks, if any.

    Made by :meth:`of` before anything is uploaded, so that an object that cannot
    be written (a head larger than a part, more parts than the store takes) is
    refused first.
    """

    head: HeadPlan
    cuts: np.ndarray
    """Run ``k`` holds positions ``[cuts[k], cuts[k + 1])`` of the placement of every
    chunk (variable by variable, in the order of ``head.placed``)."""
    page_parts: int
    """Parts kept after the runs for the pages that follow the chunks."""
    rules: PartRules

    @classmethod
    def of(
        cls,
        url: str,
        metadata: DatasetMeta,
        part_bytes: int = DEFAULT_PART_BYTES,
        rules: PartRules = S3_RULES,
    ) -> PartLayout:
        """The parts of ``metadata`` at ``url``, runs of about ``part_bytes`` of input.

        Raises
        ------
        ValueError
            When the page tables take more than one part, or the runs more parts than
            the store takes.
        """
        head = HeadPlan(metadata)
        if head.length > rules.max_part:
            raise HurrayValueError(
                f"the page tables of {url} would take {head.length} bytes, more "
                f"than one part holds ({rules.max_part}); use larger chunks or split the "
                "dataset into several files"
            )
        raw = [np.full(v.chunk_count, _raw_bytes(v), dtype=np.int64) for _, v in head.placed]
        # parts kept besides the runs: the head, and the pages uploaded after the runs
        # (at most every page, in parts of the largest size) when they may go there
        page_parts = -(-head.page_bytes // rules.max_part) if head.pages_may_follow else 0
        cuts = cut_runs(
            np.concatenate([np.zeros(0, np.int64), *raw]),
            part_bytes,
            rules,
            reserved=1 + page_parts,
        )
        return cls(head, cuts, page_parts, rules)

    @property
    def runs(self) -> int:
        """Number of runs (parts besides the head and the pages)."""
        return len(self.cuts) - 1


@dataclass(frozen=True)
class PartWriter:
    """The writer of a run of a new object, run by the task that joins its chunks:
    uploads the run as one part, after the head's part 1.

    Parameters
    ----------
    upload
        The upload; None returns the bytes instead (the only run of a small file,
        which the writing process uploads with the head as the only part).
    runs
        The number of runs.
    pad_to
        Zeros are added to every run but the last part up to this many bytes (the
        store's minimum part), so that a run that compressed well is still a valid
        part.
    pages_follow
        Whether parts of pages follow the last run (then it is padded too).
    """

    upload: MultipartUpload | None
    runs: int
    pad_to: int
    pages_follow: bool

    def __call__(self, k: int, blobs: Sequence[bytes], checksums: Sequence[int]) -> RunResult:
        """Join the stored chunks ``blobs`` of run ``k`` (``b""``: left out), whose
        CRC-32C are ``checksums``, and upload them as part ``k + 2``."""
        sizes = np.array([len(b) for b in blobs], dtype=np.uint64)
        crcs = np.array(checksums, dtype=np.uint32)
        data = b"".join(blobs)
        if self.upload is None:
            return RunResult(None, len(data), sizes, crcs, data)
        if not data:  # every chunk left out: no part at all (part numbers may have gaps)
            return RunResult(None, 0, sizes, crcs)
        # only the part with the highest number may be small: the last run, when no
        # pages follow it
        last = k == self.runs - 1 and not self.pages_follow
        if not last and len(data) < self.pad_to:
            data += bytes(self.pad_to - len(data))  # unreferenced bytes, legal in the format
        return RunResult(self.upload.upload_part(k + 2, data), len(data), sizes, crcs)


class ObjectUpload(TaskSink[RunResult]):
    """The sink of a new ``s3://`` object: one multipart upload, whose runs of chunks
    the tasks that encode them upload (:meth:`runs_in_tasks`); the object appears
    at the commit, when the upload completes.  Aborted (on any failure, or an
    interruption), the upload is given up and the target is left as it was.

    Parameters
    ----------
    url, storage_options
        The target object and the s3fs options.
    layout
        Its parts.
    exclusive
        Complete only where no object exists (``mode="w-"``, ``"a"`` creating the
        file, a write of a group): one that appeared during the write is kept, and
        the write fails with :class:`~xarray_hurray.errors.TargetExistsError`.
    """

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any],
        layout: PartLayout,
        exclusive: bool = False,
    ) -> None:
        upload = start_multipart(url, storage_options)
        if upload is None:
            raise HurrayValueError(f"{url} has no multipart upload this writer can use")
        self.url, self.upload, self.layout, self.exclusive = url, upload, layout, exclusive
        self._results: Sequence[RunResult] | None = None
        self._started = self._runs_done = time.perf_counter()

    def runs_in_tasks(self) -> TaskRuns[RunResult]:
        layout = self.layout
        writer = PartWriter(
            # a file of one run is uploaded as one part by the writing process
            self.upload if layout.runs > 1 else None,
            layout.runs,
            layout.rules.min_part,
            layout.page_parts > 0,
        )
        self._started = time.perf_counter()
        return TaskRuns(layout.cuts, writer, f"uploading {self.url}", "parts")

    def written(self, results: Sequence[RunResult]) -> None:
        self._results = results
        self._runs_done = time.perf_counter()

    def commit(self) -> None:
        """Pack and upload the head and the pages, and complete the upload."""
        if self._results is None and self.layout.runs:
            raise HurrayValueError(f"the runs of {self.url} were not written")
        parts = self._finish(self._results or ())
        head_done = time.perf_counter()
        self.upload.complete(parts, exclusive=self.exclusive)
        done = time.perf_counter()
        # timings for benchmarks and for users wondering where a write's time goes
        timings = {
            "runs_s": self._runs_done - self._started,
            "head_s": head_done - self._runs_done,
            "complete_s": done - head_done,
        }
        log.info(
            "%s: %d parts; runs %.3f s, head %.3f s, completion %.3f s",
            self.url,
            len(parts),
            *timings.values(),
            extra=timings,
        )

    def abort(self) -> None:
        """Abort the upload: the store drops every part."""
        try:
            self.upload.abort()
        except Exception as failed:
            failed.add_note(
                f"the parts of {self.upload!r} stay stored until it is aborted "
                "(xarray_hurray.io.pending_uploads lists it)"
            )
            raise

    def _finish(self, results: Sequence[RunResult]) -> list[Part]:
        """Pack and upload the head (with the chunks of a single run) and the pages
        that follow the chunks; every part of the file, in order."""
        layout, upload = self.layout, self.upload
        inline = b"".join(r.data for r in results if r.data is not None)
        head_part = layout.head.length
        if layout.runs > 1:
            head_part = max(head_part, layout.rules.min_part)
        starts = head_part + np.cumsum([0] + [r.length for r in results], dtype=np.int64)
        entries = np.zeros(int(layout.cuts[-1]), dtype=INDEX_ENTRY)
        for k, result in enumerate(results):
            rows = entries[layout.cuts[k] : layout.cuts[k + 1]]
            offsets = starts[k] + np.cumsum(result.sizes, dtype=np.int64) - result.sizes
            rows["offset"] = np.where(result.sizes > 0, offsets, 0)
            rows["size"] = result.sizes
            rows["crc32c"] = result.crcs
        by_path: dict[str, np.ndarray] = {}
        start = 0
        for path, var in layout.head.placed:
            by_path[path] = entries[start : start + var.chunk_count]
            start += var.chunk_count
        index = pack_head(layout.head, by_path, int(starts[-1]))
        head = index.head + bytes(head_part - len(index.head)) + inline
        if layout.runs <= 1:
            # a single run: the whole file is one part, which may have any size
            return [upload.upload_part(1, head + index.pages)]
        parts = [upload.upload_part(1, head)]
        parts += [r.part for r in results if r.part is not None]
        # the pages after the last run, in parts of the largest size (only the last
        # may be smaller than the minimum)
        number = layout.runs + 2
        for at in range(0, len(index.pages), layout.rules.max_part):
            parts.append(upload.upload_part(number, index.pages[at : at + layout.rules.max_part]))
            number += 1
        return parts
