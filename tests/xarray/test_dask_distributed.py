"""Writes and reads on a dask.distributed LocalCluster of two worker processes give
the single-process results."""

from __future__ import annotations

from collections.abc import Iterator

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client(cluster: distributed.LocalCluster) -> Iterator[distributed.Client]:
    """A client of the session's two single-threaded worker processes."""
    with distributed.Client(cluster) as c:
        yield c


def dataset() -> xr.Dataset:
    field = da.random.default_rng(11).standard_normal((96, 80, 3), chunks=(32, 16, 3))
    return xr.Dataset(
        {"v": (("y", "x", "band"), field.astype("f4")), "band": ("band", ["r", "g", "b"])},
        coords={"x": np.arange(80.0)},
        attrs={"source": "cluster test"},
    )


@pytest.fixture(scope="module")
def single_process(tmp_path_factory) -> bytes:
    """The file written without a cluster."""
    path = tmp_path_factory.mktemp("single") / "s.hurray"
    with dask.config.set(scheduler="threads"):
        xh.to_hurray(dataset(), path, encoding={"v": {"chunks": (16, 16, 3)}})
    return path.read_bytes()


def test_write_on_the_cluster_is_the_single_process_file(client, tmp_path, single_process):
    path = tmp_path / "c.hurray"
    xh.to_hurray(dataset(), path, encoding={"v": {"chunks": (16, 16, 3)}})
    assert path.read_bytes() == single_process


def test_delayed_write_computed_on_the_cluster(client, tmp_path, single_process):
    path = tmp_path / "d.hurray"
    pending = xh.to_hurray(dataset(), path, encoding={"v": {"chunks": (16, 16, 3)}}, compute=False)
    assert not path.exists()
    client.compute(pending).result()
    assert path.read_bytes() == single_process


def test_read_on_the_cluster_is_the_single_process_read(client, tmp_path, single_process):
    path = tmp_path / "r.hurray"
    path.write_bytes(single_process)
    ds = xr.open_dataset(path, engine="hurray", chunks={"y": 32, "x": 32})
    on_cluster = ds.compute()
    with dask.config.set(scheduler="sync"):
        local = xr.open_dataset(path, engine="hurray", chunks={"y": 32, "x": 32}).compute()
    xr.testing.assert_identical(on_cluster, local)
    xr.testing.assert_identical(on_cluster, dataset().compute())


def test_a_failing_task_on_the_cluster_leaves_no_file(client, tmp_path):
    def explode(block, block_info=None):
        if block_info[0]["chunk-location"] == (3,):
            raise RuntimeError("worker lost its input")
        return block

    failing = da.arange(80, chunks=8).map_blocks(explode, dtype=np.int64)
    with pytest.raises(RuntimeError, match="worker lost its input"):
        xh.to_hurray(xr.Dataset({"v": (("x",), failing)}), tmp_path / "f.hurray")
    assert list(tmp_path.iterdir()) == []


def test_appends_and_region_writes_on_the_cluster(client, tmp_path):
    path = tmp_path / "a.hurray"
    whole = dataset()
    encoding = {"v": {"chunks": (16, 16, 3)}}
    xh.to_hurray(whole.isel(y=slice(0, 48)), path, encoding=encoding)
    xh.to_hurray(whole.isel(y=slice(48, 80)), path, append_dim="y")
    pending = xh.to_hurray(whole.isel(y=slice(80, 96)), path, append_dim="y", compute=False)
    client.compute(pending).result()
    fix = (whole.isel(y=slice(32, 64)) * 0 - 5).drop_vars(["x", "band"])
    fix["v"].attrs = whole["v"].attrs
    xh.to_hurray(fix, path, region={"y": slice(32, 64)})
    expected = whole.copy()
    expected["v"] = whole["v"].copy()
    expected["v"][32:64] = -5
    with xr.open_dataset(path, engine="hurray") as out:
        xr.testing.assert_identical(out.load(), expected.compute())
