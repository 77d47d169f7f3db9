"""Writing a dataset to an object store as one multipart upload whose parts the Dask
workers upload themselves.

The placement sequence of every stored chunk is cut into runs of consecutive
chunks (:func:`~xarray_hurray.io.multipart.plan_runs`); one task per run joins its
encoded chunks, uploads them as one part and returns only their sizes and CRCs.
The writing process then packs the head (:mod:`xarray_hurray.container.head`),
uploads it as part 1 and completes the upload.  See the design notes
("Writes that scale past one machine").
"""

from __future__ import annotations

import logging
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
from dask.base import compute
from dask.callbacks import Callback
from dask.delayed import Delayed, delayed

from ..container import DatasetMeta, VariableMeta
from ..container.checksum import crc32c
from ..container.elements import parse_element_type
from ..container.format import INDEX_ENTRY
from ..container.head import HeadPlan, pack_head
from ..errors import HurrayValueError
from ..io.multipart import (
    DEFAULT_PART_BYTES,
    S3_RULES,
    MultipartUpload,
    Part,
    PartRules,
    plan_runs,
    start_multipart,
)
from .encode import DaskChunks
from .engine import current_scheduler, distributed_client, waiting_for_tasks
from .plan import check_alignment
from .progress import ProgressBar

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


def upload_run(
    upload: MultipartUpload | None,
    number: int,
    pad_to: int,
    picks: np.ndarray,
    *cells: np.ndarray,
) -> RunResult:
    """Join the stored chunks of one run and upload them as part ``number``.

    Parameters
    ----------
    upload
        The upload; None returns the bytes instead (the only run of a small file).
    number
        The part number.
    pad_to
        Zeros are added up to this many bytes (the store's minimum part), so that
        a run that compressed well is still a valid part; 0 for the last run.
    picks
        One row per chunk of the run, in placement order: which of ``cells`` holds
        it and its index in that cell's list.
    cells
        Results of the encode tasks: each a one-element object block holding the
        stored bytes of the chunks of one dask chunk (``b""``: left out).
    """
    blobs = [cells[i].reshape(-1)[0][k] for i, k in picks.tolist()]
    sizes = np.array([len(b) for b in blobs], dtype=np.uint64)
    crcs = np.array([crc32c(b) if b else 0 for b in blobs], dtype=np.uint32)
    data = b"".join(blobs)
    if upload is None:
        return RunResult(None, len(data), sizes, crcs, data)
    if not data:  # every chunk left out: no part at all (part numbers may have gaps)
        return RunResult(None, 0, sizes, crcs)
    if len(data) < pad_to:
        data += bytes(pad_to - len(data))  # unreferenced bytes, legal in format 1.1
    return RunResult(upload.upload_part(number, data), len(data), sizes, crcs)


class _RunsDone(Callback):
    """Count each finished run task of a local scheduler on ``bar``."""

    def __init__(self, keys: Sequence[Any], bar: ProgressBar) -> None:
        Callback.__init__(self)
        self.keys = set(keys)
        self.bar = bar

    def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
        if key in self.keys:
            self.bar.update(1, result.length)


def _raw_bytes(var: VariableMeta) -> int:
    """Bytes of one chunk of ``var`` before compression (strings estimated)."""
    dtype = parse_element_type(var.dtype)
    itemsize = STRING_BYTES if dtype.kind == "O" else dtype.itemsize
    return int(var.layout.buffer_size(var.chunks)) * itemsize


