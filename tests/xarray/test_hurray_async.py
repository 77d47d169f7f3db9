"""load_async with engine="hurray": the same values as load, fetched concurrently."""

from __future__ import annotations

import asyncio
import sys

import numpy as np
import pytest
import xarray as xr
from scripts import ROOT

import xarray_hurray as xh

sys.path.insert(0, str(ROOT / "benchmarks"))
from latency_server import LatencyServer

pytestmark = pytest.mark.skipif(
    not hasattr(xr.Dataset, "load_async"), reason="xarray without load_async"
)

VARIABLES = 8


def dataset() -> xr.Dataset:
    rng = np.random.default_rng(0)
    return xr.Dataset(
        {f"v{i}": (("y", "x"), rng.random((48, 40)).astype("float32")) for i in range(VARIABLES)},
        coords={"y": np.arange(48), "x": np.arange(40)},
    )


def test_local_load_async_matches_load(tmp_path) -> None:
    ds = dataset()
    path = tmp_path / "data.hurray"
    xh.to_hurray(ds, path, encoding={name: {"chunks": (16, 16)} for name in ds.data_vars})

    async def load() -> tuple[xr.Dataset, xr.DataArray, xr.Dataset]:
        with xr.open_dataset(path, engine="hurray") as opened:
            whole = await opened.load_async()
            one = await opened.v3[5:37:3, [1, 7, 30]].load_async()
            region = await opened.isel(y=slice(10, 20), x=7).load_async()
        return whole, one, region

    whole, one, region = asyncio.run(load())
    xr.testing.assert_identical(whole, ds)
    xr.testing.assert_identical(one, ds.v3[5:37:3, [1, 7, 30]])
    xr.testing.assert_identical(region, ds.isel(y=slice(10, 20), x=7))


def test_variables_load_concurrently_over_http(tmp_path) -> None:
    ds = dataset()
    xh.to_hurray(ds, tmp_path / "data.hurray")
    latency = 0.5
    with LatencyServer(tmp_path, latency=latency) as server:
        opened = xr.open_dataset(server.url("data.hurray"), engine="hurray")
        server.reset()
        loaded = asyncio.run(opened.load_async())
        arrivals = sorted(server.arrivals)
        opened.close()
    xr.testing.assert_identical(loaded, ds)
    # One chunk request per variable (the index came with the head), all sent at
    # once: a sequential load would space them a latency apart.
    assert len(arrivals) == VARIABLES
    assert arrivals[-1] - arrivals[0] < latency
