"""Overviews: every level against a brute-force coarsening in numpy, written, read
back, appended to and picked by the accessor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from reference_readers import reads_local_references

import xarray_hurray as xh
from xarray_hurray.errors import HurrayValueError

GOLDEN = Path(__file__).parents[1] / "data" / "hurray_1_3_tree.hurray"


def brute_level(values: np.ndarray, axes: list[int], factor: int, method: str, fill: Any = None):
    """``values`` coarsened by ``factor`` along ``axes``, cell by cell: each output cell
    from the window of input cells it covers (the last windows short)."""
    out_shape = [-(-n // factor) if k in axes else n for k, n in enumerate(values.shape)]
    dtype = np.float64 if method == "mean" and values.dtype.kind != "f" else values.dtype
    out = np.empty(out_shape, dtype=dtype)
    for index in np.ndindex(*out_shape):
        window = tuple(
            slice(i * factor, (i + 1) * factor) if k in axes else slice(i, i + 1)
            for k, i in enumerate(index)
        )
        cells = values[window].reshape(-1)  # row-major: the first is the lowest corner
        valid = cells[~np.isnan(cells)] if cells.dtype.kind == "f" else cells
        if fill is not None:
            valid = valid[valid != fill]
        empty = np.nan if fill is None else fill
        if method == "nearest":
            out[index] = cells[0]
        elif not valid.size:
            out[index] = empty
        elif method == "mean":
            out[index] = valid.astype(np.float64).mean()
        elif method == "min":
            out[index] = valid.min()
        elif method == "max":
            out[index] = valid.max()
        else:  # mode: the most frequent, the smallest of those as frequent
            counts: dict[Any, int] = {}
            for v in valid.tolist():
                counts[v] = counts.get(v, 0) + 1
            best = max(counts.values())
            out[index] = min(v for v, c in counts.items() if c == best)
    return out


def brute_pyramid(values, axes, factors, method, fill=None):
    """Every coarser level by brute force: from level 0 by its whole factor, except
    mode, which is defined on the level before (as GDAL's)."""
    levels = []
    previous, previous_factor = values, 1
    for factor in factors:
        if method == "mode":
            level = brute_level(previous, axes, factor // previous_factor, method, fill)
        else:
            level = brute_level(values, axes, factor, method, fill)
        levels.append(level)
        previous, previous_factor = level, factor
    return levels


def field(shape, kind, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "float":
        values = rng.normal(size=shape).astype(np.float32)
        values[rng.random(shape) < 0.2] = np.nan
        values[: min(shape[0], 4), : min(shape[1], 4)] = np.nan  # a window with no cell
        return values
    return rng.integers(0, 4, size=shape).astype(np.int16)


def dataset(values, chunks=None):
    ny, nx = values.shape
    ds = xr.Dataset(
        {"v": (("y", "x"), values)},
        coords={"y": 90.0 - np.arange(ny) * 0.5, "x": np.arange(nx) * 0.25},
    )
    return ds.chunk(chunks) if chunks else ds


METHODS = ["mean", "nearest", "mode", "min", "max"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("factors", [[2, 4, 8], [3, 9]])
@pytest.mark.parametrize("chunks", [None, {"y": 8, "x": 10}, {"y": 5, "x": 7}])
def test_each_level_is_the_brute_force_coarsening(method, factors, chunks):
    kind = "int" if method == "mode" else "float"
    values = field((37, 50), kind)
    tree = xh.multiscale(dataset(values, chunks), factors, resampling=method)
    expected = brute_pyramid(values, [0, 1], factors, method)
    np.testing.assert_array_equal(tree["0"]["v"].values, values)
    for number, level in enumerate(expected, start=1):
        got = tree[str(number)]["v"].values
        assert got.dtype == level.dtype.type(0).dtype or method == "mean"
        np.testing.assert_allclose(got, level, rtol=1e-6, equal_nan=True)


@settings(max_examples=20, deadline=None)
@given(
    ny=st.integers(1, 40),
    nx=st.integers(1, 40),
    factors=st.sampled_from([[2], [2, 4], [2, 6, 12], [4, 8]]),
    method=st.sampled_from(METHODS),
    chunk=st.integers(1, 16),
    seed=st.integers(0, 2**16),
)
def test_levels_of_any_shape_and_chunks_are_the_brute_force(ny, nx, factors, method, chunk, seed):
    kind = "int" if method in ("mode", "max") else "float"
    values = field((ny, nx), kind, seed)
    ds = dataset(values, {"y": chunk, "x": chunk})
    if factors[-1] >= 2 * max(ny, nx):  # past the one cell half that factor makes
        with pytest.raises(HurrayValueError, match="to one cell"):
            xh.multiscale(ds, factors, dims=["y", "x"], resampling=method)
        return
    tree = xh.multiscale(ds, factors, dims=["y", "x"], resampling=method)
    for number, level in enumerate(brute_pyramid(values, [0, 1], factors, method), start=1):
        np.testing.assert_allclose(tree[str(number)]["v"].values, level, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("method", ["mean", "mode", "min", "max"])
def test_the_fill_value_of_integers_is_missing(method):
    values = field((12, 12), "int") * 10
    values[:4, :4] = -1  # a whole window of fill at the first two levels
    values[5, 6] = -1
    ds = dataset(values)
    ds["v"].attrs["_FillValue"] = -1
    tree = xh.multiscale(ds, [2, 4], resampling=method)
    expected = brute_pyramid(values, [0, 1], [2, 4], method, fill=-1)
    for number, level in enumerate(expected, start=1):
        np.testing.assert_allclose(tree[str(number)]["v"].values, level, rtol=1e-12)
    assert (tree["1"]["v"].values[:2, :2] == -1).all()


def test_a_decoded_fill_value_is_nan_and_the_mean_skips_it(tmp_path):
    values = field((16, 16), "float")
    ds = dataset(values)
    ds["v"].encoding["_FillValue"] = -9999.0
    xh.to_hurray(ds, tmp_path / "f.hurray", overviews=1)
    with xr.open_dataset(tmp_path / "f.hurray", engine="hurray", group="1") as level:
        expected = brute_level(values, [0, 1], 2, "mean")
        np.testing.assert_allclose(level["v"].values, expected, rtol=1e-6, equal_nan=True)
        assert np.isnan(level["v"].values[0, 0])  # a window of missing cells only
        assert level["v"].encoding["_FillValue"] == -9999.0


def test_defaults_keep_each_variables_meaning():
    rng = np.random.default_rng(1)
    ds = xr.Dataset(
        {
            "temperature": (("y", "x"), rng.random((8, 8))),
            "land_cover": (("y", "x"), rng.integers(0, 9, (8, 8)).astype(np.uint8)),
            "quality": (
                ("y", "x"),
                rng.integers(0, 3, (8, 8)).astype(np.float32),
                {"flag_values": [0, 1, 2], "flag_meanings": "good fair bad"},
            ),
            "mask": (("y", "x"), rng.random((8, 8)) > 0.5),
            "label": (("y", "x"), np.array(list("abcdefgh" * 8)).reshape(8, 8)),
        },
        coords={"x": np.arange(8.0), "y": np.arange(8.0)},
    )
    tree = xh.multiscale(ds, 1)
    record = json.loads(tree.attrs["hurray_overviews"])
    assert record["resampling"] == {
        "temperature": "mean",
        "land_cover": "mode",
        "quality": "mode",
        "mask": "mode",
        "label": "nearest",
        "x": "mean",
        "y": "mean",
    }
    level = tree["1"]
    assert level["land_cover"].dtype == np.uint8
    np.testing.assert_array_equal(
        level["label"].values, brute_level(ds["label"].values, [0, 1], 2, "nearest")
    )
    np.testing.assert_array_equal(
        level["quality"].values, brute_level(ds["quality"].values, [0, 1], 2, "mode")
    )
    assert level["temperature"].attrs["cell_methods"] == "y: x: mean"
    assert level["land_cover"].attrs["cell_methods"] == "y: x: mode"


def test_coordinates_and_cf_bounds_are_coarsened_consistently():
    values = field((10, 9), "float")
    ds = dataset(values)
    lat = ds["y"].values
    ds["y"].attrs["bounds"] = "y_bnds"
    ds = ds.assign_coords(y_bnds=(("y", "nv"), np.stack([lat + 0.25, lat - 0.25], axis=1)))
    tree = xh.multiscale(ds, [2, 4])
    for number, factor in enumerate([2, 4], start=1):
        level = tree[str(number)]
        np.testing.assert_allclose(
            level["x"].values, brute_level(ds["x"].values, [0], factor, "mean")
        )
        np.testing.assert_allclose(level["y"].values, brute_level(lat, [0], factor, "mean"))
        # descending latitudes: the upper edge first, as in level 0
        bounds = level["y_bnds"].values
        for i in range(bounds.shape[0]):
            window = ds["y_bnds"].values[i * factor : (i + 1) * factor]
            assert bounds[i, 0] == window.max() and bounds[i, 1] == window.min()
        assert level.attrs["overview_level"] == number
        assert level.attrs["overview_factor"] == factor
        assert level.attrs["overview_dims"] == ["y", "x"]


def test_the_root_follows_the_multiscales_convention():
    tree = xh.multiscale(dataset(field((16, 16), "float")), [2, 4])
    (convention,) = tree.attrs["zarr_conventions"]
    assert convention["uuid"] == "d35379db-88df-4056-af3a-620245f8e347"
    multiscales = tree.attrs["multiscales"]
    assert multiscales["resampling_method"] == "average"
    assert [entry["asset"] for entry in multiscales["layout"]] == ["0", "1", "2"]
    # every scale is against level 0, and says so: a client that chains derived_from
    # and one that reads scales against the first level read the same factors
    assert [entry.get("derived_from") for entry in multiscales["layout"]] == [None, "0", "0"]
    assert [entry["transform"]["scale"] for entry in multiscales["layout"]] == [
        [1.0, 1.0],
        [2.0, 2.0],
        [4.0, 4.0],
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"overviews": 0}, "at least 1 level"),
        ({"overviews": [2, 3]}, "each a multiple"),
        ({"overviews": [4, 2]}, "must increase"),
        ({"overviews": 1, "dims": ["z"]}, "not dimensions"),
        ({"overviews": 1, "resampling": "bilinear"}, "unknown resampling"),
        ({"overviews": 1, "resampling": {"w": "mean"}}, "not variables"),
        ({"overviews": 1, "resampling": {"label": "mean"}}, "only 'nearest'"),
    ],
)
def test_bad_arguments_are_refused_naming_the_problem(kwargs, message):
    ds = dataset(field((8, 8), "float"))
    ds["label"] = (("y", "x"), np.full((8, 8), "a"))
    with pytest.raises(HurrayValueError, match=message):
        xh.multiscale(ds, **kwargs)


def _time_field(steps, start=0):
    rng = np.random.default_rng(start)
    values = rng.normal(size=(steps, 24, 20)).astype(np.float32)
    values[values > 1.5] = np.nan
    classes = rng.integers(0, 5, size=(steps, 24, 20)).astype(np.int32)
    return xr.Dataset(
        {"t": (("time", "y", "x"), values), "c": (("time", "y", "x"), classes)},
        coords={
            "time": np.arange(start, start + steps),
            "y": np.arange(24.0),
            "x": np.arange(20.0),
        },
    ).chunk({"time": 1, "y": 8, "x": 8})


def _check_levels_against_brute_force(path, ds, factors):
    with xr.open_datatree(path, engine="hurray") as tree:
        assert list(tree.children) == [str(k) for k in range(len(factors) + 1)]
        for name, method in (("t", "mean"), ("c", "mode")):
            values = ds[name].values
            levels = [brute_pyramid(values[k], [0, 1], factors, method) for k in range(len(values))]
            for number in range(1, len(factors) + 1):
                expected = np.stack([step[number - 1] for step in levels])
                got = tree[str(number)][name].values
                np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)
            np.testing.assert_array_equal(tree["0"][name].values, values)


def test_written_levels_read_back_and_appends_extend_every_level(tmp_path):
    path = tmp_path / "p.hurray"
    first = _time_field(3)
    xh.to_hurray(first, path, overviews=[2, 4])
    _check_levels_against_brute_force(path, first, [2, 4])
    with xr.open_dataset(path, engine="hurray", group="2") as level:
        assert dict(level.sizes) == {"time": 3, "y": 6, "x": 5}
        assert level["t"].encoding["chunks"] == (1, 6, 5)  # level 0's chunks, cut
    more = _time_field(2, start=3)
    xh.to_hurray(more, path, append_dim="time")
    _check_levels_against_brute_force(path, xr.concat([first, more], dim="time"), [2, 4])


def test_an_append_along_a_coarsened_dimension_is_refused_and_the_file_kept(tmp_path):
    path = tmp_path / "p.hurray"
    ds = dataset(field((8, 8), "float"))
    xh.to_hurray(ds, path, overviews=1)
    before = path.read_bytes()
    with pytest.raises(HurrayValueError, match="coarsen"):
        xh.to_hurray(ds.assign_coords(x=ds.x + 10), path, append_dim="x")
    assert path.read_bytes() == before


def test_the_accessor_picks_the_level_for_a_size_or_a_resolution(tmp_path):
    path = tmp_path / "p.hurray"
    xh.to_hurray(dataset(field((64, 48), "float")), path, overviews=[2, 4, 8])
    with xr.open_datatree(path, engine="hurray") as tree:
        assert tree.hurray.level(size={"x": 48}).attrs["overview_level"] == 0
        assert tree.hurray.level(size={"x": 12}).attrs["overview_level"] == 2
        assert tree.hurray.level(size={"x": 13}).attrs["overview_level"] == 1
        assert tree.hurray.level(size={"x": 1, "y": 1}).attrs["overview_level"] == 3
        # cells of 0.25 (x) and 0.5 (y) at level 0, twice as large at each level
        assert tree.hurray.level(resolution={"x": 1.0}).attrs["overview_level"] == 2
        assert tree.hurray.level(resolution={"x": 0.9}).attrs["overview_level"] == 1
        assert tree.hurray.level(resolution={"y": 0.1}).attrs["overview_level"] == 0
        with pytest.raises(HurrayValueError, match="not dimensions"):
            tree.hurray.level(size={"z": 4})


GOLDEN_PYRAMID = Path(__file__).parents[1] / "data" / "hurray_1_3_pyramid.hurray"
"""A golden file of overviews of format 1.3: :func:`write_golden_pyramid`'s, read
for ever and never written again."""


def write_golden_pyramid(path: Path) -> None:
    """A field with missing cells and two coarser levels of its mean, codec-free so
    that the writer reproduces it byte for byte whatever the codec libraries."""
    xh.to_hurray(dataset(field((37, 50), "float")), path, overviews=[2, 4], codecs=None)


def test_the_golden_pyramid_holds_the_brute_force_levels_and_is_what_the_writer_writes(
    tmp_path,
):
    values = field((37, 50), "float")
    with xr.open_datatree(GOLDEN_PYRAMID, engine="hurray") as tree:
        np.testing.assert_array_equal(tree["0"]["v"].values, values)
        for number, level in enumerate(brute_pyramid(values, [0, 1], [2, 4], "mean"), 1):
            got = tree[str(number)]["v"].values
            np.testing.assert_allclose(got, level, rtol=1e-6, equal_nan=True)
        assert tree.hurray.level(size={"x": 13}).attrs["overview_level"] == 2
    write_golden_pyramid(tmp_path / "p.hurray")
    assert (tmp_path / "p.hurray").read_bytes() == GOLDEN_PYRAMID.read_bytes()


def test_a_file_without_levels_reads_as_it_is_and_has_no_overviews():
    from tests.container.test_hurray_golden import golden_tree

    with xr.open_datatree(GOLDEN, engine="hurray") as tree:
        xr.testing.assert_identical(tree.load(), golden_tree())
        with pytest.raises(HurrayValueError, match="no overviews"):
            tree.hurray.level(size={"x": 1})


def test_the_pyramid_written_to_zarr_is_the_same(tmp_path):
    ds = dataset(field((32, 24), "float"))
    tree = xh.multiscale(ds, [2, 4])
    tree.hurray.to_zarr(tmp_path / "p.zarr")
    xh.to_hurray(ds, tmp_path / "p.hurray", overviews=[2, 4])
    import zarr

    root = zarr.open_group(tmp_path / "p.zarr", mode="r")
    assert root.attrs["multiscales"] == tree.attrs["multiscales"]
    with (
        xr.open_datatree(tmp_path / "p.zarr", engine="zarr") as from_zarr,
        xr.open_datatree(tmp_path / "p.hurray", engine="hurray") as from_hurray,
    ):
        for name in ("0", "1", "2"):
            xr.testing.assert_identical(
                from_zarr[name].to_dataset().load(), from_hurray[name].to_dataset().load()
            )
        assert json.loads(from_hurray.attrs["multiscales"]) == tree.attrs["multiscales"]


@reads_local_references
def test_references_show_the_levels_to_zarr_readers(tmp_path):
    import fsspec
    import zarr

    from xarray_hurray.container import ContainerReader
    from xarray_hurray.io import LocalFileSource
    from xarray_hurray.zarr.references import kerchunk_references

    path = tmp_path / "p.hurray"
    ds = dataset(field((32, 24), "float"))
    xh.to_hurray(ds, path, overviews=[2, 4])
    refs = kerchunk_references(ContainerReader(LocalFileSource(path)), path.as_uri())
    fs = fsspec.filesystem("reference", fo=refs, asynchronous=True)
    root = zarr.open_group(zarr.storage.FsspecStore(fs, read_only=True), mode="r")
    layout = root.attrs["multiscales"]["layout"]  # a JSON object, as Zarr holds it
    assert [entry["asset"] for entry in layout] == ["0", "1", "2"]
    for entry in layout:
        store = zarr.storage.FsspecStore(fs, read_only=True, path=entry["asset"])
        back = xr.open_zarr(store, consolidated=False, zarr_format=3).load()
        with xr.open_dataset(path, engine="hurray", group=entry["asset"]) as level:
            xr.testing.assert_identical(back, level.load())


class CountedSource:
    """A dask field whose blocks count how often they are computed."""

    def __init__(self, values: np.ndarray, chunks: tuple[int, int]) -> None:
        import threading

        import dask.array as da

        self.values = values
        self.calls: dict[tuple[int, int], int] = {}
        self.lock = threading.Lock()
        self.data = da.map_blocks(
            self.block, chunks=da.core.normalize_chunks(chunks, values.shape), dtype=values.dtype
        )

    def block(self, block_info=None):
        (y0, y1), (x0, x1) = block_info[None]["array-location"]
        with self.lock:
            self.calls[(y0, x0)] = self.calls.get((y0, x0), 0) + 1
        return self.values[y0:y1, x0:x1]


@pytest.mark.parametrize("method", ["mean", "mode", "nearest"])
@pytest.mark.parametrize("chunks", [(8, 8), (5, 5)], ids=["on windows", "off windows"])
@pytest.mark.parametrize("factors", [[2], [2, 4, 8]])
def test_writing_overviews_reads_the_source_twice_whatever_its_blocks(
    tmp_path, chunks, method, factors
):
    values = field((40, 30), "int" if method == "mode" else "float")
    source = CountedSource(values, chunks)
    ds = xr.Dataset({"v": (("y", "x"), source.data)})
    path = tmp_path / "p.hurray"
    xh.to_hurray(ds, path, overviews=factors, overview_dims=["y", "x"], resampling=method)
    assert len(source.calls) == len(range(0, 40, chunks[0])) * len(range(0, 30, chunks[1]))
    # every level is stored first, in one pass over the source, then level 0 is
    # written: twice, whatever the number of levels and whether blocks start on windows
    assert set(source.calls.values()) == {2}
    expected = brute_pyramid(values, [0, 1], factors, method)
    with xr.open_datatree(path, engine="hurray") as tree:
        np.testing.assert_array_equal(tree["0"]["v"].values, values)
        for number, level in enumerate(expected, start=1):
            got = tree[str(number)]["v"].values
            np.testing.assert_allclose(got, level, rtol=1e-6, equal_nan=True)


def test_a_delayed_write_of_overviews_writes_the_same_levels(tmp_path, monkeypatch):
    """... planned once, with the request: neither the check when the write is asked
    for nor the write when it runs plans the pyramid again."""
    import dask

    from xarray_hurray.xarray import request

    planned = []

    def counted(*args, **kwargs):
        planned.append(args[1:])
        return plan_pyramid(*args, **kwargs)

    plan_pyramid = request.plan_pyramid
    monkeypatch.setattr(request, "plan_pyramid", counted)
    values = field((40, 30), "float")
    ds = dataset(values, {"y": 8, "x": 8})
    pending = xh.to_hurray(ds, tmp_path / "p.hurray", overviews=[2, 4], compute=False)
    assert not (tmp_path / "p.hurray").exists()
    dask.compute(pending)
    assert planned == [([2, 4], None, None)]
    expected = brute_pyramid(values, [0, 1], [2, 4], "mean")
    with xr.open_datatree(tmp_path / "p.hurray", engine="hurray") as tree:
        for number, level in enumerate(expected, start=1):
            np.testing.assert_allclose(tree[str(number)]["v"].values, level, equal_nan=True)


if __name__ == "__main__":  # written once, by the format 1.3 writer
    write_golden_pyramid(GOLDEN_PYRAMID)
