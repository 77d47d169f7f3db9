"""Overviews against the faults a hostile test found: writes into a file with
overviews that replaced it or changed one level alone, values a level stored wrong
(complex means, fill values), records and attributes a file may hold that made
foreign exceptions, and arguments that were ignored or ran without end.  Each a
real file where one is involved."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import xarray as xr
from test_overviews import brute_level, dataset, field

import xarray_hurray as xh
from xarray_hurray.container import open_reader
from xarray_hurray.errors import HurrayTypeError, HurrayValueError
from xarray_hurray.xarray.resampling import KERNELS, valid_totals


def _steps(first: int, count: int) -> xr.Dataset:
    """Time steps of a (time, y, x) field; every value of step t is t."""
    t = np.arange(first, first + count)
    values = np.broadcast_to(t[:, None, None], (count, 16, 12)).astype("float64")
    return xr.Dataset(
        {"v": (("time", "y", "x"), values)},
        coords={"time": t, "y": np.arange(16.0), "x": np.arange(12.0)},
    )


def _levels(path) -> dict[str, xr.Dataset]:
    with xr.open_datatree(path, engine="hurray") as tree:
        return {name: node.to_dataset().load() for name, node in tree.children.items()}


def _pyramid_file(path, steps: int = 5) -> None:
    xh.to_hurray(_steps(0, steps), path, overviews=[2, 4], encoding={"v": {"chunks": (1, 4, 4)}})


# -- L1: overviews= with append_dim or region


def test_an_append_with_overviews_extends_every_level_instead_of_replacing_the_file(tmp_path):
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    xh.to_hurray(_steps(5, 2), path, overviews=[2, 4], append_dim="time")
    levels = _levels(path)
    for name, level in levels.items():
        assert level.sizes["time"] == 7, name
        assert (level["v"].values == np.arange(7.0)[:, None, None]).all(), name


def test_a_new_variable_written_into_a_pyramid_takes_its_encoding_at_every_level(tmp_path):
    """As in a new pyramid, the encoding given goes to level 0 and the coarser levels
    take their settings from it (it was refused as naming groups of the levels)."""
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    more = _steps(0, 5).assign(w=lambda ds: ds.v * 2)[["w"]]
    xh.to_hurray(more, path, mode="a", encoding={"w": {"chunks": (1, 2, 2), "codecs": None}})
    for level in _levels(path).values():
        np.testing.assert_array_equal(level["w"].values, 2 * level["v"].values)
    with xr.open_datatree(path, engine="hurray") as tree:
        for name in ("0", "1", "2"):
            assert tree[name]["w"].encoding["chunks"] == (1, 2, 2), name
            assert tree[name]["w"].encoding["codecs"] == [], name


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"overviews": [2]}, "other than the file's"),
        ({"overviews": 2, "overview_dims": ["y"]}, "other than the file's"),
        ({"overviews": [2, 4], "resampling": "max"}, "other than the file's"),
    ],
)
def test_an_append_with_other_overviews_is_refused_and_the_file_kept(tmp_path, kwargs, message):
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    before = path.read_bytes()
    with pytest.raises(HurrayValueError, match=message):
        xh.to_hurray(_steps(5, 2), path, append_dim="time", **kwargs)
    assert path.read_bytes() == before


def test_a_region_write_with_overviews_is_refused_and_the_file_kept(tmp_path):
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    before = path.read_bytes()
    box = _steps(0, 2).isel(y=slice(0, 2), x=slice(0, 2)).drop_vars(["time", "y", "x"])
    region = {"time": slice(0, 2), "y": slice(0, 2), "x": slice(0, 2)}
    with pytest.raises(HurrayValueError, match="region writes"):
        xh.to_hurray(box, path, overviews=[2, 4], region=region)
    assert path.read_bytes() == before


def test_overviews_with_an_append_into_a_file_without_them_are_refused(tmp_path):
    path = tmp_path / "f.hurray"
    xh.to_hurray(_steps(0, 3), path)
    before = path.read_bytes()
    with pytest.raises(HurrayValueError, match="has no overviews"):
        xh.to_hurray(_steps(3, 1), path, overviews=1, append_dim="time")
    assert path.read_bytes() == before


# -- W6: a level named as a group


@pytest.mark.parametrize(
    "kwargs",
    [
        {"group": "0", "append_dim": "time"},
        {"group": "0", "mode": "a"},
        {"group": "/0/", "region": {"time": slice(0, 2)}},
        {"group": "1", "mode": "r+"},
    ],
)
def test_a_write_into_one_level_as_a_group_is_refused_and_the_file_kept(tmp_path, kwargs):
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    before = path.read_bytes()
    new = _steps(5, 2) if "append_dim" in kwargs else _steps(0, 2)
    if "region" in kwargs:
        new = new.drop_vars(["time", "y", "x"])
    with pytest.raises(HurrayValueError, match="levels of the file's overviews"):
        xh.to_hurray(new, path, **kwargs)
    assert path.read_bytes() == before


def test_a_tree_writing_into_a_level_is_refused(tmp_path):
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    tree = xr.DataTree.from_dict({"/0": _steps(5, 1)})
    with pytest.raises(HurrayValueError, match="levels of the file's overviews"):
        xh.to_hurray(tree, path, append_dim="time")


def test_a_group_beside_the_levels_is_written(tmp_path):
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    xh.to_hurray(xr.Dataset({"w": ("k", np.arange(3))}), path, group="extra", mode="a")
    with xr.open_dataset(path, engine="hurray", group="extra") as extra:
        assert extra["w"].values.tolist() == [0, 1, 2]


# -- W8: a record that disagrees with the levels


def _with_record(path, record: dict) -> None:
    """Give the file's root the record ``record`` (in one commit, as a writer would)."""
    with xr.open_datatree(path, engine="hurray") as tree:
        loaded = tree.load()
    loaded.attrs = {**loaded.attrs, "hurray_overviews": json.dumps(record)}
    xh.to_hurray(loaded, path)


