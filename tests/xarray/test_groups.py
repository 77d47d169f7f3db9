"""A tree of groups in one file: DataTree, open_groups and open_dataset(group=...)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.cli import main
from xarray_hurray.container import ContainerWriter, DatasetMeta, VariableMeta
from xarray_hurray.errors import HurrayValueError
from xarray_hurray.io import LocalFileSource
from xarray_hurray.layout import RowMajorLayout
from xarray_hurray.testing import CountingSource
from xarray_hurray.zarr.references import UnreferenceableWarning, kerchunk_references


def tree() -> xr.DataTree:
    """Three levels: coordinates inherited from the root, groups with their own
    variables and attributes, a group holding only a group."""
    rng = np.random.default_rng(5)
    root = xr.Dataset(
        {"elevation": (("y", "x"), rng.standard_normal((40, 50)).astype("f4"))},
        coords={"y": np.arange(40.0), "x": np.arange(50.0) * 2},
        attrs={"title": "tree"},
    )
    forecast = xr.Dataset(
        {"t2m": (("step", "y", "x"), rng.standard_normal((3, 40, 50)))},
        coords={"step": [0, 6, 12]},
        attrs={"model": "a"},
    )
    member = xr.Dataset({"flag": (("y",), np.arange(40) % 3 == 0), "label": ((), "m1")})
    return xr.DataTree.from_dict(
        {"/": root, "/forecast": forecast, "/ensemble/member1": member, "/empty": xr.Dataset()}
    )


ENCODING = {"/forecast": {"t2m": {"chunks": (1, 16, 16)}}, "/": {"elevation": {"chunks": (8, 8)}}}


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    out = tmp_path_factory.mktemp("groups") / "tree.hurray"
    xh.to_hurray(tree(), out, encoding=ENCODING)
    return out


def test_open_datatree_gives_the_tree_back(path):
    with xr.open_datatree(path, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), tree())
        assert back["forecast"]["t2m"].encoding["chunks"] == (1, 16, 16)


def test_open_groups_gives_every_group_by_path(path):
    groups = xr.open_groups(path, engine="hurray")
    assert sorted(groups) == ["/", "/empty", "/ensemble", "/ensemble/member1", "/forecast"]
    expected = tree()
    for key, ds in groups.items():
        xr.testing.assert_identical(ds.load(), expected[key].to_dataset(inherit=False))


@pytest.mark.parametrize("group", ["ensemble/member1", "/ensemble/member1", "ensemble/member1/"])
def test_open_dataset_opens_one_group(path, group):
    with xr.open_dataset(path, engine="hurray", group=group) as ds:
        xr.testing.assert_identical(ds.load(), tree()["ensemble/member1"].to_dataset(inherit=False))


def test_a_missing_group_is_named_with_the_ones_there_are(path):
    with pytest.raises(OSError, match=r"no group 'nowhere'.*'/forecast'"):
        xr.open_dataset(path, engine="hurray", group="nowhere")


def test_a_subtree_opens_from_its_group(path):
    expected = tree()
    with xr.open_datatree(path, engine="hurray", group="ensemble") as back:
        assert [node.path for node in back.subtree] == ["/", "/member1"]
        xr.testing.assert_identical(
            back["member1"].to_dataset(inherit=False).load(),
            expected["ensemble/member1"].to_dataset(inherit=False),
        )


def test_a_region_read_in_one_group_touches_nothing_of_the_others(path):
    reader = xh.open_reader(path)
    others = []  # byte ranges of every other group's index and chunks
    for name, _ in reader.metadata.all_variables():
        if name.startswith("forecast/"):
            continue
        others += [(o, o + n) for o, n in reader.index_parts(name)]
        entries = reader.index(name)
        others += [
            (int(o), int(o + s))
            for o, s in zip(entries["offset"], entries["size"], strict=True)
            if s
        ]
    source = CountingSource(LocalFileSource(path))
    ds = xr.open_dataset(source, engine="hurray", group="forecast")
    opened = len(source.requests)
    region = ds["t2m"][1, 10:30, 5:40].values
    np.testing.assert_array_equal(region, tree()["forecast"]["t2m"].values[1, 10:30, 5:40])
    assert source.requests[0] == (0, 65536) and len(source.requests) > opened
    # after the head: the group's index coordinate (step) at open, then the region
    for start, stop in source.requests[1:]:
        assert not any(a < stop and start < b for a, b in others), (start, stop)


def test_the_datatree_accessor_writes_the_tree(tmp_path):
    out = tmp_path / "accessor.hurray"
    assert tree().hurray.to_hurray(out) is None
    with xr.open_datatree(out, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), tree())


def test_trees_from_urls(s3):
    url = f"s3://{s3.bucket}/tree.hurray"
    xh.to_hurray(tree(), url, storage_options=s3.storage_options)
    with xr.open_datatree(url, engine="hurray", storage_options=s3.storage_options) as back:
        xr.testing.assert_identical(back.load(), tree())
    memory = f"memory://groups-{uuid.uuid4().hex}/tree.hurray"
    xh.to_hurray(tree(), memory)
    ds = xr.open_dataset(memory, engine="hurray", group="forecast")
    xr.testing.assert_identical(ds.load(), tree()["forecast"].to_dataset(inherit=False))


def test_a_variable_name_with_a_slash_is_refused_before_writing(tmp_path):
    ds = xr.Dataset({"a/b": (("x",), np.arange(3))})
    with pytest.raises(ValueError, match=r"variable name 'a/b' contains '/'.* put it in a group"):
        xh.to_hurray(ds, tmp_path / "slash.hurray")
    assert not any(tmp_path.iterdir())


def test_encoding_for_a_group_the_tree_lacks_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"groups \['nope'\], which the tree does not have"):
        xh.to_hurray(tree(), tmp_path / "t.hurray", encoding={"/nope": {}})
    assert not any(tmp_path.iterdir())


def test_verify_and_info_walk_every_group(path, capsys):
    from xarray_hurray.cli import main

    assert xh.container.verify_file(path) == []
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    for name in ("forecast/t2m", "ensemble/member1/flag", "elevation"):
        assert f"\n{name} (" in out


def test_writing_into_the_root_of_a_tree_keeps_its_groups(tmp_path):
    out = tmp_path / "tree.hurray"
    xh.to_hurray(tree(), out)
    extra = xr.Dataset(
        {"slope": (("y", "x"), np.ones((40, 50), dtype="f4"))}, attrs={"title": "tree"}
    )
    xh.to_hurray(extra, out, mode="a")
    expected = tree()
    expected["slope"] = extra["slope"]
    with xr.open_datatree(out, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), expected)
    assert xh.container.verify_file(out) == []


def test_groups_opened_with_dask_keep_their_own_values(tmp_path):
    """Variables of one name and shape in three groups, opened with ``chunks`` and
    computed in one graph (a load, a write of the tree): dask must not take them for
    one array."""
    rng = np.random.default_rng(5)
    groups = {f"/{g}": xr.Dataset({"v": (("y", "x"), rng.standard_normal((8, 6)))}) for g in "abc"}
    source, out = tmp_path / "same.hurray", tmp_path / "out.hurray"
    encoding = {path: {"v": {"chunks": (4, 6)}} for path in groups}
    xh.to_hurray(xr.DataTree.from_dict(groups), source, encoding=encoding)
    with xr.open_datatree(source, engine="hurray", chunks={}) as lazy:
        names = {node["v"].data.name for node in lazy.subtree if "v" in node}
        assert len(names) == 3
        xh.to_hurray(lazy, out)
        loaded = lazy.load()
    for path, ds in groups.items():
        xr.testing.assert_identical(loaded[path].to_dataset(), ds)
    with xr.open_datatree(out, engine="hurray") as back:
        for path, ds in groups.items():
            xr.testing.assert_identical(back[path].to_dataset(), ds)


@pytest.fixture
def dotted(tmp_path):
    """A file as earlier writers wrote one for ``group=".."``: a group named ``..``
    (the format allows any name without ``/``), beside a group ``ok``."""
    var = VariableMeta("t", ("k",), (3,), "float64", (3,), RowMajorLayout())
    meta = DatasetMeta(
        attrs={},
        variables=(),
        groups=(
            DatasetMeta(attrs={}, variables=(var,), name=".."),
            DatasetMeta(attrs={}, variables=(var,), name="ok"),
        ),
    )
    path = tmp_path / "dotted.hurray"
    with ContainerWriter(path, meta) as writer:
        writer.write_chunk("../t", 0, np.arange(3.0).astype("<f8").tobytes())
        writer.write_chunk("ok/t", 0, np.ones(3).astype("<f8").tobytes())
    return path


def test_a_group_named_with_periods_alone_is_read_by_its_path_not_as_a_tree(dotted):
    with pytest.raises(
        HurrayValueError, match=r"'/\.\.' has a name of periods alone.*open_dataset"
    ):
        xr.open_datatree(dotted, engine="hurray")
    with xr.open_dataset(dotted, engine="hurray", group="..") as ds:
        np.testing.assert_array_equal(ds["t"].values, np.arange(3.0))
    assert sorted(xr.open_groups(dotted, engine="hurray")) == ["/", "/..", "/ok"]


def test_references_leave_out_a_group_named_with_periods_alone(dotted):
    with pytest.warns(UnreferenceableWarning, match="'../t' \\(its group's name is periods"):
        refs = kerchunk_references(xh.open_reader(dotted), "file:///dotted.hurray")["refs"]
    assert sorted(refs) == ["ok/t/c/0", "ok/t/zarr.json", "ok/zarr.json", "zarr.json"]


@pytest.mark.parametrize("suffix", [".zarr", ".nc", ".hurray"])
def test_convert_refuses_a_group_named_with_periods_alone(dotted, capsys, suffix):
    out = dotted.with_name(f"out{suffix}")
    assert main(["convert", str(dotted), str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "its group '/..' has a name of periods alone" in err
    assert not out.exists()
