"""Stores and references for readers without this package, with the values they must
read: a ``to_zarr`` store with its defaults and ``hurray refs`` references to a Hurray
file written with its defaults.

With ``HURRAY_INTEROP_DIR`` set, they are written there for CI's other readers
(``tests/interop/read_plain.py`` in an environment of zarr, xarray and fsspec alone;
``tests/js`` with zarrita in Node.js).  Here they are checked too: only standard codecs
in their metadata, and zarr's own codecs read the expected values back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import fsspec
import numpy as np
import pytest
import xarray as xr
import zarr
from interop_cases import MANIFEST, load_manifest, load_values, same_bits, save_values
from reference_readers import reads_local_references

import xarray_hurray as xh
from xarray_hurray.container import ContainerReader
from xarray_hurray.io import LocalFileSource
from xarray_hurray.zarr.references import UnreferenceableWarning, kerchunk_references

STANDARD_CODECS = {"sharding_indexed", "bytes", "zstd", "crc32c"}
"""The codecs any Zarr v3 reader has, which the stores' metadata may name."""

REGIONS = {
    "field": ((1, 2), (10, 50), (5, 70)),
    "count": ((3, 90), (40, 41)),
    "flag": ((0, 33), (20, 80)),
}
"""The region each reader without CF decoding compares (crossing chunk and shard edges)."""


def dataset() -> xr.Dataset:
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:96, 0:80] / 80
    field = np.stack([np.sin(4 * x + t) * np.cos(3 * y) for t in range(2)]).astype("f4")
    field[0, 0:16, 0:16] = np.nan  # a whole chunk of the fill value: missing in the file
    field[1, 17, 5:9] = np.nan
    count = rng.integers(-5, 500, (96, 80)).astype("i2")
    count[20:30, 30:50] = -9  # the _FillValue: masked by xarray, raw for zarrita
    return xr.Dataset(
        {
            "field": (("time", "y", "x"), field, {"units": "K"}),
            "count": (("y", "x"), count),
            "flag": (("y", "x"), rng.random((96, 80)) > 0.3),
            "label": ("x", np.array([f"x{i}" for i in range(80)])),
        },
        coords={
            "time": np.array(["2001-01-01", "2001-01-02"], dtype="datetime64[ns]"),
            "y": np.linspace(-10.0, 10.0, 96),
            "x": np.arange(80.0),
        },
        attrs={"title": "read without xarray-hurray"},
    )


ENCODING = {"count": {"_FillValue": -9}}


def write_cases(directory: Path) -> list[dict[str, object]]:
    """Write the store, the file and its references into ``directory``; return the
    cases of the manifest."""
    ds = dataset()
    zarr_encoding = {
        "field": {"chunks": (1, 16, 16), "shards": (1, 64, 64)},
        "count": {"chunks": (16, 16), "shards": (64, 64), **ENCODING["count"]},
    }
    xh.to_zarr(
        ds.drop_vars("label"),
        directory / "default.zarr",
        mode="w",
        encoding=zarr_encoding,
    )
    path = directory / "default.hurray"
    file_encoding = {
        "field": {"chunks": (1, 16, 16)},
        "count": {"chunks": (16, 16), **ENCODING["count"]},
    }
    xh.to_hurray(ds, path, encoding=file_encoding)
    with pytest.warns(UnreferenceableWarning, match="'label'"):
        refs = kerchunk_references(ContainerReader(LocalFileSource(path)), path.resolve().as_uri())
    (directory / "default.refs.json").write_text(json.dumps(refs))
    # the values as xarray decodes them: what the file holds, read by its own reader
    with xr.open_dataset(path, engine="hurray") as source:
        decoded = source.drop_vars("label").load()
    cases: list[dict[str, object]] = []
    for kind, store in (("zarr", "default.zarr"), ("refs", "default.refs.json")):
        for name, var in decoded.variables.items():
            case: dict[str, object] = {"kind": kind, "path": store, "variable": str(name)}
            case["shape"] = list(var.shape)
            case["decoded"], case["decoded_dtype"] = save_values(
                directory, f"{kind}-{name}.decoded", var.values
            )
            if name in REGIONS:
                box = tuple(slice(a, b) for a, b in REGIONS[str(name)])
                # stored values equal the dataset's: float32 (NaN), int16, bool
                raw = ds[name].values[box]
                case["region"] = [list(r) for r in REGIONS[str(name)]]
                case["raw"], case["raw_dtype"] = save_values(directory, f"{kind}-{name}.raw", raw)
            cases.append(case)
    (directory / MANIFEST).write_text(json.dumps({"cases": cases}, indent=1))
    return cases