class MultipartWrite:
    """One write of a CF-encoded dataset to an ``s3://`` URL as a multipart upload.

    Building it checks the dask chunks, builds the encode graphs and plans the runs;
    nothing is uploaded until :meth:`run`.  Variables not backed by dask are
    chunked into dask arrays of their stored chunks, so that every chunk is
    encoded by a task.

    Parameters
    ----------
    url, storage_options
        The target object and the s3fs options.
    metadata
        The dataset description.
    variables
        The CF-encoded variables, by path.
    part_bytes
        Bytes of input per run (see :func:`~xarray_hurray.io.multipart.plan_runs`):
        what a worker holds while it builds a part.
    write_empty_chunks
        Store chunks that hold only the fill value; by default they are left out.
    rules
        The store's part rules.
    exclusive
        Complete only where no object exists (``mode="w-"``, or ``"a"`` creating the
        file): one that appeared during the write is kept, and the write fails
        with :class:`FileExistsError`.
    progress
        Draw a progress bar of the parts uploaded on standard error; ``None``: when
        it is a terminal.
    """

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any],
        metadata: DatasetMeta,
        variables: Mapping[str, xr.Variable],
        *,
        part_bytes: int = DEFAULT_PART_BYTES,
        write_empty_chunks: bool = False,
        rules: PartRules = S3_RULES,
        exclusive: bool = False,
        progress: bool | None = None,
    ) -> None:
        self.url = url
        self.progress = progress
        self.storage_options = dict(storage_options)
        self.metadata = metadata
        self.rules = rules
        self.exclusive = exclusive
        self.head = HeadPlan(metadata)
        self._encoders: list[DaskChunks] = []
        raw: list[np.ndarray] = []
        for path, var in self.head.variables:
            source = variables[path]
            check_alignment(path, source, var.chunks)
            if not isinstance(source.data, da.Array):
                source = source.chunk(dict(zip(source.dims, var.chunks, strict=True)))
            self._encoders.append(DaskChunks(source.data, var, write_empty_chunks))
            raw.append(np.full(var.chunk_count, _raw_bytes(var), dtype=np.int64))
        if self.head.length > rules.max_part:
            raise HurrayValueError(
                f"the page tables of {url} would take {self.head.length} bytes, more "
                f"than one part holds ({rules.max_part}); use larger chunks or split the "
                "dataset into several files"
            )
        # parts kept besides the runs: the head, and the pages uploaded after the runs
        # (at most every page, in parts of the largest size) when they may go there
        self.page_parts = (
            -(-self.head.page_bytes // rules.max_part) if self.head.pages_may_follow else 0
        )
        # run k holds positions [cuts[k], cuts[k + 1]) of the placement of every chunk
        self.cuts = plan_runs(
            np.concatenate([np.zeros(0, np.int64), *raw]),
            part_bytes,
            rules,
            reserved=1 + self.page_parts,
        )

    @property
    def runs(self) -> int:
        """Number of runs (parts besides the head)."""
        return len(self.cuts) - 1

    def _runs(self, upload: MultipartUpload | None) -> list[Delayed]:
        """One task per run, each depending on the encode tasks of its chunks."""
        # every chunk in placement order: its encode task and index in its list
        cells: list[Delayed] = []
        local: list[np.ndarray] = []
        for (_, var), encoder in zip(self.head.variables, self._encoders, strict=True):
            block, index = encoder.blocks.locate(var.placement)
            base = len(cells)
            cells.extend(encoder.cells.to_delayed(optimize_graph=False).reshape(-1).tolist())
            local.append(np.stack([block + base, index], axis=1))
        picks = np.concatenate([np.zeros((0, 2), np.int64), *local])
        prefix = f"hurray-part-{uuid.uuid4().hex}"
        runs = []
        for k in range(self.runs):
            rows = picks[self.cuts[k] : self.cuts[k + 1]]
            used, inverse = np.unique(rows[:, 0], return_inverse=True)
            # only the part with the highest number may be small: the last run, when
            # no pages follow it
            last = k == self.runs - 1 and self.page_parts == 0
            runs.append(
                delayed(upload_run, pure=False)(
                    upload,
                    k + 2,  # part 1 is the head
                    0 if last else self.rules.min_part,
                    np.stack([inverse.reshape(-1), rows[:, 1]], axis=1),
                    *(cells[b] for b in used.tolist()),
                    dask_key_name=(prefix, k),
                )
            )
        return runs

    def run(self) -> None:
        """Upload the file: the object appears when the upload completes; on any
        failure (or interruption) the upload is aborted and the target is left as
        it was."""
        upload = start_multipart(self.url, self.storage_options)
        if upload is None:
            raise HurrayValueError(f"{self.url} has no multipart upload this writer can use")
        try:
            start = time.perf_counter()
            with waiting_for_tasks():
                # a file of one run is uploaded as one part by this process
                results = self._compute(self._runs(upload if self.runs > 1 else None))
            runs_done = time.perf_counter()
            parts = self._finish(upload, results)
            head_done = time.perf_counter()
            upload.complete(parts, exclusive=self.exclusive)
            # timings for benchmarks and for users wondering where a write's time goes
            log.info(
                "%s: %d parts; runs %.3f s, head %.3f s, completion %.3f s",
                self.url,
                len(parts),
                runs_done - start,
                head_done - runs_done,
                time.perf_counter() - head_done,
                extra={
                    "runs_s": runs_done - start,
                    "head_s": head_done - runs_done,
                    "complete_s": time.perf_counter() - head_done,
                },
            )
        except BaseException as err:
            try:
                upload.abort()
            except Exception as failed:
                err.add_note(
                    f"aborting {upload!r} failed too ({failed}); its parts stay stored "
                    "until it is aborted (xarray_hurray.io.pending_uploads lists it)"
                )
            raise

    def _compute(self, runs: list[Delayed]) -> list[RunResult]:
        """The results of the run tasks, counted on a progress bar as they come when
        one is drawn.  The graphs were optimized when the encode tasks were made."""
        show = sys.stderr.isatty() if self.progress is None else self.progress
        schedule = current_scheduler()
        if not show:
            return list(compute(*runs, optimize_graph=False, scheduler=schedule))
        bar = ProgressBar(f"uploading {self.url}", len(runs), unit="parts")
        try:
            client = distributed_client(schedule)
            if client is not None:
                # a dask.distributed client: its futures tell when each run is done
                from distributed import as_completed

                futures = client.compute(runs, optimize_graph=False)
                for future in as_completed(futures):  # type: ignore[no-untyped-call]
                    bar.update(1, future.result().length)
                return list(client.gather(futures))
            # a local scheduler calls back after each task
            with _RunsDone([run.key for run in runs], bar):
                return list(compute(*runs, optimize_graph=False, scheduler=schedule))
        finally:
            bar.close()

    def _finish(self, upload: MultipartUpload, results: Sequence[RunResult]) -> list[Part]:
        """Pack and upload the head (with the chunks of a single run) and the pages
        that follow the chunks; every part of the file, in order."""
        inline = b"".join(r.data for r in results if r.data is not None)
        head_part = self.head.length
        if self.runs > 1:
            head_part = max(head_part, self.rules.min_part)
        starts = head_part + np.cumsum([0] + [r.length for r in results], dtype=np.int64)
        entries = np.zeros(int(self.cuts[-1]), dtype=INDEX_ENTRY)
        for k, result in enumerate(results):
            rows = entries[self.cuts[k] : self.cuts[k + 1]]
            offsets = starts[k] + np.cumsum(result.sizes, dtype=np.int64) - result.sizes
            rows["offset"] = np.where(result.sizes > 0, offsets, 0)
            rows["size"] = result.sizes
            rows["crc32c"] = result.crcs
        by_path: dict[str, np.ndarray] = {}
        start = 0
        for path, var in self.head.variables:
            by_path[path] = entries[start : start + var.chunk_count]
            start += var.chunk_count
        index = pack_head(self.head, by_path, int(starts[-1]))
        head = index.head + bytes(head_part - len(index.head)) + inline
        if self.runs <= 1:
            # a single run: the whole file is one part, which may have any size
            return [upload.upload_part(1, head + index.pages)]
        parts = [upload.upload_part(1, head)]
        parts += [r.part for r in results if r.part is not None]
        # the pages after the last run, in parts of the largest size (only the last
        # may be smaller than the minimum)
        number = self.runs + 2
        for at in range(0, len(index.pages), self.rules.max_part):
            parts.append(upload.upload_part(number, index.pages[at : at + self.rules.max_part]))
            number += 1
        return parts
