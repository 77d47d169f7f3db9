"""Write with to_hurray, read with open_dataset(engine="hurray"): the data comes back."""

from __future__ import annotations

import io
import math
import os
import pickle
import warnings

import dask.array as da
import fsspec
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from depth import check_property, depths
from hurray_datasets import NUMERIC_DTYPES, everything, numeric
from hypothesis import strategies as st

import xarray_hurray as xh
from xarray_hurray.cli.demo import REGIONS
from xarray_hurray.container.select import OuterSelection
from xarray_hurray.layout import chunk_placement
from xarray_hurray.xarray.encoding import DEFAULT_CHUNK_BYTES, auto_chunks, default_chunk_axes


def roundtrip(ds: xr.Dataset, path, **kwargs) -> xr.Dataset:
    xh.to_hurray(ds, path, **kwargs)
    return xr.open_dataset(path, engine="hurray")


def test_everything_roundtrips(tmp_path):
    ds = everything()
    with roundtrip(ds, tmp_path / "all.hurray") as out:
        xr.testing.assert_identical(out, ds)


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
@pytest.mark.parametrize("shape", [(), (7,), (9, 13), (3, 5, 17)])
def test_numeric_dtypes_and_ranks(tmp_path, dtype, shape):
    dims = ("a", "b", "c")[: len(shape)]
    ds = xr.Dataset({"v": (dims, numeric(dtype, shape))})
    with roundtrip(ds, tmp_path / "n.hurray", chunk_bytes=64) as out:
        assert out["v"].dtype == np.dtype(dtype)
        xr.testing.assert_identical(out, ds)


@pytest.mark.parametrize("layout", ["auto", "hilbert", "morton", "row-major"])
@pytest.mark.parametrize("chunk_order", ["hilbert", "morton", "row-major"])
@pytest.mark.parametrize("codecs", [None, "zstd", "lz4", "zlib", "blosc"])
def test_layouts_orders_and_codecs(tmp_path, layout, chunk_order, codecs):
    data = numeric("float64", (40, 40), seed=3)
    ds = xr.Dataset({"v": (("y", "x"), data)})
    encoding = {"v": {"chunks": (16, 16)}}
    kwargs = {"layout": layout, "chunk_order": chunk_order, "codecs": codecs}
    with roundtrip(ds, tmp_path / "l.hurray", encoding=encoding, **kwargs) as out:
        xr.testing.assert_identical(out, ds)
        assert out["v"].encoding["layout"]["name"] == ("hilbert" if layout == "auto" else layout)
        assert out["v"].encoding["chunk_order"] == chunk_order


def test_the_old_argument_compressor_is_gone(tmp_path):
    ds = xr.Dataset({"v": (("x",), np.arange(4.0))})
    with pytest.raises(TypeError, match="compressor"):
        xh.to_hurray(ds, tmp_path / "c.hurray", compressor="lz4")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("extra", [{}, {"codecs": None}])
def test_the_old_encoding_key_compressor_is_refused_by_name(tmp_path, extra):
    ds = xr.Dataset({"v": (("x",), np.arange(4.0))})
    with pytest.raises(ValueError, match=r"unexpected encoding parameters \['compressor'\]"):
        xh.to_hurray(ds, tmp_path / "b.hurray", encoding={"v": {"compressor": "lz4", **extra}})
    assert not any(tmp_path.iterdir())