@reads_local_references
def test_stores_and_references_for_readers_without_this_package(tmp_path) -> None:
    directory = Path(os.environ.get("HURRAY_INTEROP_DIR") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    write_cases(directory)
    # every array of the store names standard codecs only
    for meta in (directory / "default.zarr").rglob("zarr.json"):
        node = json.loads(meta.read_text())
        if node["node_type"] == "array":
            names = set()
            for codec in node["codecs"]:
                names.add(codec["name"])
                inner = codec.get("configuration", {})
                names |= {
                    c["name"] for c in inner.get("codecs", []) + inner.get("index_codecs", [])
                }
            assert names <= STANDARD_CODECS, (meta, names)
    refs = json.loads((directory / "default.refs.json").read_text())["refs"]
    for key, value in refs.items():
        if key.endswith("/zarr.json"):
            assert {c["name"] for c in json.loads(value)["codecs"]} <= STANDARD_CODECS, key
    # zarr's own codecs give the raw values of each region
    for case in load_manifest(directory):
        if "region" not in case:
            continue
        if case["kind"] == "zarr":
            array = zarr.open_array(directory / case["path"], path=case["variable"], mode="r")
        else:
            fs = fsspec.filesystem("reference", fo={"version": 1, "refs": refs}, asynchronous=True)
            store = zarr.storage.FsspecStore(fs, read_only=True, path="")
            array = zarr.open_array(store, path=case["variable"], mode="r")
        box = tuple(slice(a, b) for a, b in case["region"])
        shape = [b - a for a, b in case["region"]]
        expected = load_values(directory, case["raw"], case["raw_dtype"], shape)
        assert same_bits(array[box], expected), case


GEOZARR = "geozarr.zarr"
"""The to_zarr pyramid that map clients render (tests/js/geozarr_ol.test.mjs)."""


def geozarr_field() -> xr.Dataset:
    """A global EPSG:4326 field of 0.25° cells whose values run from 0 to 1, linear in
    latitude and longitude (so that every coarser level's means are the values at its
    cells' centres), with a NaN box."""
    from geo_fields import box, global_field

    ds = global_field(0.25)
    lat, lon = ds.lat.values, ds.lon.values
    values = (np.add.outer((lat + 90) / 360, (lon + 180) / 720)).astype("f4")
    values[box(lat, lon)] = np.nan
    return ds.assign(t=(("lat", "lon"), values, ds.t.attrs))


def test_a_geozarr_pyramid_for_map_clients(tmp_path) -> None:
    """The pyramid as ``to_zarr(..., overviews=2)`` writes it, and the values of its
    coarsest level, which a map of 1° pixels shows cell for cell."""
    directory = Path(os.environ.get("HURRAY_INTEROP_DIR") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    xh.to_zarr(geozarr_field(), directory / GEOZARR, mode="w", overviews=2)
    root = zarr.open_group(directory / GEOZARR, mode="r")
    assert root.attrs["proj:code"] == "EPSG:4326"
    layout = root.attrs["multiscales"]["layout"]
    assert layout[2]["spatial:transform"] == [1.0, 0.0, -180.0, 0.0, -1.0, 90.0]
    coarsest = root["2/t"][:]
    name, dtype = save_values(directory, "geozarr-level-2", coarsest)
    expected = {"path": GEOZARR, "level": name, "dtype": dtype, "shape": list(coarsest.shape)}
    (directory / "geozarr.json").write_text(json.dumps(expected))
