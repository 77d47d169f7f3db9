"""hurray convert of inputs with groups: Hurray trees, and trees to and from
Zarr and netCDF-4."""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
import warnings

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.cli import main
from xarray_hurray.container import verify_file


def tree() -> xr.DataTree:
    """Coordinates inherited from the root, a group of its own with a time axis, a
    group below it and an empty group."""
    rng = np.random.default_rng(7)
    root = xr.Dataset(
        {"height": (("y", "x"), rng.standard_normal((24, 20)).astype("f4"))},
        coords={"y": np.arange(24.0), "x": np.arange(20.0) / 4},
        attrs={"title": "tree"},
    )
    runs = xr.Dataset(
        {"temp": (("step", "y", "x"), rng.standard_normal((3, 24, 20)), {"units": "K"})},
        coords={"step": [0, 6, 12]},
        attrs={"model": "m"},
    )
    member = xr.Dataset({"count": (("y",), np.arange(24, dtype="i4"))})
    return xr.DataTree.from_dict(
        {"/": root, "/runs": runs, "/runs/member": member, "/empty": xr.Dataset()}
    )


def read(path, engine: str | None, **kwargs) -> xr.DataTree:
    with xr.open_datatree(path, engine=engine, **kwargs) as back:
        return back.load()


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "tree.hurray"
    xh.to_hurray(tree(), path)
    return path


def convert(*argv: str) -> None:
    assert main(["convert", *map(str, argv)]) == 0


def test_a_tree_file_is_rewritten_with_new_settings(source, tmp_path):
    out = tmp_path / "out.hurray"
    convert(source, out, "--codecs", "zlib", "--chunk-order", "morton", "--chunks", "y=8,step=1")
    xr.testing.assert_identical(read(out, "hurray"), tree())
    assert verify_file(out) == []
    reader = xh.open_reader(out)
    temp = reader.variable("runs/temp")
    assert (temp.chunks, temp.chunk_order) == ((1, 8, 20), "morton")
    assert [c["id"] for c in temp.codecs] == ["zlib"]
    assert reader.variable("runs/member/count").chunks == (8,)
    assert reader.variable("height").chunks == (8, 20)


def test_a_tree_goes_to_zarr_and_back(source, tmp_path):
    store, back = tmp_path / "out.zarr", tmp_path / "back.hurray"
    convert(source, store)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the consolidated metadata of the whole tree
        xr.testing.assert_identical(read(store, "zarr"), tree())
    convert(store, back)
    xr.testing.assert_identical(read(back, "hurray"), tree())


