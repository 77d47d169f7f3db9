"""Write the files the JavaScript tests read, and what the Python reader reads from them.

Usage: ``python fixtures.py OUTDIR``.  OUTDIR gets files written by ``to_hurray`` (float32
with NaN, integers under several layouts and codecs, missing chunks, groups, a pyramid),
damaged copies of one of them, and ``manifest.json``: for every file (these and the golden
files of every version in tests/data) and variable, boxes with the values the Python reader
reads there (raw little-endian bytes in ``.bin`` files, or JSON for text), and for every
damaged copy the error the Python reader raises.  The map tests' two fields (a global one
in longitude/latitude and one in UTM zone 32N) go beside them, with every level of each
as numpy coarsens it, described by ``map.json``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from xarray_hurray import HurrayError, open_reader, to_hurray
from xarray_hurray.container.format import SLOT_HEADER_SIZE, pack_slot_header
from xarray_hurray.container.head import version_slot
from xarray_hurray.io import MergePolicy, plan_reads

REPO = Path(__file__).resolve().parents[2]


def field(ny: int, nx: int) -> np.ndarray:
    """A smooth float32 field with a few NaN."""
    y, x = np.mgrid[0:ny, 0:nx].astype(np.float32)
    values = np.sin(y / 9.0) * np.cos(x / 13.0) * 10 + y / ny
    values[::17, ::23] = np.nan
    return values.astype(np.float32)


def make_files(out: Path) -> list[str]:
    """Write the files of the run; their names."""
    y = np.arange(100, dtype=np.float64) * 0.5
    x = np.arange(120, dtype=np.float64) - 60
    ds = xr.Dataset(
        {"t": (("y", "x"), field(100, 120))}, coords={"y": y, "x": x}, attrs={"title": "nan"}
    )
    to_hurray(ds, out / "float_nan.hurray", layout="auto", encoding={"t": {"chunks": (32, 32)}})
    ints = xr.Dataset(
        {
            "i16": (
                ("y", "x"),
                (np.arange(100 * 120).reshape(100, 120) % 30000 - 15000).astype("i2"),
            ),
            "u8": (("y", "x"), (np.arange(100 * 120).reshape(100, 120) % 251).astype("u1")),
            "i64": (("n",), np.arange(-50, 50, dtype="i8") * 2**40),
            "flag": (("y", "x"), (np.arange(100 * 120).reshape(100, 120) % 3 == 0)),
        }
    )
    to_hurray(
        ints,
        out / "ints_morton_lz4.hurray",
        layout="morton",
        codecs="lz4",
        encoding={v: {"chunks": (24, 40)} for v in ("i16", "u8", "flag")},
    )
    to_hurray(ints, out / "ints_zlib.hurray", codecs="zlib", encoding={"i16": {"chunks": (16, 16)}})
    to_hurray(ints, out / "ints_raw.hurray", codecs=None, encoding={"u8": {"chunks": (7, 9)}})
    sparse = np.full((256, 256), -1.0)
    sparse[40:50, 200:230] = 3.5
    sparse[130:131, 7:9] = 2.0
    missing = xr.Dataset({"m": (("y", "x"), sparse)})
    missing["m"].encoding = {"_FillValue": -1.0, "chunks": (16, 16)}
    to_hurray(missing, out / "missing.hurray")
    tree = xr.DataTree.from_dict(
        {
            "/": xr.Dataset({"top": ("n", np.arange(5, dtype="f4"))}),
            "/a": xr.Dataset({"v": (("y", "x"), field(40, 50))}),
            "/a/b": xr.Dataset({"w": ("k", np.array([3, 1, 4, 1, 5], dtype="i4"))}),
        }
    )
    to_hurray(tree, out / "groups.hurray")
    side = 512
    pyramid = xr.Dataset(
        {"t": (("y", "x"), field(side, side))},
        coords={"y": np.linspace(50, -50, side), "x": np.linspace(-80, 80, side)},
    )
    to_hurray(pyramid, out / "pyramid.hurray", overviews=3, encoding={"t": {"chunks": (64, 64)}})
    write_quadrants(out / "quadrants.hurray")
    # coordinates placed before the field, whose pages (7,200 chunks) do not all fit
    # the head: the coordinates' pages go there, the field's after its chunks
    front = xr.Dataset(
        {"t": (("time", "y", "x"), np.stack([field(120, 120)] * 2))},
        coords={"time": np.array([0, 6], "i8"), "y": np.arange(120.0), "x": -np.arange(120.0)},
    )
    to_hurray(front, out / "front_pages.hurray", encoding={"t": {"chunks": (1, 2, 2)}})
    return [
        "float_nan",
        "ints_morton_lz4",
        "ints_zlib",
        "ints_raw",
        "missing",
        "groups",
        "pyramid",
        "quadrants",
        "front_pages",
    ]


QUADRANTS = 2048
"""Side of the viewer tests' field: four quadrants of 0, 1, 2 and 3."""