def test_cf_encoding_roundtrips(tmp_path):
    temp = np.array([[271.15, np.nan], [300.0, 250.55]])
    ds = xr.Dataset(
        {"t": (("y", "x"), temp), "when": (("y",), pd.to_datetime(["2020-01-01", "NaT"]))}
    )
    encoding = {
        "t": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 273.15, "_FillValue": -999},
        "when": {"units": "hours since 2000-01-01", "calendar": "standard", "dtype": "int64"},
    }
    xh.to_hurray(ds, tmp_path / "cf.hurray", encoding=encoding)
    raw = xr.open_dataset(tmp_path / "cf.hurray", engine="hurray", mask_and_scale=False)
    assert raw["t"].dtype == np.int16
    assert raw["t"].attrs["_FillValue"] == -999
    assert raw["t"].attrs["scale_factor"] == 0.01
    out = xr.open_dataset(tmp_path / "cf.hurray", engine="hurray")
    xr.testing.assert_allclose(out, ds, atol=0.005)
    assert out["when"].encoding["units"] == "hours since 2000-01-01"
    # the decoded encoding writes the same file again
    xh.to_hurray(out, tmp_path / "again.hurray")
    assert (tmp_path / "again.hurray").read_bytes() == (tmp_path / "cf.hurray").read_bytes()


def test_settings_read_from_a_file_that_no_longer_fit_are_dropped(tmp_path):
    values = numeric("float32", (4, 16, 32), seed=2)
    ds = xr.Dataset({"v": (("t", "y", "x"), values)})
    xh.to_hurray(
        ds,
        tmp_path / "src.hurray",
        encoding={"v": {"chunks": (1, 4, 8), "chunk_axes": ("y", "x")}},
        layout="morton",
    )
    src = xr.open_dataset(tmp_path / "src.hurray", engine="hurray")
    # an index drops a dimension, a rename renames one: chunks of the old rank, the
    # layout fitted to them and chunk axes naming the old dimension no longer fit and
    # are dropped, as to_zarr drops such chunks
    for subset in (src.isel(y=3), src.isel(t=0, x=5), src.rename(y="lat")):
        with roundtrip(subset, tmp_path / "subset.hurray") as out:
            xr.testing.assert_identical(out, subset.load())
    with roundtrip(src.rename(y="lat"), tmp_path / "renamed.hurray") as out:
        assert out["v"].encoding["chunks"] == (1, 4, 8)  # still fits: kept
    with roundtrip(src.isel(t=0), tmp_path / "t0.hurray") as out:
        assert out["v"].encoding["chunk_axes"] == ("y", "x")
    # encoding["chunks"] dropped by hand for new dask chunks takes its layout along
    rechunked = src.chunk({"t": 2, "y": 8, "x": 8})
    del rechunked["v"].encoding["chunks"]
    with roundtrip(rechunked, tmp_path / "rechunked.hurray") as out:
        assert out["v"].encoding["chunks"] == (2, 8, 8)
        xr.testing.assert_identical(out, ds)
    # settings given as encoding= are still checked
    with pytest.raises(ValueError, match="chunk_axes"):
        xh.to_hurray(
            src.isel(y=3), tmp_path / "bad.hurray", encoding={"v": {"chunk_axes": ("y", "x")}}
        )


def test_decoders_can_be_switched_off(tmp_path):
    ds = everything()
    xh.to_hurray(ds, tmp_path / "d.hurray")
    raw = xr.open_dataset(
        tmp_path / "d.hurray", engine="hurray", decode_times=False, decode_timedelta=False
    )
    assert raw["time"].dtype.kind == "i" and "since" in raw["time"].attrs["units"]
    assert raw["elapsed"].dtype.kind == "i"
    no_coords = xr.open_dataset(tmp_path / "d.hurray", engine="hurray", decode_coords=False)
    assert "lat" not in no_coords.coords and "coordinates" in no_coords["temp"].attrs
    dropped = xr.open_dataset(tmp_path / "d.hurray", engine="hurray", drop_variables=["temp"])
    assert "temp" not in dropped
    coder = xr.coders.CFDatetimeCoder(use_cftime=True)
    cf = xr.open_dataset(tmp_path / "d.hurray", engine="hurray", decode_times=coder)
    assert type(cf["time"].values[0]).__module__.startswith("cftime")


