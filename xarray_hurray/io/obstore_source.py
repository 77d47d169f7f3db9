"""A byte source over an obstore store (the optional ``obstore`` extra)."""

from __future__ import annotations

import asyncio
import os
from typing import Any, cast

import numpy as np

from ..errors import SourceReadError
from .costs import OBJECT_STORE
from .plan import MergePolicy
from .pool import SharedThreadPool
from .remote import ObjectVersion, changed
from .source import PooledSource

_POOL_SIZE = 16
"""Ranges of one read fetched at the same time."""


class ObstoreSource(PooledSource):
    """One object of an obstore store (``obstore.store.S3Store``, ``GCSStore``, ...).

    The first read pins the object's version (ETag, version id, else Last-Modified);
    every later read, also after pickling, is a conditional request for it
    (``if_match``, or the pinned ``version``) whose answer is checked as well, so a
    replaced object raises :class:`~xarray_hurray.io.HurrayChangedError`.  The ranges of
    one read are fetched concurrently, one request each: the reader's merge policy has
    already decided what to merge.  Timeouts and retries are the store's own: give
    them when creating it (``client_options={"timeout": "30s"}``,
    ``retry_config={"max_retries": 4, ...}``).  A request that still fails raises
    :class:`~xarray_hurray.io.SourceReadError` naming the store's last error, and an
    answer of another length than asked for raises it at once; no byte of a failed
    answer is used.  Pickles as the store, the path and the
    pinned version, for stores that pickle (obstore's remote and local stores do; its
    ``MemoryStore`` does not).

    Parameters
    ----------
    store
        The obstore store holding the object.
    path
        The object's path inside ``store``.
    version
        The version to pin from the start.
    """

    _threads = SharedThreadPool(_POOL_SIZE, "hurray-obstore")
    """The threads that wait on obstore's blocking calls (which release the GIL)."""

    def __init__(self, store: Any, path: str, *, version: ObjectVersion | None = None) -> None:
        import obstore  # noqa: F401  (fail here, clearly, when the extra is missing)

        super().__init__(version)
        self.store = store
        self.path = path

    @property
    def name(self) -> str:
        return f"{self.path} in {self.store!r}"

    def _options(self, start: int, stop: int) -> dict[str, Any] | None:
        """The ``get`` options asking for bytes ``[start, stop)`` of the pinned version;
        None when the answer is known to be empty."""
        pin = self._version
        if stop <= start or (pin is not None and pin.size is not None and start >= pin.size):
            return None
        # obstore types this as its GetOptions TypedDict; a plain dict is what it takes
        options: dict[str, Any] = {"range": (start, stop)}
        if pin is not None and pin.version_id:
            options["version"] = pin.version_id
        elif pin is not None and pin.etag:
            options["if_match"] = pin.etag
        return options

    def _refused(self, err: Exception) -> None:
        """Raise what a failed ``get`` means; return for obstore's refusal of a range
        (which may start past the end, an empty answer by this source's contract)."""
        import obstore

        if isinstance(err, obstore.exceptions.PreconditionError):
            raise changed(self.name, f"the store answered: {err}") from None
        if isinstance(err, FileNotFoundError):
            if self._version is not None:
                raise changed(self.name, "the object is gone") from None
            raise err
        if not isinstance(err, obstore.exceptions.BaseError):
            raise err

    def _past_end(self, start: int) -> bool:
        """Whether ``start`` lies at or past the end of the object (False when the
        store cannot say either)."""
        import obstore

        try:
            return start >= obstore.head(self.store, self.path)["size"]
        except obstore.exceptions.BaseError:
            return False

    def _failed(self, err: Exception, start: int, stop: int) -> SourceReadError:
        """The error for a request the store gave up on (its retries spent)."""
        last = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return SourceReadError(
            f"{self.name}: bytes [{start}, {stop}) could not be read (after the store's "
            f"retries): {last}"
        )

    def _accepted(self, meta: Any, data: bytes, start: int, stop: int) -> bytes:
        """``data``, once the version that answered is the pinned one (pinning it at the
        first read) and its length is what the request asked for."""
        modified = meta.get("last_modified")
        found = ObjectVersion(
            etag=meta.get("e_tag"),
            version_id=meta.get("version"),
            last_modified=None if modified is None else modified.isoformat(),
            size=meta.get("size"),
        )
        self._check_version(found)
        expected = min(stop, found.size if found.size is not None else stop) - start
        if len(data) != expected:
            raise SourceReadError(
                f"{self.name}: bytes [{start}, {stop}) answered with {len(data)} of "
                f"{expected} bytes"
            )
        return data

    def _fetch(self, start: int, stop: int) -> bytes:
        import obstore

        options = self._options(start, stop)
        if options is None:
            return b""
        try:
            result = obstore.get(self.store, self.path, options=cast(Any, options))
            data = bytes(result.bytes())
        except Exception as err:  # mapped, or raised again, by _refused
            self._refused(err)
            if self._past_end(start):
                return b""
            raise self._failed(err, start, stop) from err
        return self._accepted(result.meta, data, start, stop)

    async def _fetch_async(self, start: int, stop: int) -> bytes:
        """:meth:`_fetch` through obstore's asynchronous API."""
        import obstore

        options = self._options(start, stop)
        if options is None:
            return b""
        try:
            result = await obstore.get_async(self.store, self.path, options=cast(Any, options))
            data = bytes(await result.bytes_async())
        except Exception as err:  # mapped, or raised again, by _refused
            self._refused(err)
            if await asyncio.to_thread(self._past_end, start):
                return b""
            raise self._failed(err, start, stop) from err
        return self._accepted(result.meta, data, start, stop)

    async def read_ranges_async(self, ranges: np.ndarray) -> list[bytes]:
        """:meth:`read_ranges` through obstore's asynchronous API, at most as many
        ranges in flight as :meth:`read_ranges` has threads."""
        slots = asyncio.Semaphore(_POOL_SIZE)

        async def one(start: int, stop: int) -> bytes:
            async with slots:
                return await self._fetch_async(start, stop)

        return list(await asyncio.gather(*(one(int(a), int(b)) for a, b in ranges)))

    def default_policy(self) -> MergePolicy:
        return OBJECT_STORE.merge_policy()

    def upload(self, local_path: str | os.PathLike[str]) -> None:
        """Put the finished file ``local_path`` at this object in one atomic put.

        obstore switches to a multipart upload for large files; either way the object
        appears only when the upload completes.  The next read pins the new object.
        """
        import obstore

        with open(local_path, "rb") as f:
            obstore.put(self.store, self.path, f)
        self._unpin()

    def __getstate__(self) -> dict[str, Any]:
        return {"store": self.store, "path": self.path, "version": self._version}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["store"], state["path"], version=state["version"])