def write_quadrants(path: Path) -> None:
    """The viewer tests' pyramid: 0, 1, 2, 3 in the quadrants (top left, top right,
    bottom left, bottom right), the same at every level, chunks of 128, 3 overviews."""
    half = QUADRANTS // 2
    values = np.zeros((QUADRANTS, QUADRANTS), dtype=np.float32)
    values[:, half:] += 1
    values[half:, :] += 2
    ds = xr.Dataset(
        {"q": (("y", "x"), values)},
        coords={"y": np.arange(QUADRANTS) * 10.0, "x": np.arange(QUADRANTS) * -1.0},
    )
    to_hurray(ds, path, overviews=3, encoding={"q": {"chunks": (128, 128)}})


UTM_32N_WKT = (
    'PROJCS["WGS 84 / UTM zone 32N",GEOGCS["WGS 84",DATUM["WGS_1984",'
    'SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],'
    'AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],'
    'UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AUTHORITY["EPSG","4326"]],'
    'PROJECTION["Transverse_Mercator"],PARAMETER["latitude_of_origin",0],'
    'PARAMETER["central_meridian",9],PARAMETER["scale_factor",0.9996],'
    'PARAMETER["false_easting",500000],PARAMETER["false_northing",0],'
    'UNIT["metre",1,AUTHORITY["EPSG","9001"]],AXIS["Easting",EAST],AXIS["Northing",NORTH],'
    'AUTHORITY["EPSG","32632"]]'
)
"""EPSG:32632 as GDAL writes it (WKT 1)."""


