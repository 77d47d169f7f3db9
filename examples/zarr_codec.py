"""The ``hurray`` codec in a Zarr v3 array: elements of each chunk in Hilbert order.

With ``HurrayCodec`` as an array's only codec, zarr reads a small region of a big
chunk by fetching only the byte runs that hold it; the standard ``bytes`` codec
fetches the whole chunk.  The same codec works through xarray's ``to_zarr``.

Run::

    python examples/zarr_codec.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import xarray as xr
import zarr
from zarr.codecs import BytesCodec

from xarray_hurray.testing import CountingStore
from xarray_hurray.zarr import HurrayCodec


def region_read(
    serializer: object, values: np.ndarray, region: tuple[slice, ...]
) -> tuple[int, int]:
    """Requests and bytes zarr needs to read ``region`` of an array stored in memory."""
    store = zarr.storage.MemoryStore()
    array = zarr.create_array(
        store, shape=values.shape, chunks=(256, 256), dtype=values.dtype,
        serializer=serializer, compressors=None,
    )  # fmt: skip
    array[...] = values
    counting = CountingStore(store)
    reopened = zarr.open_array(counting, mode="r")
    counting.log.clear()
    assert np.array_equal(reopened[region], values[region])
    return counting.log.requests, counting.log.bytes_read


def main() -> None:
    values = np.random.default_rng(0).standard_normal((512, 512)).astype("float32")
    region = (slice(64, 96), slice(128, 160))
    print("reading a 32 x 32 region of one 256 x 256 float32 chunk (256 KiB), no compressor:")
    for name, serializer in (("bytes", BytesCodec()), ("hurray hilbert", HurrayCodec("hilbert"))):
        requests, nbytes = region_read(serializer, values, region)
        print(f"  {name:<15} {requests} request(s), {nbytes / 1024:.0f} KiB")

    # Through xarray: the codec is the serializer of the variable's encoding.
    ds = xr.Dataset({"v": (("y", "x"), values)})
    path = Path(tempfile.mkdtemp(prefix="hurray-example-")) / "v.zarr"
    encoding = {"v": {"chunks": (128, 128), "serializer": HurrayCodec("hilbert")}}
    ds.to_zarr(path, zarr_format=3, consolidated=False, encoding=encoding)
    back = xr.open_dataset(path, engine="zarr", consolidated=False)
    xr.testing.assert_identical(back, ds)
    print(f"xarray round trip through {path}: identical")
    print(f"  codec metadata: {back['v'].encoding['serializer'].to_dict()}")


if __name__ == "__main__":
    main()