@pytest.mark.parametrize(
    ("factors", "message"),
    [([2], "disagrees with its levels"), ([2, 4, 8], "disagrees with its levels")],
    ids=["fewer", "more"],
)
def test_an_append_checks_the_record_against_the_levels_and_keeps_the_file(
    tmp_path, factors, message
):
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    record = json.loads(open_reader(path).metadata.attrs["hurray_overviews"])
    _with_record(path, {**record, "factors": factors})
    before = path.read_bytes()
    with pytest.raises(HurrayValueError, match=message):
        xh.to_hurray(_steps(5, 1), path, append_dim="time")
    assert path.read_bytes() == before


def test_an_append_checks_the_levels_sizes_against_the_factors(tmp_path):
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    record = json.loads(open_reader(path).metadata.attrs["hurray_overviews"])
    _with_record(path, {**record, "factors": [2, 8]})  # level 2 holds factor 4's sizes
    with pytest.raises(HurrayValueError, match="level 2 of the file"):
        xh.to_hurray(_steps(5, 1), path, append_dim="time")


# -- W1, W2, W3: values


def test_the_mean_of_complex_values_averages_both_parts(tmp_path):
    rng = np.random.default_rng(3)
    values = rng.normal(size=(8, 6)) + 1j * rng.normal(size=(8, 6))
    ds = xr.Dataset({"z": (("y", "x"), values)})
    path = tmp_path / "c.hurray"
    xh.to_hurray(ds, path, overviews=1, overview_dims=["y", "x"])
    with xr.open_dataset(path, engine="hurray", group="1") as level:
        expected = values.reshape(4, 2, 3, 2).mean(axis=(1, 3))
        np.testing.assert_allclose(level["z"].values, expected, rtol=1e-12)
        assert level["z"].dtype == values.dtype


