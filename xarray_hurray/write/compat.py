"""The private parts of dask the write pipeline relies on, in one place.

Each is imported here and nowhere else, with the reason no public interface serves
and the versions it is known on, so that a change upstream breaks this module (with
a message naming the versions), not a write halfway through.
"""

from __future__ import annotations

import importlib.metadata

try:
    # DataNode: a value put in a graph in place of the task that computed it, never
    # mistaken for a task whatever it holds.  A batch of a write keeps the results
    # later batches use again (a reduction) and hands them to the next graphs this
    # way (write/encode.py, Reuse).  dask's public ways to reuse a result are
    # persist() and futures: persist computes the collection whole, which a write
    # in bounded memory must not, and futures exist on a distributed cluster only,
    # while the write runs on any scheduler.  A raw value in a graph is taken for a
    # task when it is a tuple starting with a callable.  The threaded scheduler runs
    # DataNode from dask 2024.11 (pyproject.toml's floor).
    from dask._task_spec import DataNode
except ImportError as err:
    raise ImportError(
        "xarray-hurray needs dask >= 2024.11.2 (dask._task_spec.DataNode); dask "
        f"{importlib.metadata.version('dask')} is installed"
    ) from err

__all__ = ["DataNode"]
