"""Write a dask-backed dataset larger than you would load, then read it back lazily.

The field is defined chunk by chunk with ``dask.array.map_blocks``, so no step holds
the whole array: ``to_hurray`` encodes one stored chunk per dask task and appends the
chunks in Hilbert order, and the reader opens the file lazily with dask chunks.

Run::

    python examples/out_of_core_dask.py                       # 67 MB, a few seconds
    python examples/out_of_core_dask.py --steps 64 --side 4096  # 4.3 GB on disk before compression
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import dask.array as da
import numpy as np
import xarray as xr

import xarray_hurray as xh


def smooth_block(block: np.ndarray, block_info: dict | None = None) -> np.ndarray:
    """The values of one dask block of a smooth, time-varying field."""
    (t0, t1), (y0, y1), (x0, x1) = block_info[None]["array-location"]
    t, y, x = np.ogrid[t0:t1, y0:y1, x0:x1]
    return (np.sin(x / 97.0 + t / 5.0) * np.cos(y / 61.0)).astype("float32")


def lazy_dataset(steps: int, side: int, chunk: int) -> xr.Dataset:
    """A (time, y, x) float32 dataset whose chunks are computed only when written."""
    template = da.empty((steps, side, side), chunks=(1, chunk, chunk), dtype="float32")
    field = template.map_blocks(smooth_block, dtype="float32")
    return xr.Dataset({"field": (("time", "y", "x"), field)}, coords={"time": np.arange(steps)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4, help="time steps (default: 4)")
    parser.add_argument("--side", type=int, default=2048, help="grid side (default: 2048)")
    parser.add_argument("--chunk", type=int, default=256, help="chunk side (default: 256)")
    parser.add_argument("--out", type=Path, help="file to write (default: in a temp dir)")
    args = parser.parse_args()

    ds = lazy_dataset(args.steps, args.side, args.chunk)
    path = args.out or Path(tempfile.mkdtemp(prefix="hurray-example-")) / "field.hurray"
    print(f"writing {ds['field'].nbytes / 1e6:.0f} MB of dask chunks to {path}")
    xh.to_hurray(ds, path, chunk_order="hilbert", progress=False)

    opened = xr.open_dataset(path, engine="hurray", chunks={})
    print(f"opened lazily: dask chunks {opened['field'].data.chunksize}")
    expected = float(ds["field"].mean().compute())
    got = float(opened["field"].mean().compute())
    print(f"mean of the field: {got:.6f} (computed from the source: {expected:.6f})")
    corner = opened["field"].isel(time=-1, y=slice(0, 8), x=slice(0, 8)).values
    assert np.array_equal(corner, ds["field"].isel(time=-1, y=slice(0, 8), x=slice(0, 8)).values)
    assert np.isclose(got, expected, rtol=1e-5)
    print("region and mean match the source")


if __name__ == "__main__":
    main()
