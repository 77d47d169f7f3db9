"""Write the files the JavaScript tests read, and what the Python reader reads from them.

Usage: ``python fixtures.py OUTDIR``.  OUTDIR gets files written by ``to_hurray`` (float32
with NaN, integers under several layouts and codecs, missing chunks, groups, a pyramid,
text of 200,000 code points, a chunk of 4096 x 4096 in Hilbert order), damaged copies of
two of them, files this reader must refuse as unsupported (a generation past 2**53) or
as too large for JavaScript objects, and ``manifest.json``: for every file (these and the
golden files in tests/data) and variable, boxes with the values the
Python reader reads there (raw little-endian bytes in ``.bin`` files, or JSON for text),
for every damaged copy the error the Python reader raises, Hilbert and Morton keys of
points of up to 32 axes, and codec frames (Blosc headers, LZ4 blocks, zlib streams, zstd
windows, changed or not) with what the Python reader decodes them to.  In ``mutants/``,
mutants of the structure fuzzer's seeds with the Python reader's outcome of each
(tests/differential.py), which the JavaScript reader must share.  The map tests' two
fields (a global one in longitude/latitude and one in UTM zone 32N) go beside them, with
every level of each as numpy coarsens it, described by ``map.json``.
"""

from __future__ import annotations

import json
import random
import shutil
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pandas as pd
import xarray as xr

from xarray_hurray import HurrayError, open_reader, to_hurray
from xarray_hurray.container.bounded import decode_bounded
from xarray_hurray.container.checksum import Places, crc32c
from xarray_hurray.container.format import (
    HEADER_SIZE,
    PREFIX,
    SLOT,
    SLOT_SIZE,
    pack_header,
)
from xarray_hurray.container.head import version_slot
from xarray_hurray.io import MergePolicy, plan_reads
from xarray_hurray.layout.hilbert import hilbert_encode
from xarray_hurray.layout.morton import morton_encode

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from differential import corpus, python_outcome  # noqa: E402  (the tests' shared module)
from fuzz_structure import build, parse, swap_chunks  # noqa: E402


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
    wide = np.array(["\u00e9" + "x" * (WIDE - 2) + "\U0001f600"], dtype=f"U{WIDE}")
    to_hurray(xr.Dataset({"w": ("n", wide)}), out / "text_wide.hurray")
    (out / "text_wide_fill.hurray").write_bytes(missing_only(wide_fill_variable()))
    # text whose first character is a byte-order mark, which UTF-8 decoding keeps
    marked = np.array(["\ufeffmarked", "b\ufeff", ""], dtype=object)
    to_hurray(xr.Dataset({"s": ("n", marked)}), out / "text_bom.hurray")
    write_hilbert_chunk(out / HILBERT_CHUNK)
    for name, sign in VERSIONS.items():
        # two versions of one file, of the same size (no codec): their chunks past
        # the first read
        ds = xr.Dataset({"t": (("y", "x"), sign * field(200, 200))})
        to_hurray(ds, out / name, codecs=None, encoding={"t": {"chunks": (50, 50)}})
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
        "text_wide",
        "text_wide_fill",
        "text_bom",
        "version_a",
        "version_b",
    ]


VERSIONS = {"version_a.hurray": 1.0, "version_b.hurray": -1.0}
"""Two versions of a file of the same size: the second's values the first's negated."""


WIDE = 200_000
"""Code points of the wide text elements: more than a call's arguments may be."""

HILBERT_CHUNK = "hilbert_chunk.hurray"
"""A 4096 x 4096 uint8 field stored as one chunk in Hilbert order (not compared
element by element: the tests time a tile of it, and read it against its formula)."""


def write_hilbert_chunk(path: Path) -> None:
    """:data:`HILBERT_CHUNK`: values ``(y + 3 x) % 251``."""
    y, x = np.mgrid[0:4096, 0:4096]
    values = ((y + 3 * x) % 251).astype("u1")
    ds = xr.Dataset({"v": (("y", "x"), values)})
    to_hurray(ds, path, layout="hilbert", encoding={"v": {"chunks": (4096, 4096)}})


def wide_fill_variable() -> dict[str, Any]:
    """A variable of two U200000 elements whose chunks are all missing: each reads as
    the fill value, text of 200,000 code points."""
    fill = ("f" * (WIDE - 1) + "\u00e9").encode("utf-32-le")
    return variable("t", [2], [1], f"U{WIDE}", fill.hex())