@pytest.mark.parametrize("method", ["min", "max"])
def test_min_and_max_of_complex_values_are_refused(method):
    ds = xr.Dataset({"z": (("y", "x"), np.ones((4, 4), complex))})
    with pytest.raises(HurrayValueError, match="no order"):
        xh.multiscale(ds, 1, dims=["y", "x"], resampling=method)


def test_an_integer_fill_of_the_encoding_is_missing_in_the_means(tmp_path):
    values = field((8, 8), "int") * 10
    values[:2, :2] = -1  # a window with no valid cell
    values[4, 5] = -1
    ds = dataset(values)
    ds["v"].encoding["_FillValue"] = -1
    path = tmp_path / "i.hurray"
    xh.to_hurray(ds, path, overviews=1, resampling="mean")
    with xr.open_dataset(path, engine="hurray", group="1") as level:
        got = level["v"].values
    expected = brute_level(values.astype(float), [0, 1], 2, "mean", fill=-1.0)
    expected[expected == -1.0] = np.nan  # the window of fill only
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert np.isnan(got[0, 0])


def test_float_cells_equal_to_the_encodings_fill_are_not_averaged(tmp_path):
    values = np.arange(16.0).reshape(4, 4)
    values[0, 0] = values[0, 1] = values[1, 0] = -9999.0  # read back as missing
    ds = dataset(values)
    ds["v"].encoding["_FillValue"] = -9999.0
    path = tmp_path / "f.hurray"
    xh.to_hurray(ds, path, overviews=1)
    with (
        xr.open_dataset(path, engine="hurray", group="0") as finest,
        xr.open_dataset(path, engine="hurray", group="1") as level,
    ):
        assert np.isnan(finest["v"].values[0, 0])
        expected = brute_level(finest["v"].values, [0, 1], 2, "mean")
        np.testing.assert_allclose(level["v"].values, expected, rtol=1e-12)
        assert level["v"].values[0, 0] == values[1, 1]  # the one valid cell


# -- R4, C1: a factor larger than the block costs nothing


@pytest.mark.parametrize("method", ["mean", "min", "max", "mode", "nearest"])
def test_kernels_of_a_factor_far_past_the_block_are_the_whole_block(method):
    block = field((17, 13), "int" if method == "mode" else "float", seed=4)
    start = time.perf_counter()
    if method == "mean":
        sums, counts = valid_totals(block, [0, 1], 2**40, None)
        got = sums / counts  # float64 sums: the brute force's float32 mean to its precision
    else:
        got = KERNELS[method](block, [0, 1], 2**40, None)
    assert time.perf_counter() - start < 1.0  # no pad to 2**40, no loop of 2**80 views
    expected = brute_level(block, [0, 1], 17, method)
    np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("method", ["mean", "min", "mode"])
@pytest.mark.parametrize("factor", [5, 64])
def test_kernels_of_large_windows_are_the_brute_force(method, factor):
    block = field((130, 70), "int" if method == "mode" else "float", seed=factor)
    ds = dataset(block)
    tree = xh.multiscale(ds, [factor], dims=["y", "x"], resampling=method)
    expected = brute_level(block, [0, 1], factor, method)
    np.testing.assert_allclose(tree["1"]["v"].values, expected, rtol=1e-9, equal_nan=True)


# -- C1, R3: what a file's attributes may hold


def _hostile_root(path, attrs: dict) -> None:
    """A file whose levels are right but whose root attributes are ``attrs``."""
    with xr.open_datatree(path, engine="hurray") as tree:
        loaded = tree.load()
    loaded.attrs = {**loaded.attrs, **attrs}
    xh.to_hurray(loaded, path)


