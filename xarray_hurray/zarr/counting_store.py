"""A store wrapper that records every read request: how many, and how many bytes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zarr.abc.store import Store
from zarr.storage import WrapperStore

if TYPE_CHECKING:
    from zarr.abc.store import ByteRequest
    from zarr.core.buffer import Buffer, BufferPrototype


@dataclass
class ReadLog:
    """The reads a :class:`CountingStore` served: one ``(key, bytes)`` entry each."""

    reads: list[tuple[str, int]] = field(default_factory=list)

    @property
    def requests(self) -> int:
        """Number of read requests."""
        return len(self.reads)

    @property
    def bytes_read(self) -> int:
        """Bytes returned by all read requests."""
        return sum(n for _, n in self.reads)

    def clear(self) -> None:
        """Forget the reads so far."""
        self.reads.clear()


class ForwardingStore(WrapperStore[Store]):
    """A ``WrapperStore`` that also hands on :meth:`with_read_only`, which opening a
    wrapped store with ``mode="r"`` needs: zarr-python does it itself only from 3.1.6.
    Subclasses rebuild themselves around another store in ``_with_store``."""

    def with_read_only(self, read_only: bool = False) -> Any:
        """This wrapper around the wrapped store, read-only or not."""
        return self._with_store(self._store.with_read_only(read_only))


class CountingStore(ForwardingStore):
    """Serve reads from another store and log each one in :attr:`log`.

    Every read goes through :meth:`get`, so one logged entry is one request a
    remote store would see: ranged reads that zarr coalesces count once, and
    whole-object reads count with the object's size.
    """

    def __init__(self, store: Store, log: ReadLog | None = None) -> None:
        super().__init__(store)
        self.log = ReadLog() if log is None else log

    def _with_store(self, store: Store) -> CountingStore:
        return type(self)(store, self.log)

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        """Read from the wrapped store and log the request."""
        value = await self._store.get(key, prototype, byte_range)
        self.log.reads.append((key, 0 if value is None else len(value)))
        return value

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
        """Read several ranges, each through :meth:`get`."""
        return [await self.get(key, prototype, byte_range) for key, byte_range in key_ranges]

    if hasattr(Store, "get_ranges"):

        def get_ranges(
            self, key: str, byte_ranges: Sequence[ByteRequest | None], **kwargs: Any
        ) -> AsyncIterator[Any]:
            """Coalesce ranges as zarr's own stores do, fetching through :meth:`get`."""
            # Store is Any here: the method exists only in the zarr versions that take this branch
            store: Any = Store
            ranges: AsyncIterator[Any] = store.get_ranges(self, key, byte_ranges, **kwargs)
            return ranges

    if hasattr(WrapperStore, "get_sync"):

        def get_sync(
            self,
            key: str,
            *,
            prototype: BufferPrototype | None = None,
            byte_range: ByteRequest | None = None,
        ) -> Buffer | None:
            """Read synchronously (zarr's fused codec pipeline) and log the request."""
            wrapper: Any = super()  # get_sync exists only in the zarr versions taking this branch
            value: Buffer | None = wrapper.get_sync(key, prototype=prototype, byte_range=byte_range)
            self.log.reads.append((key, 0 if value is None else len(value)))
            return value

    else:

        @property
        def _supports_sync_io(self) -> bool:
            # No logged synchronous read here: keep zarr on the logged async path.
            return False
