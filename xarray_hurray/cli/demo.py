"""``hurray demo``: the main job on a built-in dataset.

A synthetic daily surface temperature field is written as Hurray files with the
Hilbert, Morton and row-major chunk orders and as a Zarr v3 store with the same chunks
and codecs; a few regions are read from each while every request is counted.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ..container import ContainerReader
from ..container.select import OuterSelection
from ..io import LocalFileSource, MergePolicy
from ..io.counting_source import CountingSource
from ..layout import LAYOUT_NAMES
from ..xarray.hurray_write import to_hurray

VARIABLE = "temperature"
CHUNKS = {"time": 1, "lat": 64, "lon": 64}


def temperature_dataset(days: int = 8, lat: int = 512, lon: int = 1024) -> xr.Dataset:
    """A smooth global daily temperature field (kelvin) with CF attributes.

    Warm tropics, cold poles, travelling weather waves and a little noise: it
    compresses like real data, neither trivially nor not at all.
    """
    lats = np.linspace(-89.75, 89.75, lat)
    lons = np.linspace(0.0, 360.0, lon, endpoint=False)
    times = pd.date_range("2024-01-01", periods=days, freq="D")
    phi = np.deg2rad(lats)[None, :, None]
    lam = np.deg2rad(lons)[None, None, :]
    t = np.arange(days)[:, None, None]
    rng = np.random.default_rng(7)
    field = (
        300.0
        - 50.0 * np.sin(phi) ** 2
        + 6.0 * np.cos(3 * lam - 0.4 * t) * np.cos(phi)
        + 3.0 * np.sin(5 * lam + 2 * phi + 0.7 * t)
        + 0.2 * rng.standard_normal((days, lat, lon))
    )
    temperature = xr.DataArray(
        field.astype("float32"),
        dims=("time", "lat", "lon"),
        attrs={
            "standard_name": "air_temperature",
            "long_name": "near-surface air temperature (synthetic)",
            "units": "K",
        },
    )
    return xr.Dataset(
        {VARIABLE: temperature},
        coords={
            "time": times,
            "lat": ("lat", lats, {"standard_name": "latitude", "units": "degrees_north"}),
            "lon": ("lon", lons, {"standard_name": "longitude", "units": "degrees_east"}),
        },
        attrs={"title": "xarray-hurray demo: synthetic daily temperature", "Conventions": "CF-1.8"},
    )


REGIONS: dict[str, dict[str, int | slice]] = {
    "a city, one day": {"time": 2, "lat": slice(300, 340), "lon": slice(500, 560)},
    "a country, one day": {"time": 2, "lat": slice(256, 512), "lon": slice(512, 768)},
    "a country, all days": {"lat": slice(256, 512), "lon": slice(512, 768)},
    "a continent, one day": {"time": 2, "lat": slice(100, 420), "lon": slice(150, 540)},
    "a latitude band, one day": {"time": 2, "lat": slice(192, 224)},
}
"""The regions read, as dimension-name keys."""


@dataclass(frozen=True)
class Count:
    """Requests and bytes one region read needed."""

    requests: int
    bytes_read: int


def write_files(ds: xr.Dataset, out: Path) -> dict[str, Path]:
    """Write ``ds`` as one Hurray file per chunk order and as Zarr v3; their paths."""
    from zarr.codecs import ZstdCodec

    paths = {}
    chunks = tuple(CHUNKS[str(d)] for d in ds[VARIABLE].dims)
    for order in LAYOUT_NAMES[::-1]:
        paths[order] = out / f"temperature-{order}.hurray"
        to_hurray(
            ds,
            paths[order],
            encoding={VARIABLE: {"chunks": chunks, "chunk_axes": ("lat", "lon")}},
            chunk_order=order,
            codecs="zstd",
        )
    paths["zarr v3"] = out / "temperature.zarr"
    ds.to_zarr(
        paths["zarr v3"],
        mode="w",
        zarr_format=3,
        consolidated=False,
        encoding={VARIABLE: {"chunks": chunks, "compressors": [ZstdCodec(level=0)]}},
    )
    return paths


def _key(ds: xr.Dataset, region: dict[str, int | slice]) -> tuple[int | slice, ...]:
    return tuple(region.get(str(d), slice(None)) for d in ds[VARIABLE].dims)


def _check_same(got: np.ndarray, truth: np.ndarray, where: str) -> None:
    """The demo counts requests of correct reads only: a read that returns other data
    than was written is a bug, and stops it."""
    if got.shape != truth.shape or not np.array_equal(got, truth, equal_nan=True):
        raise RuntimeError(f"{where}: the read returned other data than was written")


def count_hurray(
    path: Path, keys: list[tuple[int | slice, ...]], truth: np.ndarray, policy: MergePolicy
) -> list[Count]:
    """Requests and bytes of each region read from a Hurray file, after opening it."""
    source = CountingSource(LocalFileSource(path))
    reader = ContainerReader(source, policy)
    reader.index(VARIABLE)
    counts = []
    for key in keys:
        source.requests.clear()
        _check_same(reader.read(VARIABLE, key), truth[key], f"the Hurray file at {key}")
        counts.append(Count(len(source.requests), source.bytes_read))
    return counts


def count_zarr(path: Path, keys: list[tuple[int | slice, ...]], truth: np.ndarray) -> list[Count]:
    """Requests and bytes of each region read by zarr-python, after opening the array."""
    import zarr

    from ..zarr.counting_store import CountingStore

    store = CountingStore(zarr.storage.LocalStore(path, read_only=True))
    array = zarr.open_array(store, path=VARIABLE, mode="r")
    counts = []
    for key in keys:
        store.log.clear()
        _check_same(np.asarray(array[key]), truth[key], f"the Zarr store at {key}")
        counts.append(Count(store.log.requests, store.log.bytes_read))
    return counts


POLICIES = {
    "Hurray reader merging gaps up to 64 KiB (its default)": MergePolicy(),
    "no merging: one request per contiguous run of chunks": MergePolicy(max_gap=0),
}
"""The merge policies the Hurray files are read under; zarr-python does its own reads."""

Table = dict[str, dict[str, Count]]
"""``table[region][layout]``: what reading the region took."""


def run_demo(out: Path) -> tuple[dict[str, Path], dict[str, Table]]:
    """Write the demo files into ``out`` and count each region read.

    Returns
    -------
    paths
        The file written for each layout.
    tables
        One :data:`Table` for each of :data:`POLICIES`.
    """
    ds = temperature_dataset()
    paths = write_files(ds, out)
    truth = ds[VARIABLE].values
    keys = [_key(ds, region) for region in REGIONS.values()]
    zarr_counts = count_zarr(paths["zarr v3"], keys, truth)
    tables = {}
    for label, policy in POLICIES.items():
        per_layout = {
            name: zarr_counts if name == "zarr v3" else count_hurray(path, keys, truth, policy)
            for name, path in paths.items()
        }
        tables[label] = {
            region: {name: per_layout[name][i] for name in paths}
            for i, region in enumerate(REGIONS)
        }
    return paths, tables


def format_regions(ds: xr.Dataset) -> str:
    """Each region read: its elements along each dimension, raw size and the chunks it
    touches, so that "a city" has numbers."""
    var = ds[VARIABLE]
    chunks = tuple(CHUNKS[str(d)] for d in var.dims)
    lines = [f"{'region read':<26}{'elements (' + ' x '.join(map(str, var.dims)) + ')':>28}"]
    lines[0] += f"{'raw size':>12}{'chunks':>8}"
    for name, region in REGIONS.items():
        key = _key(ds, region)
        selection = OuterSelection.build(key, var.shape, chunks)
        sizes = " x ".join(map(str, selection.out_shape))
        nbytes = np.prod(selection.out_shape) * var.dtype.itemsize
        touched = len(selection.chunk_ids())
        lines.append(f"{name:<26}{sizes:>28}{nbytes / 1e3:>9.0f} kB{touched:>8}")
    return "\n".join(lines)


def format_table(table: Table) -> str:
    """Requests and kB per region read, one column per layout."""
    layouts = list(next(iter(table.values())))
    width = 19
    lines = [f"{'region read':<26}" + "".join(f"{name:>{width}}" for name in layouts)]
    for region, row in table.items():
        cells = (f"{c.requests} req {c.bytes_read / 1e3:>6.0f} kB" for c in row.values())
        lines.append(f"{region:<26}" + "".join(f"{cell:>{width}}" for cell in cells))
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Give the parser of ``hurray demo`` its description and arguments."""
    parser.description = (
        "Write a synthetic daily temperature field (8 x 512 x 1024 float32, "
        "chunks 1 x 64 x 64, zstd) as Hurray files in Hilbert, Morton and row-major chunk "
        "order and as Zarr v3, read a few regions from each and print the requests and "
        "bytes each read took."
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="directory to write the files into and leave them in (default: a temporary "
        "directory, removed at the end)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo and print its table; with ``--out``, the paths of the files it left
    there, else its temporary files are removed."""
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        report(args.out, kept=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="hurray-demo-") as work:
        report(Path(work), kept=False)
    return 0


def report(out: Path, kept: bool) -> None:
    """Run the demo in ``out`` and print its table, and where ``kept``, the files."""
    paths, tables = run_demo(out)
    ds_shape = "8 x 512 x 1024 float32 (time, lat, lon), chunks 1 x 64 x 64, zstd"
    print(f"Synthetic daily temperature, {ds_shape}.")
    print(f"\n{format_regions(temperature_dataset())}\n")
    print("Requests and bytes per region read, after opening; the same regions in each layout.")
    for label, table in tables.items():
        print(f"\n{label}:")
        print(format_table(table))
    if not kept:
        print("\nThe files were removed; hurray demo --out DIR writes them into DIR, to keep.")
        return
    print("\nFiles:")
    for name, path in paths.items():
        print(f"  {name:<10} {path}")
    hilbert = paths["hilbert"]
    print("\nNext:")
    print(f"  hurray info {hilbert}")
    print(f'  hurray plan {hilbert} --var {VARIABLE} --region "time=2,lat=256:448,lon=384:640"')
    print(
        f"  python -c \"import xarray as xr; print(xr.open_dataset('{hilbert}', engine='hurray'))\""
    )