def test_coordinates_attribute_and_2d_coords(tmp_path):
    ds = everything()
    xh.to_hurray(ds, tmp_path / "c.hurray")
    out = xr.open_dataset(tmp_path / "c.hurray", engine="hurray")
    assert set(out.coords) == set(ds.coords)
    assert out["lat"].dims == ("y", "x")


def test_accessor_writes_the_same_file(tmp_path):
    ds = everything()
    xh.to_hurray(ds, tmp_path / "f.hurray")
    ds.hurray.to_hurray(tmp_path / "a.hurray")
    assert (tmp_path / "a.hurray").read_bytes() == (tmp_path / "f.hurray").read_bytes()


def test_dask_chunks_set_stored_chunks_and_chunks_align(tmp_path):
    data = numeric("float32", (50, 64), seed=5)
    ds = xr.Dataset({"v": (("y", "x"), da.from_array(data, chunks=(16, 32)))})
    xh.to_hurray(ds, tmp_path / "d.hurray")
    out = xr.open_dataset(tmp_path / "d.hurray", engine="hurray", chunks={})
    assert out["v"].chunks == ((16, 16, 16, 2), (32, 32))
    assert out["v"].encoding["preferred_chunks"] == {"y": 16, "x": 32}
    xr.testing.assert_identical(out.compute(), ds.compute())


def test_auto_chunks_are_about_a_mebibyte_of_power_of_two_sides(tmp_path):
    # x alone is spatial (its coordinate's CF axis): no map, so chunks of about 1 MiB
    ds = xr.Dataset(
        {"v": (("t", "y", "x"), np.zeros((3, 300, 500), dtype="f4"))},
        coords={"x": ("x", np.arange(500.0), {"axis": "X"})},
    )
    xh.to_hurray(ds, tmp_path / "a.hurray")
    var = xh.open_reader(tmp_path / "a.hurray").variable("v")
    # 3 * 256 * 256 float32 is 0.75 MiB, counted on t's real length 3 (not 4), which
    # leaves room for y whole: 3 * 300 * 256 * 4 bytes = 0.88 MiB; x is cut in powers of two
    assert var.chunks == (3, 300, 256)
    assert var.layout.name == "row-major"  # the default: chunks are decoded whole
    assert xh.open_reader(tmp_path / "a.hurray").header.file_length < 10_000


@pytest.mark.parametrize(
    ("shape", "chunks"),
    [
        ((12, 73, 144), (12, 73, 144)),  # 0.5 MB fits: one chunk, not 128 + 16 along x
        ((365, 721, 1440), (64, 64, 64)),
        ((1, 2000, 3000), (1, 512, 512)),
        ((0, 5), (1, 5)),
    ],
)
def test_auto_chunks_keep_a_variable_that_fits_whole(shape, chunks):
    got = auto_chunks(shape, 4)
    assert got == chunks
    # never above the budget, and no side can double (or reach its axis) within it
    assert math.prod(got) * 4 <= DEFAULT_CHUNK_BYTES or got == tuple(max(n, 1) for n in shape)
    for k, n in enumerate(shape):
        wider = list(got)
        wider[k] = min(2 * got[k], n)
        assert wider[k] <= got[k] or math.prod(wider) * 4 > DEFAULT_CHUNK_BYTES


@pytest.mark.parametrize("opener", ["path", "str", "fileobj", "memory-url"])
def test_opens_paths_file_objects_and_urls(tmp_path, opener):
    ds = everything()
    path = tmp_path / "o.hurray"
    xh.to_hurray(ds, path)
    if opener == "path":
        target, kwargs = path, {}
    elif opener == "str":
        target, kwargs = str(path), {}
    elif opener == "fileobj":
        target, kwargs = io.BytesIO(path.read_bytes()), {}
    else:
        target, kwargs = "memory://hurray-test/o.hurray", {"storage_options": {}}
        with fsspec.open(target, "wb") as f:
            f.write(path.read_bytes())
    with xr.open_dataset(target, engine="hurray", **kwargs) as out:
        xr.testing.assert_identical(out.load(), ds)


