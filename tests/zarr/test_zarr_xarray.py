"""xarray's to_zarr / open_zarr with the hurray serializer, numpy- and dask-backed."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import xarray as xr
import zarr

from xarray_hurray.zarr import HurrayCodec


def dataset(values) -> xr.Dataset:
    return xr.Dataset(
        {"v": (("y", "x"), values)},
        coords={"y": np.arange(values.shape[0]), "x": np.arange(values.shape[1])},
    )


def encoding(kind: str) -> dict:
    return {"v": {"serializer": HurrayCodec(kind), "compressors": zarr.codecs.ZstdCodec()}}


def test_numpy_backed_round_trip() -> None:
    expected = np.random.default_rng(1).random((50, 40)).astype("float32")
    store = zarr.storage.MemoryStore()
    dataset(expected).to_zarr(store, zarr_format=3, encoding=encoding("morton"), consolidated=False)
    back = xr.open_zarr(store, consolidated=False)
    assert back.v.encoding["serializer"] == HurrayCodec("morton")
    np.testing.assert_array_equal(back.v.values, expected)
    np.testing.assert_array_equal(back.v[7:33, 2:9].values, expected[7:33, 2:9])


def test_dask_backed_writes_one_task_per_chunk() -> None:
    values = da.random.default_rng(2).random((64, 48), chunks=(16, 16)).astype("float64")
    store = zarr.storage.MemoryStore()
    delayed = dataset(values).to_zarr(
        store, zarr_format=3, encoding=encoding("hilbert"), compute=False, consolidated=False
    )
    store_tasks: dict[str, set] = {}
    for key in dict(delayed.__dask_graph__()):
        if isinstance(key, tuple) and key[0].startswith("store-map"):
            store_tasks.setdefault(key[0], set()).add(key[1:])
    assert store_tasks
    for chunk_indices in store_tasks.values():
        assert chunk_indices == set(np.ndindex(values.numblocks))
    with dask.config.set(scheduler="threads", num_workers=2):
        delayed.compute()
    back = xr.open_zarr(store, consolidated=False)
    assert back.v.chunks == ((16,) * 4, (16,) * 3)
    np.testing.assert_array_equal(back.v.values, values.compute())