HOSTILE_RECORDS = [
    {"dims": ["y", "x"], "factors": [0], "resampling": {}},
    {"dims": ["y", "x"], "factors": [2, 4], "resampling": {"v": "bilinear"}},
    {"dims": ["y", "y"], "factors": [2, 4], "resampling": {}},
    {"dims": [], "factors": [2, 4], "resampling": {}},
    {"dims": ["y"], "factors": [2, 3], "resampling": {}},
    {"dims": ["y"], "factors": [True], "resampling": {}},
    {"dims": ["y"], "factors": [2**70], "resampling": {}},
    {"dims": ["y"], "factors": "2", "resampling": {}},
    {"dims": ["y"], "resampling": {}},
    [1, 2],
]


@pytest.mark.parametrize("record", HOSTILE_RECORDS)
def test_a_hostile_record_is_refused_naming_it(tmp_path, record, capsys):
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    _hostile_root(path, {"hurray_overviews": json.dumps(record)})
    before = path.read_bytes()
    with pytest.raises(HurrayValueError, match="not a record of overviews"):
        xh.to_hurray(_steps(5, 1), path, append_dim="time")
    assert path.read_bytes() == before
    from xarray_hurray.cli import main

    assert main(["info", str(path)]) == 2
    assert "not a record of overviews" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,
        json.dumps({"factors": [[[2]]] * 10, "dims": "[" * 40 + "]" * 40}),
        json.dumps({"dims": ["y", "x"], "factors": [2, 4], "resampling": {"v": "mean"}})
        + " " * 2**21,
    ],
    ids=["deep", "nested strings", "long"],
)
def test_a_record_past_the_limits_is_refused_without_parsing_it(tmp_path, text):
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    _hostile_root(path, {"hurray_overviews": text})
    with pytest.raises(HurrayValueError, match="not a record of overviews"):
        xh.to_hurray(_steps(5, 1), path, append_dim="time")


HOSTILE_MULTISCALES = [
    "[" * 100_000 + "]" * 100_000,
    json.dumps({"layout": [1, 2]}),
    json.dumps({"layout": [{"asset": 0}]}),
    json.dumps({"layout": [{"asset": "0"}, {"asset": "0"}]}),
    json.dumps({"layout": []}),
    json.dumps({"layout": [{"asset": "0"}] + [{"asset": "x"}] * 3}),
    json.dumps({"layout": [{"asset": "0"}], "pad": "x" * 2**21}),
    "not json",
]


@pytest.mark.parametrize("text", HOSTILE_MULTISCALES)
def test_hostile_multiscales_text_gives_our_errors(tmp_path, text):
    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    _hostile_root(path, {"multiscales": text})
    with xr.open_datatree(path, engine="hurray") as tree:
        with pytest.raises(HurrayValueError, match="multiscales"):
            tree.hurray.level(size={"x": 4})
    with pytest.raises(HurrayValueError, match="multiscales"):
        xh.to_hurray(_steps(5, 1), path, append_dim="time")
    # the file still opens: its root, as any file's, without a level to give
    with xr.open_dataset(path, engine="hurray") as ds:
        assert not ds.data_vars


@pytest.mark.parametrize("text", HOSTILE_MULTISCALES[:1] + HOSTILE_MULTISCALES[-2:])
def test_references_of_hostile_multiscales_text_keep_it_as_text(tmp_path, text):
    from xarray_hurray.container import ContainerReader
    from xarray_hurray.io import LocalFileSource
    from xarray_hurray.zarr.references import kerchunk_references

    path = tmp_path / "p.hurray"
    _pyramid_file(path)
    _hostile_root(path, {"multiscales": text})
    refs = kerchunk_references(ContainerReader(LocalFileSource(path)), path.as_uri())
    assert json.loads(refs["refs"]["zarr.json"])["attributes"]["multiscales"] == text


# -- W7 and the arguments of level()


def test_a_resolution_without_coordinates_is_refused(tmp_path):
    path = tmp_path / "n.hurray"
    ds = xr.Dataset({"v": (("y", "x"), field((32, 32), "float"))})  # no coordinates
    xh.to_hurray(ds, path, overviews=[2, 4, 8])
    with xr.open_datatree(path, engine="hurray") as tree:
        with pytest.raises(HurrayValueError, match="needs a 1-D numeric coordinate"):
            tree.hurray.level(resolution={"x": 1.0})


