"""Instrumentation for tests, benchmarks and the demo: sources and stores that count
the requests they serve."""

from .sources import CountingSource
from .stores import CountingStore, ForwardingStore

__all__ = ["CountingSource", "CountingStore", "ForwardingStore"]
