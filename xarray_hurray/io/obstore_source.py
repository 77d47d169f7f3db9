"""A byte source over an obstore store (the optional ``obstore`` extra)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .costs import OBJECT_STORE
from .plan import MergePolicy
from .source import ByteSource


class ObstoreSource(ByteSource):
    """One object of an obstore store (``obstore.store.S3Store``, ``GCSStore``, ...).

    The ranges of one read are fetched concurrently by ``obstore.get_ranges``, which
    is told not to merge them further: the reader's merge policy has already decided.
    Pickles as the store and the path, for stores that pickle (obstore's remote and
    local stores do; its ``MemoryStore`` does not).

    Parameters
    ----------
    store
        The obstore store holding the object.
    path
        The object's path inside ``store``.
    """

    def __init__(self, store: Any, path: str) -> None:
        import obstore  # noqa: F401  (fail here, clearly, when the extra is missing)

        self.store = store
        self.path = path

    @property
    def name(self) -> str:
        return f"{self.path} in {self.store!r}"

    def read(self, start: int, stop: int) -> bytes:
        import obstore

        if stop <= start:
            return b""
        try:
            return bytes(obstore.get_range(self.store, self.path, start=start, end=stop))
        except obstore.exceptions.BaseError:
            # obstore refuses ranges that start past the end; the contract is "fewer bytes".
            if start >= obstore.head(self.store, self.path)["size"]:
                return b""
            raise

    def read_ranges(self, ranges: np.ndarray) -> list[bytes]:
        import obstore

        if len(ranges) == 0:
            return []
        blobs = obstore.get_ranges(
            self.store,
            self.path,
            starts=[int(s) for s in ranges[:, 0]],
            ends=[int(s) for s in ranges[:, 1]],
            coalesce=0,
        )
        return [bytes(b) for b in blobs]

    def default_policy(self) -> MergePolicy:
        return OBJECT_STORE.merge_policy()

    def upload(self, local_path: str | os.PathLike[str]) -> None:
        """Put the finished file ``local_path`` at this object in one atomic put.

        obstore switches to a multipart upload for large files; either way the object
        appears only when the upload completes.
        """
        import obstore

        with open(local_path, "rb") as f:
            obstore.put(self.store, self.path, f)