@pytest.mark.skipif(
    importlib.util.find_spec("h5netcdf") is None and importlib.util.find_spec("netCDF4") is None,
    reason="needs a netCDF-4 engine",
)
def test_a_tree_goes_to_netcdf_and_back(source, tmp_path):
    netcdf, back = tmp_path / "out.nc", tmp_path / "back.hurray"
    convert(source, netcdf)
    xr.testing.assert_identical(read(netcdf, None), tree())
    convert(netcdf, back)
    xr.testing.assert_identical(read(back, "hurray"), tree())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--chunks", "q=4"], "--chunks names dimensions ['q']"),
        (["--layout", "hilbert", "--chunks", "y=8,x=8"], "group '/runs': variable 'temp'"),
    ],
)
def test_wrong_settings_for_a_tree_are_refused_before_writing(
    source, tmp_path, capsys, argv, message
):
    out = tmp_path / "out.hurray"
    assert main(["convert", str(source), str(out), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_groups_that_do_not_form_a_tree_are_refused(tmp_path, capsys):
    store, out = tmp_path / "loose.zarr", tmp_path / "out.hurray"
    xr.Dataset(coords={"x": [0, 1, 2]}).to_zarr(store, zarr_format=3, consolidated=False)
    child = xr.Dataset({"v": ("x", np.ones(4))}, coords={"x": [5, 6, 7, 8]})
    child.to_zarr(store, group="child", zarr_format=3, consolidated=False)
    assert main(["convert", str(store), str(out)]) == 2
    assert "not aligned" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.skipif(importlib.util.find_spec("scipy") is None, reason="writes netCDF-3 with scipy")
def test_netcdf_3_input_has_no_groups_and_still_converts(tmp_path):
    netcdf, out = tmp_path / "old.nc", tmp_path / "out.hurray"
    ds = xr.Dataset({"v": (("y", "x"), np.arange(12.0).reshape(3, 4))})
    ds.to_netcdf(netcdf, engine="scipy")
    convert(netcdf, out)
    with xr.open_dataset(out, engine="hurray") as back:
        xr.testing.assert_identical(back, ds)


def same_names() -> xr.DataTree:
    """Three groups holding variables of one name and shape but different values, which
    a reader naming dask arrays by file and variable alone would take for one."""
    rng = np.random.default_rng(3)
    return xr.DataTree.from_dict(
        {
            f"/{group}": xr.Dataset(
                {
                    "v": (("y", "x"), rng.standard_normal((12, 10))),
                    "n": (("y",), rng.integers(0, 100, 12).astype("i4")),
                }
            )
            for group in "abc"
        }
    )


def with_same_names(path) -> None:
    xh.to_hurray(same_names(), path, encoding={f"/{g}": {"v": {"chunks": (4, 5)}} for g in "abc"})


def with_overviews(path) -> None:
    rng = np.random.default_rng(4)
    ds = xr.Dataset(
        {"v": (("y", "x"), rng.standard_normal((16, 12)))},
        coords={"y": np.arange(16.0), "x": np.arange(12.0)},
    )
    xh.to_hurray(ds, path, overviews=2, encoding={"v": {"chunks": (4, 4)}})


@pytest.mark.parametrize("suffix", [".zarr", ".nc", ".hurray"])
@pytest.mark.parametrize("make", [with_same_names, with_overviews])
def test_every_group_keeps_its_own_values(tmp_path, suffix, make):
    """Groups whose variables share a name (the levels of a pyramid among them) each
    keep their own values, in every output format."""
    if suffix == ".nc" and importlib.util.find_spec("h5netcdf") is None:
        pytest.skip("reads netCDF-4 with h5netcdf")
    source, out = tmp_path / "source.hurray", tmp_path / f"out{suffix}"
    make(source)
    convert(source, out)
    expected = read(source, "hurray")
    back = read(out, None)
    assert sorted(back.groups) == sorted(expected.groups)
    for node in expected.subtree:
        assert sorted(back[node.path].data_vars) == sorted(node.data_vars)
        for name, var in node.data_vars.items():
            np.testing.assert_array_equal(back[node.path][name].values, var.values)


_OPENED: dict[str, int] = {}
"""Times each path in it was opened since it was put there (see :func:`_count_opens`)."""


def _count_opens(event: str, args: tuple) -> None:
    """An audit hook: counts the openings of the paths in :data:`_OPENED` (the system's
    own record of them, whoever opens)."""
    if event == "open" and _OPENED and isinstance(args[0], str | bytes | os.PathLike):
        path = os.path.abspath(os.fsdecode(args[0]))
        if path in _OPENED:
            _OPENED[path] += 1


sys.addaudithook(_count_opens)  # an audit hook cannot be removed: it does nothing idle


@pytest.mark.parametrize("name", ["in.hurray", "in.bin"])
@pytest.mark.parametrize("make", [with_same_names, with_overviews])
def test_a_hurray_input_is_opened_once(tmp_path, name, make):
    source, out = tmp_path / name, tmp_path / "out.zarr"
    make(source)
    _OPENED[str(source)] = 0
    try:
        convert(source, out)
        # its reader's one opening, and for a name that does not say it is a Hurray
        # file, the look at its first bytes
        assert _OPENED[str(source)] == (1 if name.endswith(".hurray") else 2)
    finally:
        _OPENED.clear()


@pytest.mark.skipif(importlib.util.find_spec("h5netcdf") is None, reason="needs h5netcdf")
def test_convert_closes_a_netcdf_input(tmp_path):
    """No file of the input is left open for the garbage collector to close."""
    source, out = tmp_path / "in.nc", tmp_path / "out.hurray"
    same_names().to_netcdf(source, engine="h5netcdf")
    with (
        xr.set_options(warn_for_unclosed_files=True),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        convert(source, out)
        gc.collect()
    assert [str(w.message) for w in caught if "not already closed" in str(w.message)] == []


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_convert_closes_a_hurray_input(tmp_path):
    source, out = tmp_path / "in.hurray", tmp_path / "out.zarr"
    with_same_names(source)
    convert(source, out)
    held = [os.path.realpath(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")]
    assert str(source) not in held