def coarsen(values: np.ndarray, factor: int) -> np.ndarray:
    """The mean of the valid cells of each ``factor`` x ``factor`` window of the last two
    axes (NaN where none is valid), windows cut by the edges taken as they are."""
    *lead, ny, nx = values.shape
    my, mx = -(-ny // factor), -(-nx // factor)
    padded = np.full((*lead, my * factor, mx * factor), np.nan, dtype=np.float64)
    padded[..., :ny, :nx] = values
    windows = padded.reshape(*lead, my, factor, mx, factor)
    valid = ~np.isnan(windows)
    sums = np.where(valid, windows, 0).sum(axis=(-3, -1))
    counts = valid.sum(axis=(-3, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sums / counts).astype(values.dtype)


def write_map_fields(out: Path) -> dict[str, Any]:
    """The map tests' fields and what ``map.json`` says of them.

    ``map_global.hurray``: three days of a float32 field on a global 0.25 degree grid,
    latitudes from south to north and longitudes from 0 to 360 (both unlike a map's
    order), a NaN box, two overviews.  ``map_utm.hurray``: a float32 field of 1 km
    cells in UTM zone 32N (northings from north to south), its CRS in a grid mapping
    variable, one overview.  Each level's values as numpy coarsens them are in
    ``.bin`` files (little-endian float32)."""
    lat = -89.875 + 0.25 * np.arange(720)
    lon = 0.125 + 0.25 * np.arange(1440)
    lon2, lat2 = np.meshgrid(lon, lat)
    steps = np.stack([np.sin(np.radians(lon2)) * 10 + lat2 / 3 + 20 * k for k in range(3)]).astype(
        np.float32
    )
    steps[:, 400:440, 560:640] = np.nan  # 10..20 N, 140..160 E
    world = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), steps, {"units": "K", "long_name": "test field"})},
        coords={
            "time": pd.date_range("2024-01-01", periods=3),
            "lat": ("lat", lat, {"units": "degrees_north", "standard_name": "latitude"}),
            "lon": ("lon", lon, {"units": "degrees_east", "standard_name": "longitude"}),
        },
    )
    to_hurray(world, out / "map_global.hurray", overviews=2)
    x = 300_500.0 + 1000 * np.arange(500)
    y = 5_499_500.0 - 1000 * np.arange(400)
    x2, y2 = np.meshgrid(x, y)
    utm = (np.cos(x2 / 40_000) * 30 + (y2 - 5_300_000) / 10_000).astype(np.float32)
    utm[150:200, 200:260] = np.nan
    mapping = {
        "grid_mapping_name": "transverse_mercator",
        "crs_wkt": UTM_32N_WKT,
        "longitude_of_central_meridian": 9.0,
        "latitude_of_projection_origin": 0.0,
        "scale_factor_at_central_meridian": 0.9996,
        "false_easting": 500000.0,
        "false_northing": 0.0,
    }
    field = xr.Dataset(
        {
            "height": (("y", "x"), utm, {"grid_mapping": "spatial_ref", "units": "m"}),
            "spatial_ref": ((), np.int32(0), mapping),
        },
        coords={
            "y": ("y", y, {"standard_name": "projection_y_coordinate", "units": "m"}),
            "x": ("x", x, {"standard_name": "projection_x_coordinate", "units": "m"}),
        },
    )
    to_hurray(
        field, out / "map_utm.hurray", overviews=1, encoding={"height": {"chunks": (128, 128)}}
    )
    fields = {}
    for name, values, factors, extra in (
        ("global", steps, [1, 2, 4], {"west": 0.0, "south": -90.0, "cell": 0.25}),
        ("utm", utm, [1, 2], {"west": 300_000.0, "north": 5_500_000.0, "cell": 1000.0}),
    ):
        levels = []
        for factor in factors:
            level = values if factor == 1 else coarsen(values, factor)
            (out / f"map_{name}_{factor}.bin").write_bytes(level.astype("<f4").tobytes())
            levels.append(
                {"factor": factor, "bin": f"map_{name}_{factor}.bin", "shape": list(level.shape)}
            )
        fields[name] = {"file": f"map_{name}.hurray", "levels": levels, **extra}
    return fields


def write_grid_cases(out: Path) -> None:
    """Small files of the ways a grid is described, for the map layer's grid tests
    (``grid_<case>.hurray``): a GDAL GeoTransform and WKT without coordinates, CF grid
    mapping parameters alone, GeoZarr's ``proj:code``, x before y, packed integers,
    an irregular latitude, a grid mapping that names no variable."""
    values = np.arange(24, dtype=np.float32).reshape(4, 6)
    gdal = {"spatial_ref": UTM_32N_WKT, "GeoTransform": "300000 1000 0 5500000 0 -1000"}
    to_hurray(
        xr.Dataset(
            {
                "v": (("y", "x"), values, {"grid_mapping": "crs"}),
                "crs": ((), np.int32(0), gdal),
            }
        ),
        out / "grid_geotransform.hurray",
    )
    tmerc = {
        "grid_mapping_name": "transverse_mercator",
        "longitude_of_central_meridian": 9.0,
        "latitude_of_projection_origin": 0.0,
        "scale_factor_at_central_meridian": 0.9996,
        "false_easting": 500000.0,
        "false_northing": 0.0,
    }
    projected = {
        "y": ("y", 5_000_500.0 - 1000 * np.arange(4), {"standard_name": "projection_y_coordinate"}),
        "x": ("x", 400_500.0 + 1000 * np.arange(6), {"standard_name": "projection_x_coordinate"}),
    }
    to_hurray(
        xr.Dataset(
            {"v": (("y", "x"), values, {"grid_mapping": "tm"}), "tm": ((), np.int32(0), tmerc)},
            coords=projected,
        ),
        out / "grid_cf.hurray",
    )
    to_hurray(
        xr.Dataset({"v": (("y", "x"), values, {"proj:code": "EPSG:3857"})}, coords=projected),
        out / "grid_projcode.hurray",
    )
    lon = ("lon", -179.5 + np.arange(6.0), {"units": "degrees_east"})
    lat = ("lat", 89.5 - np.arange(4.0), {"units": "degrees_north"})
    to_hurray(
        xr.Dataset({"v": (("lon", "lat"), values.T.copy())}, coords={"lon": lon, "lat": lat}),
        out / "grid_xy.hurray",
    )
    packed = xr.Dataset({"v": (("lat", "lon"), values)}, coords={"lon": lon, "lat": lat})
    packed["v"][0, 0] = np.nan
    packed["v"].encoding = {
        "dtype": "int16",
        "scale_factor": 0.5,
        "add_offset": 10.0,
        "_FillValue": -1,
    }
    to_hurray(packed, out / "grid_packed.hurray")
    bent = ("lat", np.array([0.0, 1.0, 2.0, 4.0]), {"units": "degrees_north"})
    to_hurray(
        xr.Dataset({"v": (("lat", "lon"), values)}, coords={"lon": lon, "lat": bent}),
        out / "grid_irregular.hurray",
    )
    to_hurray(
        xr.Dataset(
            {"v": (("lat", "lon"), values, {"grid_mapping": "nothing"})},
            coords={"lon": lon, "lat": lat},
        ),
        out / "grid_nomapping.hurray",
    )


