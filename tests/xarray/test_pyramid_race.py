"""Two processes racing on one file with overviews, one appending to it and one
replacing it, never leave levels that disagree: every write decides whether the file
is a pyramid, and plans every level, from the version it reads under the file's
writer lock."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import verify_file

SIDE = 16


def _field(steps: int, first: int = 0) -> xr.Dataset:
    """``steps`` time steps of a small field, from step ``first``."""
    values = np.arange(first, first + steps, dtype="f4")[:, None, None] + np.zeros((SIDE, SIDE))
    return xr.Dataset(
        {"v": (("time", "y", "x"), values.astype("f4"))},
        coords={"time": np.arange(first, first + steps)},
    )


def _pyramid(path: str, steps: int) -> None:
    """A new file at ``path``: ``steps`` time steps and one coarser level."""
    xh.to_hurray(_field(steps), path, mode="w", overviews=1, overview_dims=["y", "x"])


def _race(role: str, path: str, start: float, writes: int) -> None:
    """The job of one process: from the instant ``start``, ``writes`` appends of one
    time step each, or as many replacements of the file."""
    time.sleep(max(start - time.time(), 0))
    for k in range(writes):
        if role == "append":
            # a time no replacement writes (they write 0, 1, ...): an append of a time
            # the file holds already is refused
            xh.to_hurray(_field(1, 1000 + k), path, append_dim="time")
        else:
            _pyramid(path, 2 + k)


def _level_lengths(path: str) -> list[int]:
    """The length of ``time`` in every level of the file."""
    tree = xr.open_datatree(path, engine="hurray")
    return [tree[name].sizes["time"] for name in sorted(tree.children)]


@pytest.mark.slow
def test_an_append_racing_a_replacement_never_leaves_levels_that_disagree(tmp_path):
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        warm = str(tmp_path / "warm.hurray")
        _pyramid(warm, 2)
        list(pool.map(_race, ["append", "replace"], [warm] * 2, [0, 0], [1, 1]))
        for trial in range(2):
            path = str(tmp_path / f"race{trial}.hurray")
            _pyramid(path, 2)
            start = time.time() + 0.3
            roles = ["append", "replace"]
            list(pool.map(_race, roles, [path] * 2, [start] * 2, [3] * 2))
            lengths = _level_lengths(path)
            assert len(lengths) == 2 and len(set(lengths)) == 1, (trial, lengths)
            assert verify_file(path) == []
