"""Which storage setting wins, and the warning when a variable's own encoding takes the
place of an argument the caller gave: an ``encoding=`` entry, then the settings the
variable carries from the file it was read from, then ``layout``, ``chunk_order`` and
``codecs``; a :class:`SettingsKeptWarning` names the variables and what they kept,
and nothing warns when the caller gave nothing or the same."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.errors import SettingsKeptWarning


@pytest.fixture
def stored(tmp_path) -> xr.Dataset:
    """A file written with the defaults (zstd, Hilbert chunk order, row-major
    elements), opened: its variables carry those settings in their encoding."""
    rng = np.random.default_rng(0)
    ds = xr.Dataset(
        {"t2m": (("time", "y", "x"), rng.random((2, 64, 64)).astype("float32"))},
        coords={"time": pd.date_range("2024-01-01", periods=2), "y": np.arange(64.0)},
    )
    xh.to_hurray(ds, tmp_path / "source.hurray", encoding={"t2m": {"chunks": (1, 32, 32)}})
    with xr.open_dataset(tmp_path / "source.hurray", engine="hurray") as opened:
        yield opened


def settings(path) -> dict[str, tuple[str, str]]:
    """The chunk order and first codec of every variable of the file at ``path``."""
    return {
        var.name: (var.chunk_order, var.codecs[0]["id"] if var.codecs else "none")
        for var in xh.open_reader(str(path)).metadata.variables
    }


@contextmanager
def no_warning() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", SettingsKeptWarning)
        yield


def test_settings_carried_from_the_file_win_over_arguments_given_and_are_named(stored, tmp_path):
    out = tmp_path / "out.hurray"
    with pytest.warns(SettingsKeptWarning) as caught:
        xh.to_hurray(stored, out, codecs="zlib", chunk_order="row-major")
    (message,) = [str(w.message) for w in caught]
    assert "'t2m', 'time', 'y' keep chunk_order='hilbert' (not 'row-major'), " in message
    assert "codecs='zstd' (not 'zlib')" in message and "ds.drop_encoding()" in message
    # the documented winner: the variable's own encoding
    assert set(settings(out).values()) == {("hilbert", "zstd")}


def test_nothing_warns_when_the_caller_gave_nothing_or_the_same(stored, tmp_path):
    with no_warning():
        xh.to_hurray(stored, tmp_path / "a.hurray")
        xh.to_hurray(
            stored, tmp_path / "b.hurray", codecs="zstd", chunk_order="hilbert", layout="row-major"
        )
        stored.hurray.to_hurray(tmp_path / "c.hurray", codecs=[{"id": "zstd", "level": 0}])


def test_an_encoding_entry_or_dropped_encoding_lets_the_arguments_apply(stored, tmp_path):
    given = {name: {"codecs": "lz4"} for name in stored.variables}
    with no_warning():
        xh.to_hurray(stored, tmp_path / "a.hurray", codecs="zlib", encoding=given)
        xh.to_hurray(stored.drop_encoding(), tmp_path / "b.hurray", codecs="zlib")
    assert set(settings(tmp_path / "a.hurray").values()) == {("hilbert", "lz4")}
    assert set(settings(tmp_path / "b.hurray").values()) == {("hilbert", "zlib")}
    # one variable with an entry: only the others are named
    with pytest.warns(SettingsKeptWarning, match=r": 'time', 'y' keep codecs='zstd'"):
        xh.to_hurray(stored, tmp_path / "c.hurray", codecs="zlib", encoding={"t2m": {}})


def test_a_layout_is_compared_once_fitted_to_the_chunks(stored, tmp_path):
    # the file's variables carry the descriptor "auto" was fitted to (Morton for
    # 1 x 32 x 32 chunks): "auto" asks for the same, "hilbert" for another
    xh.to_hurray(stored.drop_encoding(), tmp_path / "auto.hurray", layout="auto")
    with xr.open_dataset(tmp_path / "auto.hurray", engine="hurray") as fitted:
        with no_warning():
            xh.to_hurray(fitted[["t2m"]], tmp_path / "a.hurray", layout="auto")
        with pytest.warns(
            SettingsKeptWarning, match=r"'t2m' keep layout='morton' \(not 'row-major'\)"
        ):
            xh.to_hurray(
                fitted[["t2m"]].drop_vars(["time", "y"]), tmp_path / "b.hurray", layout="row-major"
            )


def test_variables_the_file_holds_keep_its_settings_without_a_warning(stored, tmp_path):
    later = stored.assign_coords(time=stored.time + np.timedelta64(2, "D"))
    target = tmp_path / "grown.hurray"
    xh.to_hurray(stored, target)
    with no_warning():
        xh.to_hurray(later, target, append_dim="time", codecs="zlib", chunk_order="morton")
    assert set(settings(target).values()) == {("hilbert", "zstd")}


def test_a_tree_and_a_pyramid_name_the_variables_by_path_once(stored, tmp_path):
    tree = xr.DataTree.from_dict({"/a": stored[["t2m"]]})
    with pytest.warns(
        SettingsKeptWarning, match=r": 'a/t2m', 'a/time', 'a/y' keep codecs"
    ) as caught:
        xh.to_hurray(tree, tmp_path / "tree.hurray", codecs="zlib")
    assert len(caught) == 1
    with pytest.warns(SettingsKeptWarning) as caught:
        xh.to_hurray(stored, tmp_path / "pyramid.hurray", codecs="zlib", overviews=1)
    assert len(caught) == 1 and "'t2m', 'time', 'y' keep codecs='zstd'" in str(caught[0].message)
    with no_warning():  # an entry of level 0 is no carried setting of the levels
        given = {name: {"codecs": "lz4"} for name in stored.variables}
        xh.to_hurray(stored, tmp_path / "p2.hurray", codecs="zlib", overviews=1, encoding=given)