def test_engine_is_guessed_from_suffix_and_magic(tmp_path):
    ds = xr.Dataset({"v": (("x",), np.arange(4))})
    xh.to_hurray(ds, tmp_path / "a.hurray")
    (tmp_path / "a.bin").write_bytes((tmp_path / "a.hurray").read_bytes())
    for name in ("a.hurray", "a.bin"):
        xr.testing.assert_identical(xr.open_dataset(tmp_path / name), ds)
    entry = xh.xarray.HurrayBackendEntrypoint()
    assert not entry.guess_can_open(tmp_path / "missing.nc")
    assert "hurray" in xr.backends.list_engines()


def test_a_directory_is_not_guessed_to_be_ours_without_a_warning(tmp_path):
    """xarray asks every engine about a Zarr store's directory, and warns of any that
    fails to answer."""
    store = tmp_path / "s.zarr"
    xr.Dataset({"v": ("x", np.arange(3))}).to_zarr(store, zarr_format=2)
    assert not xh.xarray.HurrayBackendEntrypoint().guess_can_open(store)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        xr.open_datatree(store).close()


def test_opened_dataset_pickles_without_file_handles(tmp_path):
    ds = everything()
    xh.to_hurray(ds, tmp_path / "p.hurray")
    out = xr.open_dataset(tmp_path / "p.hurray", engine="hurray")
    out["temp"][0, 0, 0].load()  # the source has opened its handle
    clone = pickle.loads(pickle.dumps(out))
    xr.testing.assert_identical(clone.load(), ds)
    reader = xh.open_reader(tmp_path / "p.hurray")
    reader.read("temp")
    assert b"BufferedReader" not in pickle.dumps(reader)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_closing_the_dataset_releases_the_file_handle(tmp_path):
    path = tmp_path / "h.hurray"
    xh.to_hurray(xr.Dataset({"v": (("x",), np.arange(10.0))}), path)

    def handles() -> int:
        fds = os.listdir("/proc/self/fd")
        return sum(os.path.realpath(f"/proc/self/fd/{fd}") == str(path) for fd in fds)

    with xr.open_dataset(path, engine="hurray") as ds:
        ds["v"][:3].load()
        assert handles() == 1
    assert handles() == 0  # ds is still alive, its handle is not
    np.testing.assert_array_equal(ds["v"][5:].values, np.arange(5.0, 10.0))  # reopened


def test_existing_file_is_replaced(tmp_path):
    path = tmp_path / "r.hurray"
    xh.to_hurray(xr.Dataset({"a": (("x",), np.arange(3))}), path)
    new = xr.Dataset({"b": (("x",), np.arange(5.0))})
    xh.to_hurray(new, path)
    xr.testing.assert_identical(xr.open_dataset(path, engine="hurray"), new)
    assert [p.name for p in tmp_path.iterdir()] == ["r.hurray"]


names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=8)
dims = st.sampled_from(["x", "y", "z"])


@st.composite
def datasets(draw):
    sizes = {d: draw(st.integers(0, 9)) for d in ("x", "y", "z")}
    variables = {}
    # a dimension name is no scalar; "/" separates the groups of a path
    var_names = names.filter(lambda n: n not in sizes and "/" not in n)
    for name in draw(st.lists(var_names, min_size=1, max_size=4, unique=True)):
        var_dims = tuple(draw(st.lists(dims, max_size=3, unique=True)))
        shape = tuple(sizes[d] for d in var_dims)
        dtype = draw(st.sampled_from([*NUMERIC_DTYPES, "U4", "S2", "object"]))
        seed = draw(st.integers(0, 2**16))
        if dtype == "object":
            values = np.empty(shape, dtype=object)
            values[...] = draw(names)
        elif dtype[0] in "US":
            values = numeric("int8", shape, seed).astype(dtype)
        else:
            values = numeric(dtype, shape, seed)
        variables[name] = (var_dims, values, {"n": draw(st.integers(-5, 5)), "s": draw(names)})
    attrs = draw(st.dictionaries(names, st.integers(-(2**40), 2**40) | names, max_size=3))
    return xr.Dataset(variables, attrs=attrs)