def variable(
    name: str, shape: list[int], chunks: list[int], dtype: str, fill: str
) -> dict[str, Any]:
    """The metadata of a variable of row-major chunks, no codec."""
    return {
        "name": name,
        "dims": [f"d{k}" for k in range(len(shape))],
        "shape": shape,
        "dtype": dtype,
        "chunks": chunks,
        "layout": {"name": "row-major"},
        "codecs": [],
        "chunk_order": {"curve": "row-major", "axes": list(range(len(shape)))},
        "attrs": {},
        "fill_value": fill,
    }


def missing_only(var: dict[str, Any]) -> bytes:
    """A file of one variable ``var`` whose chunks are all missing: a page table of
    absent pages, and nothing else."""
    chunks = int(np.prod([-(-n // c) for n, c in zip(var["shape"], var["chunks"], strict=True)]))
    table = bytes(16 * -(-chunks // 1024))
    meta = json.dumps({"attrs": {}, "groups": [], "variables": [var]}, separators=(",", ":"))
    table_at = HEADER_SIZE + len(meta) + 12
    crc = crc32c(table) ^ Places(var["name"], ()).table
    return head_only(json.loads(meta), root=struct.pack("<QI", table_at, crc), tail=table)


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
        "draft": (["format version 1.2 is a draft"], data[:10] + b"\x02\x00" + data[12:]),
        "moved chunks": (["checksum mismatch", "chunk", "another part's"], moved(data, 0)),
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


def moved(data: bytes, variable: int) -> bytes:
    """``data`` with the first two stored chunks of variable number ``variable``
    exchanged, each with the checksum of the place it came from (a resealed file
    whose two index entries are exchanged)."""
    tree = parse(data)
    first, second = [k for k, chunk in enumerate(tree.chunks[variable]) if chunk][:2]
    swap_chunks(tree, (variable, first), (variable, second))
    return build(tree)


def damaged_page(source: Path, out: Path) -> dict[str, Any]:
    """``source`` with a bit flipped in the last index page of its variable ``t`` (a
    page read after others), and the error the Python reader raises."""
    reader = open_reader(source)
    page = len(reader.index_parts("t")) - 2  # the parts are the page table, then the pages
    offset, _ = reader.index_parts("t")[-1]
    target = out / "damaged-last-page.hurray"
    target.write_bytes(flip(source.read_bytes(), offset + 2))
    try:
        open_reader(target).read("t")
    except HurrayError as err:
        message = str(err)
    else:
        raise AssertionError("the Python reader read a damaged page")
    phrases = ["checksum mismatch", f"index page {page}"]
    assert all(p in message for p in phrases), message
    return {"name": "last page", "file": target.name, "python": message, "phrases": phrases}


def past_2_53(out: Path) -> dict[str, Any]:
    """A file appended to once whose newer header slot records generation 2**53 + 1
    (resealed): valid, and past the numbers the JavaScript reader counts exactly,
    which must refuse it as unsupported rather than open the older version."""
    path = out / "generation-past-2-53.hurray"
    ds = xr.Dataset({"v": ("n", np.arange(3, dtype="i4"))})
    to_hurray(ds, path, encoding={"v": {"chunks": (3,)}})
    to_hurray(ds.assign(v=ds.v + 3), path, mode="a", append_dim="n")
    data = bytearray(path.read_bytes())
    at = max(
        (PREFIX.size + k * SLOT_SIZE for k in (0, 1)),
        key=lambda a: SLOT.unpack_from(data, a)[0],
    )
    struct.pack_into("<Q", data, at, 2**53 + 1)
    struct.pack_into(
        "<I", data, at + SLOT.size, crc32c(bytes(data[: PREFIX.size] + data[at : at + SLOT.size]))
    )
    path.write_bytes(data)
    values = open_reader(path).read("v")
    assert values.tolist() == list(range(6)), values
    return {"file": path.name, "python": values.tolist()}


def too_many_objects(out: Path) -> list[str]:
    """Files whose variables read whole would make more JavaScript objects than a
    heap holds: 2**28 elements of S1 (a file of a few hundred bytes)."""
    path = out / "s1-2-28.hurray"
    path.write_bytes(missing_only(variable("s", [2**28], [2**28], "S1", "61")))
    return [path.name]


def curve_keys(rng: np.random.Generator) -> list[dict[str, Any]]:
    """Points and their Hilbert and Morton keys (decimal text: up to 64 bits), from
    1 to 32 axes, 32 axes of one bit each among them."""
    out = []
    for rank, order in [(32, 1), (32, 1), (31, 2), (16, 4), (3, 20), (2, 30), (5, 6)]:
        for _ in range(4):
            point = rng.integers(0, 2**order, size=rank)
            out.append(
                {
                    "point": point.tolist(),
                    "order": order,
                    "hilbert": str(int(hilbert_encode(point[None], order)[0])),
                    "morton": str(int(morton_encode(point[None], [order] * rank)[0])),
                }
            )
    point = np.zeros(32, dtype=int)
    point[0] = 1  # the point whose digit needs bit 31
    out.append(
        {
            "point": point.tolist(),
            "order": 1,
            "hilbert": str(int(hilbert_encode(point[None], 1)[0])),
            "morton": str(2**31),
        }
    )
    return out


def places() -> list[dict[str, Any]]:
    """Places of chunks, pages and page tables and the CRC-32C of their keys, as the
    Python reader computes them: paths in groups and of non-ASCII text, values up to
    2**53 - 1, 32 axes."""
    out = []
    cases = [
        ("t2m", (9, 5), [7, 2]),
        ("a/b/t\u00e9mp\U0001f600", (2**20, 1, 9), [2**20 - 1, 0, 8]),
        ("s", (), []),
        ("w", (2**53 - 1,), [2**53 - 2]),
        ("many", (2,) * 32, [1, 0] * 16),
    ]
    for path, grid, coords in cases:
        own = Places(path, grid)
        number = int(np.ravel_multi_index(coords, grid)) if grid and len(grid) < 32 else None
        chunk = own.chunk(number) if number is not None else crc32c_key(path, coords)
        out.append({"kind": "C", "path": path, "values": coords, "crc": chunk})
        out.append({"kind": "P", "path": path, "values": [2**40 + 3], "crc": own.page(2**40 + 3)})
        out.append({"kind": "T", "path": path, "values": [], "crc": own.table})
    return out


def crc32c_key(path: str, values: list[int]) -> int:
    """The CRC-32C of the key of the chunk at ``values`` of ``path``, as the spec spells
    it out (for a grid whose chunk numbers exceed what numpy's ravel takes)."""
    name = path.encode()
    return crc32c(b"C" + struct.pack(f"<I{len(name)}s{len(values)}Q", len(name), name, *values))


def codec_frames(rng: random.Random, count: int) -> list[dict[str, Any]]:
    """Codec frames, changed or not, each with the SHA-256 of what the Python reader
    decodes it to (its ``decode_bounded``, cap 64 KiB), or None where it refuses it:
    Blosc frames of every compressor, shuffle and type size with a byte of their
    header changed; LZ4 blocks cut, extended, or declaring another size; zlib streams
    followed by bytes or by a second stream; zstd frames of every window size (raw
    blocks, each within the frame's block maximum)."""
    import hashlib

    cap = 2**16
    out = []
    for k in range(count):
        n = rng.choice([1, 7, 100, 1000, 4096])
        raw = rng.choice([bytes(rng.randrange(256) for _ in range(n)), (b"abcdabce" * n)[:n]])
        which = ["blosc", "blosc", "lz4", "zlib", "zstd"][k % 5]
        if which == "blosc":
            codec = numcodecs.Blosc(
                cname=rng.choice(["lz4", "zstd", "zlib", "blosclz"]),
                clevel=rng.choice([0, 1, 5, 9]),
                shuffle=rng.choice([0, 1, 2]),
                blocksize=rng.choice([0, 256, 1000]),
                typesize=rng.choice([None, 1, 2, 3, 8, 16, 24]),
            )
            data = bytearray(codec.encode(raw))
            at = rng.randrange(16)
            if at < 12:  # the frame's own length is checked first: change the others
                data[at] = rng.choice([0, 1, 2, 3, 255, data[at] ^ (1 << rng.randrange(8))])
        elif which == "lz4":
            codec = numcodecs.LZ4()
            data = bytearray(codec.encode(raw))
            change = rng.randrange(4)
            if change == 0:
                data = data[: rng.randrange(4, len(data) + 1)]
            elif change == 1:
                data += bytes([rng.randrange(256)])
            elif change == 2:
                struct.pack_into("<I", data, 0, rng.choice([0, n - 1, n + 1, 2**31]))
        elif which == "zlib":
            codec = numcodecs.Zlib(level=rng.choice([1, 9]))
            data = bytearray(codec.encode(raw))
            change = rng.randrange(3)
            if change == 0:
                data += bytes(rng.randrange(256) for _ in range(rng.choice([1, 4])))
            elif change == 1:
                data += zlib.compress(b"a second stream")
        else:
            codec = numcodecs.Zstd()
            log = rng.choice([10, 17, 27, 31, 32, 33, 41])
            data = bytearray(
                b"\x28\xb5\x2f\xfd\x80" + bytes([(log - 10) << 3]) + struct.pack("<I", n)
            )
            block = min(2**log, 2**17)  # raw blocks of at most the block maximum
            for at in range(0, n, block):
                last = int(at + block >= n)
                data += (
                    struct.pack("<I", (len(raw[at : at + block]) << 3) | last)[:3]
                    + raw[at : at + block]
                )
        try:
            decoded = bytes(decode_bounded([codec], bytes(data), cap))
            digest: str | None = hashlib.sha256(decoded).hexdigest()
        except (ValueError, RuntimeError):
            digest = None
        out.append({"codec": which, "frame": bytes(data).hex(), "python": digest})
    # a block of 1000 bytes of a 3-byte type, split into 3 streams of 333: refused
    # (c-blosc leaves its last byte undefined); of 999 bytes, read
    streams = b"".join(struct.pack("<I", 333) + bytes([k]) * 333 for k in range(3))
    body = struct.pack("<i", 20) + streams
    for nbytes, digest in [(1000, None), (999, hashlib.sha256(bytes([0, 1, 2]) * 333).hexdigest())]:
        frame = bytes([2, 1, 0x21, 3]) + struct.pack("<III", nbytes, nbytes, 16 + len(body)) + body
        out.append({"codec": "blosc", "frame": frame.hex(), "python": digest})
    return out


def mutants(out: Path, per_seed: int, rng_seed: int) -> list[dict[str, Any]]:
    """Mutants of the structure fuzzer's seeds in ``out`` and the Python reader's
    outcome of each."""
    out.mkdir(exist_ok=True)
    records = []
    for m in corpus(per_seed, rng_seed):
        (out / f"{m.name}.hurray").write_bytes(m.blob)
        records.append(
            {"file": f"{m.name}.hurray", "kind": m.kind, "python": python_outcome(m.blob)}
        )
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
    null_groups = {"attrs": {}, "variables": [], "groups": [_group("g") | {"groups": None}]}
    null_fill = variable("v", [2], [1], "int8", "00") | {"fill_value": None}
    huge_type = {"attrs": {"a": {"dtype": 2**70, "shape": [], "data": [1]}}, "variables": []}
    bad_codecs = [{"id": "zstd", "acceleration": 1}, {"id": "blosc", "typesize": 0}]
    return {
        **{
            f"codec {codec}": (
                [f"invalid {codec['id']} codec configuration"],
                missing_only(variable("v", [2], [1], "int8", "00") | {"codecs": [codec]}),
            )
            for codec in bad_codecs
        },
        "huge type": (
            ["unknown element type", str(2**70)],
            head_only(huge_type | {"groups": []}),
        ),
        "null groups": (["groups must be a list"], head_only(null_groups)),
        "null fill": (["fill_value must be lowercase hexadecimal bytes"], missing_only(null_fill)),
        "nested": (["nested deeper than 32"], head_only(deep)),
        "containers": (["131072"], head_only(wide)),
        "huge chunks": (["2147483648"], head_only(big, root=bytes(12))),
    }


def _group(name: str) -> dict[str, Any]:
    """The metadata of an empty group."""
    return {"name": name, "attrs": {}, "variables": [], "groups": []}


def head_only(metadata: dict[str, Any], root: bytes = b"", tail: bytes = b"\x00") -> bytes:
    """A file of ``metadata``, ``root`` and ``tail``, and nothing else."""
    meta = json.dumps(metadata, separators=(",", ":")).encode()
    end = HEADER_SIZE + len(meta) + len(root) + len(tail)
    root_at = HEADER_SIZE + len(meta)
    slot = version_slot(1, (HEADER_SIZE, meta), (root_at, root), end)
    return pack_header(slot) + meta + root + tail


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
        "damaged": [
            *damage(out / "float_nan.hurray", out),
            damaged_page(out / "front_pages.hurray", out),
        ],
        "plans": plans(rng),
        "unsupported": [past_2_53(out)],
        "objects": too_many_objects(out),
        "hilbertChunk": HILBERT_CHUNK,
        "curves": curve_keys(rng),
        "places": places(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    frames = codec_frames(random.Random(43), 1500)
    (out / "codecs.json").write_text(json.dumps(frames))
    (out / "mutants.json").write_text(json.dumps(mutants(out / "mutants", 40, 43), indent=1))


if __name__ == "__main__":
    main()
