"""Writing into an existing file: one day appended to a year, and a week overwritten.

Run ``python benchmarks/append.py`` (``--quick`` for a small run); it prints Markdown.

Each write starts from a fresh copy of the same year-long dataset (copying is not
timed) and is measured as the best of several runs: wall time, and bytes written as
the process's ``wchar`` count (every byte handed to ``write``-like system calls,
Linux), which counts Zarr's many objects and Hurray's one file alike.  Peers in the
same run: rewriting the whole Hurray file with the new day, and ``to_zarr`` with
``mode="a", append_dim=`` or ``region=`` on a Zarr v3 store with the same chunks and
codec.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr
from zarr.codecs import ZstdCodec

import xarray_hurray as xh

CHUNK = 64


def year(days: int, lat: int, lon: int) -> xr.Dataset:
    """A smooth daily field with noise, days 0 to ``days``."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:lat, 0:lon]
    base = np.sin(x / 17.0) * np.cos(y / 11.0)
    values = base[None] + 0.05 * rng.standard_normal((days, lat, lon))
    return xr.Dataset(
        {"t2m": (("time", "lat", "lon"), values.astype("float32"), {"units": "K"})},
        coords={"time": pd.date_range("2023-01-01", periods=days)},
    )


def written_bytes() -> int:
    """Bytes this process has handed to write system calls so far (Linux)."""
    with open("/proc/self/io") as io:
        for line in io:
            if line.startswith("wchar:"):
                return int(line.split()[1])
    raise RuntimeError("no wchar in /proc/self/io")


def measure(
    prepare: Callable[[], None], write: Callable[[], None], repeats: int
) -> tuple[float, int]:
    """Best wall time and bytes written of ``write``, each run after ``prepare``."""
    best, wrote = float("inf"), 0
    for _ in range(repeats):
        prepare()
        before, start = written_bytes(), time.perf_counter()
        write()
        elapsed = time.perf_counter() - start
        wrote = written_bytes() - before
        best = min(best, elapsed)
    return best, wrote


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="60 days of 128 x 128")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    days, lat, lon = (60, 128, 128) if args.quick else (365, 256, 256)
    full = year(days + 1, lat, lon)
    ds, day = full.isel(time=slice(0, days)), full.isel(time=slice(days, days + 1))
    week = full.isel(time=slice(70, 77) if days > 77 else slice(14, 21)).drop_vars("time")
    week = week.assign(t2m=week["t2m"] + 1)
    region = {"time": slice(70, 77) if days > 77 else slice(14, 21)}
    encoding = {"t2m": {"chunks": (1, CHUNK, CHUNK), "chunk_axes": ["lat", "lon"]}}
    zarr_encoding = {"t2m": {"chunks": (1, CHUNK, CHUNK), "compressors": [ZstdCodec(level=0)]}}

    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        base_h, base_z = work / "base.hurray", work / "base.zarr"
        xh.to_hurray(ds, base_h, encoding=encoding)
        ds.to_zarr(base_z, mode="w", encoding=zarr_encoding, zarr_format=3, consolidated=False)
        target_h, target_z = work / "t.hurray", work / "t.zarr"

        def fresh_hurray() -> None:
            shutil.copyfile(base_h, target_h)

        def fresh_zarr() -> None:
            shutil.rmtree(target_z, ignore_errors=True)
            shutil.copytree(base_z, target_z)

        def zarr(**kwargs: object) -> Callable[[], None]:
            data = day if "append_dim" in kwargs else week
            return lambda: data.to_zarr(target_z, zarr_format=3, consolidated=False, **kwargs)

        cases = [
            (
                "append one day",
                "Hurray `mode='a'`",
                fresh_hurray,
                lambda: xh.to_hurray(day, target_h, append_dim="time"),
            ),
            (
                "append one day",
                "Hurray, rewrite the file",
                fresh_hurray,
                lambda: xh.to_hurray(full, target_h, encoding=encoding),
            ),
            ("append one day", "Zarr `mode='a'`", fresh_zarr, zarr(mode="a", append_dim="time")),
            (
                "overwrite a week",
                "Hurray `region=`",
                fresh_hurray,
                lambda: xh.to_hurray(week, target_h, region=region),
            ),
            ("overwrite a week", "Zarr `region=`", fresh_zarr, zarr(mode="r+", region=region)),
        ]
        size = base_h.stat().st_size
        print(
            f"{days} days of {lat} x {lon} float32 ({ds['t2m'].nbytes / 1e6:.1f} MB raw, "
            f"Hurray file {size / 1e6:.1f} MB), chunks (1, {CHUNK}, {CHUNK}), zstd; "
            f"best of {args.repeats}\n"
        )
        print("| Write | How | Time | Bytes written | vs Hurray |")
        print("|---|---|---:|---:|---:|")
        first: dict[str, tuple[float, int]] = {}
        for what, how, prepare, write in cases:
            seconds, wrote = measure(prepare, write, args.repeats)
            ours = first.setdefault(what, (seconds, wrote))
            ratio = f"{seconds / ours[0]:.1f}x time, {wrote / ours[1]:.1f}x bytes"
            print(f"| {what} | {how} | {seconds * 1e3:.0f} ms | {wrote / 1e3:,.0f} kB | {ratio} |")


if __name__ == "__main__":
    main()