def test_a_resolution_reaches_a_level_of_one_cell(tmp_path):
    path = tmp_path / "one.hurray"
    xh.to_hurray(dataset(field((8, 8), "float")), path, overviews=[2, 4, 8])
    with xr.open_datatree(path, engine="hurray") as tree:
        # cells of 0.25 along x at level 0: one cell of 2.0 at level 3
        assert tree.hurray.level(resolution={"x": 100.0}).attrs["overview_level"] == 3
        assert tree.hurray.level(resolution={"x": 1.0}).attrs["overview_level"] == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"size": 5},
        {"size": {"x": 0}},
        {"size": {"x": 2.5}},
        {"size": {"x": True}},
        {"resolution": 1.0},
        {"resolution": {"x": -1.0}},
        {"resolution": {"x": float("nan")}},
    ],
)
def test_bad_arguments_of_level_are_refused_naming_them(tmp_path, kwargs):
    path = tmp_path / "p.hurray"
    xh.to_hurray(dataset(field((16, 16), "float")), path, overviews=[2, 4])
    with xr.open_datatree(path, engine="hurray") as tree:
        with pytest.raises(HurrayTypeError, match="must be a mapping of dimension names"):
            tree.hurray.level(**kwargs)


# -- C3 and the arguments of a pyramid


@pytest.mark.parametrize(
    ("overviews", "error", "message"),
    [
        (1.5, HurrayTypeError, "a number of levels"),
        ("2", HurrayTypeError, "a number of levels"),
        ([2, True], HurrayTypeError, "at least one integer"),
        ([], HurrayTypeError, "at least one integer"),
        (1024, HurrayValueError, "ask for at most 4"),
        (10**6, HurrayValueError, "ask for at most 4"),
        ([2**64], HurrayValueError, "up to"),
        ([2, 2**20], HurrayValueError, "to one cell"),
    ],
)
def test_bad_overviews_are_refused_at_once(overviews, error, message):
    ds = dataset(field((64, 48), "float"), {"y": 4, "x": 4})
    start = time.perf_counter()
    with pytest.raises(error, match=message):
        xh.multiscale(ds, overviews)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"resampling": 5}, HurrayTypeError, "resampling must be one of"),
        ({"resampling": ["max"]}, HurrayTypeError, "resampling must be one of"),
        ({"dims": ["x", "x"]}, HurrayValueError, "twice"),
        ({"dims": []}, HurrayValueError, "at least one dimension"),
    ],
)
def test_arguments_once_ignored_are_refused(kwargs, error, message, tmp_path):
    ds = dataset(field((8, 8), "float"))
    with pytest.raises(error, match=message):
        xh.multiscale(ds, 1, **kwargs)
    renamed = {"overview_dims" if k == "dims" else k: v for k, v in kwargs.items()}
    with pytest.raises(error, match=message):
        xh.to_hurray(ds, tmp_path / "p.hurray", overviews=1, **renamed)
    assert not (tmp_path / "p.hurray").exists()


def test_chunks_of_a_side_of_0_are_refused_by_the_writer_not_counted_for_ever(tmp_path):
    ds = dataset(field((64, 48), "float"))
    start = time.perf_counter()
    with pytest.raises(HurrayValueError, match="chunks must be"):
        xh.to_hurray(ds, tmp_path / "p.hurray", overviews=2, encoding={"v": {"chunks": (0, 4)}})
    assert time.perf_counter() - start < 5.0


def test_one_dimension_name_as_text_is_one_dimension():
    tree = xh.multiscale(dataset(field((8, 8), "float")), 1, dims="x")
    assert dict(tree["1"].sizes) == {"y": 8, "x": 4}