@depths(20, 200)
def test_generated_datasets_roundtrip(tmp_path_factory, examples):
    def check(ds: xr.Dataset, layout: str) -> None:
        path = tmp_path_factory.mktemp("gen") / "g.hurray"
        with roundtrip(ds, path, layout=layout, chunk_bytes=32) as out:
            xr.testing.assert_identical(out.load(), ds)

    layouts = st.sampled_from(["auto", "morton", "row-major"])
    check_property(examples, check, datasets(), layouts)


def test_opens_an_s3_url_with_storage_options(tmp_path, s3):
    ds = everything()
    xh.to_hurray(ds, tmp_path / "s.hurray")
    fs = s3.fs()
    fs.put(str(tmp_path / "s.hurray"), f"{s3.bucket}/s.hurray")
    url = f"s3://{s3.bucket}/s.hurray"
    with xr.open_dataset(url, engine="hurray", storage_options=s3.storage_options) as out:
        xr.testing.assert_identical(out.load(), ds)
        assert out["temp"][2, 3:5, 7].values.tolist() == ds["temp"][2, 3:5, 7].values.tolist()


def test_concurrent_reads_from_threads_agree(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    data = numeric("float64", (64, 64), seed=9)
    xh.to_hurray(xr.Dataset({"v": (("y", "x"), data)}), tmp_path / "c.hurray", chunk_bytes=512)
    reader = xh.open_reader(tmp_path / "c.hurray")
    boxes = [(slice(i, i + 20), slice(63 - i - 20, 63 - i)) for i in range(0, 40, 3)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda box: reader.read("v", box), boxes * 4))
    for box, result in zip(boxes * 4, results, strict=True):
        np.testing.assert_array_equal(result, data[box])


@pytest.mark.parametrize(
    ("chunks", "axes"),
    [((1, 8, 8), ("y", "x")), ((2, 8, 8), ("t", "y", "x")), ((1, 1, 8), ("x",))],
)
def test_default_chunk_axes_leave_one_step_chunks_outermost(tmp_path, chunks, axes):
    ds = xr.Dataset({"v": (("t", "y", "x"), np.zeros((4, 16, 16), "f4"))})
    with roundtrip(ds, tmp_path / "a.hurray", encoding={"v": {"chunks": chunks}}) as out:
        assert out["v"].encoding["chunk_axes"] == axes


def runs(placement: np.ndarray, chunk_ids: np.ndarray) -> int:
    """Contiguous runs the chunks ``chunk_ids`` form when placed in ``placement`` order."""
    positions = np.sort(np.argsort(placement)[chunk_ids])
    return 1 + int(np.count_nonzero(np.diff(positions) != 1))


def test_the_default_chunk_axes_table_of_choosing_a_layout():
    # the demo's grid: 8 days x 512 x 1024 in 1 x 64 x 64 chunks; runs do not depend
    # on the chunks' sizes, only on which follow which
    shape, chunks = (8, 512, 1024), (1, 64, 64)
    grid = tuple(-(-n // c) for n, c in zip(shape, chunks, strict=True))
    table = {
        "a city, one day": (3, 3),
        "a country, one day": (1, 10),
        "a country, all days": (8, 2),
        "a continent, one day": (8, 27),
        "a latitude band, one day": (8, 10),
    }
    assert default_chunk_axes(shape, chunks) == (1, 2)
    for name, expected in table.items():
        key = tuple(REGIONS[name].get(d, slice(None)) for d in ("time", "lat", "lon"))
        ids = OuterSelection.build(key, shape, chunks).chunk_ids()
        got = tuple(runs(chunk_placement(grid, "hilbert", a), ids) for a in ((1, 2), (0, 1, 2)))
        assert got == expected, name
