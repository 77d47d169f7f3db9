"""Instrumentation for tests and benchmarks, in one namespace: sources and stores that
count the requests they serve (:mod:`xarray_hurray.io.counting`,
:mod:`xarray_hurray.zarr.counting`, where the ``hurray demo`` command takes them too)."""

from ..io.counting import CountingSource
from ..zarr.counting import CountingStore, ForwardingStore

__all__ = ["CountingSource", "CountingStore", "ForwardingStore"]
