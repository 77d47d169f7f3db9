"""A sink of a remote target that builds the file locally and uploads it whole."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ...container.sink import ChunkSink
from ...io import UploadTarget


class StagedUpload(ChunkSink):
    """A sink that builds the file in a local temporary directory and uploads it
    whole at the commit: object stores have no rename, and one upload (a single put,
    or a multipart upload the store completes) is their atomic replace.

    Parameters
    ----------
    target
        Where the finished file goes.
    name
        The local file's name.
    open_local
        Opens the sink that builds the file at a local path.
    """

    def __init__(
        self, target: UploadTarget, name: str, open_local: Callable[[Path], ChunkSink]
    ) -> None:
        self.target = target
        self._work = Path(tempfile.mkdtemp(prefix="hurray-upload-"))
        self.path = self._work / name
        try:
            self._local = open_local(self.path)
        except BaseException:
            shutil.rmtree(self._work, ignore_errors=True)
            raise

    def write_chunks(
        self,
        name: str,
        chunk_ids: np.ndarray,
        data: Sequence[bytes | None],
        crcs: Sequence[int] | None = None,
    ) -> None:
        self._local.write_chunks(name, chunk_ids, data, crcs)

    def commit(self) -> None:
        """Finish the local file and upload it; the temporary directory goes either way."""
        try:
            self._local.commit()
            self.target.upload(self.path)
        finally:
            shutil.rmtree(self._work, ignore_errors=True)

    def abort(self) -> None:
        """Drop the local file; nothing was uploaded."""
        try:
            self._local.abort()
        finally:
            shutil.rmtree(self._work, ignore_errors=True)
