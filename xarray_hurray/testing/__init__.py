"""Instrumentation for tests and benchmarks, in one namespace: sources and stores that
count the requests they serve (:mod:`xarray_hurray.io.counting_source`,
:mod:`xarray_hurray.zarr.counting_store`, where the ``hurray demo`` command takes them too)."""

from ..io.counting_source import CountingSource
from ..zarr.counting_store import CountingStore, ForwardingStore

__all__ = ["CountingSource", "CountingStore", "ForwardingStore"]