def boxes(shape: tuple[int, ...], rng: np.random.Generator) -> list[list[list[int]] | None]:
    """The whole variable and a few boxes of it (some empty, some at the edges)."""
    out: list[list[list[int]] | None] = [None]
    for _ in range(3):
        box = []
        for n in shape:
            a, b = sorted(rng.integers(0, n + 1, size=2).tolist()) if n else (0, 0)
            box.append([int(a), int(b)])
        out.append(box)
    if shape and all(shape):
        out.append([[n - 1, n] for n in shape])  # the last element
    return out


def expected(values: np.ndarray, stem: str, out: Path) -> dict[str, Any]:
    """How the manifest records the values the Python reader read."""
    if values.dtype.kind in "OU":
        return {"text": [str(v) for v in values.ravel().tolist()]}
    if values.dtype.kind == "S":
        return {"bytes": [v.hex() for v in values.ravel().tolist()]}
    if values.dtype == np.float16:
        values = values.astype(np.float32)  # as the JavaScript reader returns them
    (out / f"{stem}.bin").write_bytes(
        np.ascontiguousarray(values).astype(values.dtype.newbyteorder("<")).tobytes()
    )
    return {"raw": f"{stem}.bin"}


def damage(source: Path, out: Path) -> list[dict[str, Any]]:
    """Damaged copies of ``source``, each with the error the Python reader raises."""
    reader = open_reader(source)
    slot = reader.header
    data = source.read_bytes()
    path = reader.metadata.all_variables()[0][0]
    chunk = reader.entries(path, np.array([0]))[0]
    pages = reader.index_parts(path)
    cases: dict[str, tuple[list[str], bytes]] = {
        "magic": (["not a Hurray file"], b"\x00" + data[1:]),
        "version": (["unsupported format version 1.7"], data[:10] + b"\x07\x00" + data[12:]),
        "slot": (["damaged header"], data[:30] + bytes([data[30] ^ 1]) + data[31:]),
        "metadata": (["checksum mismatch", "metadata"], flip(data, slot.metadata_offset + 5)),
        "root": (["checksum mismatch", "index root"], flip(data, slot.root_offset)),
        "page table": (["checksum mismatch", "page table"], flip(data, pages[0][0] + 1)),
        "page": (["checksum mismatch", "index page 0"], flip(data, pages[1][0] + 2)),
        "chunk": (["checksum mismatch", "chunk 0"], flip(data, int(chunk["offset"]) + 3)),
    }
    for cut in (0, 5, 12, 100, 143, len(data) // 2, len(data) - 1):
        cases[f"cut at {cut}"] = (["truncated"], data[:cut])
    cases.update(hostile())
    records = []
    for name, (phrase, bad) in cases.items():
        target = out / f"damaged-{name.replace(' ', '-')}.hurray"
        target.write_bytes(bad)
        try:
            damaged = open_reader(target)
            for variable, _ in damaged.metadata.all_variables():
                damaged.read(variable)
        except HurrayError as err:
            message = str(err)
        else:
            raise AssertionError(f"the Python reader read the damaged file {name!r}")
        assert all(p in message for p in phrase), (name, message)
        records.append({"name": name, "file": target.name, "python": message, "phrases": phrase})
    return records


def hostile() -> dict[str, tuple[list[str], bytes]]:
    """Files whose checksums hold but whose metadata declares what no reader should
    build: the reader must refuse them before allocating."""
    deep = {"attrs": {"a": json.loads("[" * 40 + "]" * 40)}, "variables": [], "groups": []}
    wide = {"attrs": {"a": [[] for _ in range(2**17 + 1)]}, "variables": [], "groups": []}
    big = {
        "attrs": {},
        "groups": [],
        "variables": [
            {
                "name": "v",
                "dims": ["y", "x"],
                "shape": [2**20, 2**20],
                "dtype": "float64",
                "chunks": [2**15, 2**15],
                "layout": {"name": "row-major"},
                "codecs": [{"id": "zstd"}],
                "chunk_order": {"curve": "hilbert", "axes": [0, 1]},
                "attrs": {},
                "fill_value": "00" * 8,
            }
        ],
    }
    return {
        "nested": (["nested deeper than 32"], head_only(deep)),
        "containers": (["131072"], head_only(wide)),
        "huge chunks": (["2147483648"], head_only(big, root=bytes(12))),
    }


def head_only(metadata: dict[str, Any], root: bytes = b"") -> bytes:
    """A 1.2 file of ``metadata`` and ``root``, and nothing else."""
    meta = json.dumps(metadata, separators=(",", ":")).encode()
    end = SLOT_HEADER_SIZE + len(meta) + len(root) + 1
    root_at = SLOT_HEADER_SIZE + len(meta)
    slot = version_slot(1, (SLOT_HEADER_SIZE, meta), (root_at, root), end, (1, 2))
    return pack_slot_header(slot) + meta + root + b"\x00"


def plans(rng: np.random.Generator) -> list[dict[str, Any]]:
    """Random byte ranges and the requests the Python reader merges them into."""
    out = []
    for k in range(40):
        n = int(rng.integers(1, 80))
        starts = np.sort(rng.integers(0, 10**7, size=n))
        stops = starts + rng.integers(0, 3 * 10**5, size=n)
        policy = MergePolicy(
            max_gap=50_000,
            max_request=[10**6, 64 * 10**6][k % 2],
            in_flight=32,
            crowded_gap=112_500,
        )
        order = rng.permutation(n)
        plan = plan_reads(starts[order], stops[order], policy)
        out.append(
            {
                "starts": starts[order].tolist(),
                "stops": stops[order].tolist(),
                "policy": {
                    "maxGap": policy.max_gap,
                    "maxRequest": policy.max_request,
                    "inFlight": 32,
                    "crowdedGap": 112_500,
                },
                "requests": plan.requests.tolist(),
                "requestOf": plan.request_of.tolist(),
            }
        )
    return out


def flip(data: bytes, at: int) -> bytes:
    """``data`` with one bit of byte ``at`` flipped."""
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    names = [f"{stem}.hurray" for stem in make_files(out)]
    for golden in sorted((REPO / "tests" / "data").glob("*.hurray")):
        shutil.copy(golden, out / golden.name)
        names.append(golden.name)
    rng = np.random.default_rng(38)
    cases = []
    for name in names:
        reader = open_reader(out / name)
        for variable, var in reader.metadata.all_variables():
            for k, box in enumerate(boxes(var.shape, rng)):
                key = None if box is None else tuple(slice(a, b) for a, b in box)
                try:
                    values = reader.read(variable, key)
                except HurrayError:
                    continue  # read by neither reader: asserted in the JavaScript tests too
                stem = f"{name}-{variable.replace('/', '.')}-{k}"
                cases.append(
                    {
                        "file": name,
                        "variable": variable,
                        "box": box,
                        "dtype": var.dtype,
                        "shape": list(values.shape),
                        **expected(values, stem, out),
                    }
                )
    (out / "map.json").write_text(json.dumps(write_map_fields(out), indent=1))
    write_grid_cases(out)
    manifest = {
        "files": names,
        "cases": cases,
        "damaged": damage(out / "float_nan.hurray", out),
        "plans": plans(rng),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
