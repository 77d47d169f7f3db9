"""VirtualiZarr references into Hurray files, read back through zarr (kerchunk, Icechunk)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh

virtualizarr = pytest.importorskip("virtualizarr")
from obspec_utils.registry import ObjectStoreRegistry  # noqa: E402
from obstore.store import LocalStore  # noqa: E402

from xarray_hurray.zarr.conventions import convention_attrs  # noqa: E402
from xarray_hurray.zarr.virtual import HurrayParser, UnreferenceableWarning  # noqa: E402


def dataset() -> xr.Dataset:
    rng = np.random.default_rng(0)
    v = rng.random((50, 40)).astype("float32")
    v[16:32, 16:32] = np.nan  # one chunk of the fill value alone: missing in the file
    return xr.Dataset(
        {
            "v": (("y", "x"), v),
            "n": (("y", "x"), rng.integers(-5, 5, (50, 40)).astype("int16")),
            "b": (("y", "x"), rng.random((50, 40)) > 0.5),
            "t": ("y", np.arange(50).astype("datetime64[D]").astype("datetime64[ns]")),
            "label": ("x", np.array([f"x{i}" for i in range(40)])),
        },
        coords={"y": np.arange(50), "x": np.arange(40) * 0.5},
        attrs={"title": "virtual"},
    )


ENCODING = {
    "v": {"chunks": (16, 16), "codecs": "zlib", "layout": "hilbert"},
    "n": {"chunks": (16, 8), "codecs": "lz4", "layout": "morton"},
    "b": {"chunks": (32, 32), "codecs": "blosc", "layout": "row-major"},
    "t": {"chunks": (8,), "codecs": None},
}


@pytest.fixture
def virtual(tmp_path: Path):
    """A Hurray file, its expected values, and its virtual dataset."""
    path = tmp_path / "data.hurray"
    xh.to_hurray(dataset(), path, encoding=ENCODING)
    url = path.as_uri()
    registry = ObjectStoreRegistry({tmp_path.as_uri() + "/": LocalStore(str(tmp_path))})
    with pytest.warns(UnreferenceableWarning, match="'label'.*engine='hurray'"):
        vds = virtualizarr.open_virtual_dataset(url, registry=registry, parser=HurrayParser())
    expected = xr.open_dataset(path, engine="hurray").drop_vars("label").load()
    return tmp_path, expected, vds


def test_references_point_into_the_file(virtual) -> None:
    tmp_path, _, vds = virtual
    manifest = vds["v"].data.manifest.dict()
    assert len(manifest) == 4 * 3 - 1 and "1.1" not in manifest  # the missing chunk
    entry = manifest["0.0"]
    assert entry["path"] == (tmp_path / "data.hurray").as_uri()
    assert entry["offset"] > 0 and entry["length"] > 0


def test_kerchunk_references_read_back(virtual) -> None:
    _, expected, vds = virtual
    refs = vds.vz.to_kerchunk(format="dict", zarr_format=3)
    # row-major chunks take standard codecs only; a curve takes this package's codec
    codecs = {
        name: [c["name"] for c in json.loads(refs["refs"][f"{name}/zarr.json"])["codecs"]]
        for name in ("v", "b", "t")
    }
    assert codecs == {
        "v": ["bytes", "numcodecs.hurray", "numcodecs.zlib"],
        "b": ["bytes", "blosc"],
        "t": ["bytes"],
    }
    back = xr.open_dataset(
        "reference://",
        engine="zarr",
        backend_kwargs={"consolidated": False, "storage_options": {"fo": refs}},
    )
    xr.testing.assert_identical(back.load(), expected)


def test_kerchunk_v2_references_carry_the_hurray_filter(virtual) -> None:
    _, expected, vds = virtual
    refs = vds.vz.to_kerchunk(format="dict")
    zarray = refs["refs"]["v/.zarray"]
    assert "hurray" in str(zarray)
    back = xr.open_dataset(
        "reference://",
        engine="zarr",
        backend_kwargs={"consolidated": False, "storage_options": {"fo": refs}},
    )
    # Floats read back exactly; virtualizarr writes zarr's fill value 0 into Zarr v2
    # metadata when a file declares none, which xarray applies as _FillValue to
    # integers and booleans, so those are only compared through Zarr v3 above.
    np.testing.assert_array_equal(back.v.values, expected.v.values)


def icechunk_repository(tmp_path: Path, name: str) -> Any:
    """A new local Icechunk repository in ``tmp_path / name`` whose virtual chunks may
    be read from the files of ``tmp_path``."""
    icechunk = pytest.importorskip("icechunk")
    prefix = tmp_path.as_uri() + "/"
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(
            url_prefix=prefix, store=icechunk.local_filesystem_store(prefix)
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the no-credential sentinel
        return icechunk.Repository.create(
            storage=icechunk.Storage.new_local_filesystem(str(tmp_path / name)),
            config=config,
            authorize_virtual_chunk_access={prefix: None},
        )


def test_icechunk_store_reads_back(virtual) -> None:
    tmp_path, expected, vds = virtual
    repo = icechunk_repository(tmp_path, "repo")
    session = repo.writable_session("main")
    vds.vz.to_icechunk(session.store)
    session.commit("virtual references into data.hurray")
    back = xr.open_zarr(repo.readonly_session("main").store, consolidated=False)
    xr.testing.assert_identical(back.load(), expected)
    np.testing.assert_array_equal(back.n[7:41, 3:29].values, expected.n[7:41, 3:29].values)


def _registry(tmp_path: Path) -> ObjectStoreRegistry:
    return ObjectStoreRegistry({tmp_path.as_uri() + "/": LocalStore(str(tmp_path))})


def _pyramid(tmp_path: Path) -> Path:
    """A pyramid of a field with a CRS (two coarser levels), its levels row-major."""
    from geo_fields import global_field

    path = tmp_path / "pyramid.hurray"
    xh.to_hurray(global_field(2.0), path, overviews=[2, 4])
    return path


def test_the_virtual_tree_holds_every_group_and_the_root_record(tmp_path: Path) -> None:
    path = _pyramid(tmp_path)
    vdt = virtualizarr.open_virtual_datatree(
        path.as_uri(), registry=_registry(tmp_path), parser=HurrayParser()
    )
    with xr.open_datatree(path, engine="hurray") as tree:
        assert sorted(vdt.children) == sorted(tree.children) == ["0", "1", "2"]
        for name in ("0", "1", "2"):
            assert set(vdt[name].data_vars) == set(tree[name].data_vars)
            assert vdt[name]["t"].shape == tree[name]["t"].shape
        # the record as a Zarr group holds it: JSON objects, lists of numbers
        assert vdt.attrs["multiscales"] == json.loads(tree.attrs["multiscales"])
        assert vdt.attrs["spatial:bbox"] == [-180.0, -90.0, 180.0, 90.0]


def test_a_group_is_the_root_of_the_virtual_store(tmp_path: Path) -> None:
    path = _pyramid(tmp_path)
    vds = virtualizarr.open_virtual_dataset(
        path.as_uri(), registry=_registry(tmp_path), parser=HurrayParser(group="1")
    )
    with xr.open_dataset(path, engine="hurray", group="1") as level:
        assert vds["t"].shape == level["t"].shape
        assert vds.attrs["overview_level"] == 1
    from xarray_hurray.errors import HurrayKeyError

    with pytest.raises(HurrayKeyError, match="no group 'nine'"):
        HurrayParser(group="nine")(path.as_uri(), _registry(tmp_path))


@pytest.mark.slow
def test_a_pyramid_and_a_tree_go_into_icechunk_and_read_back_equal(tmp_path: Path) -> None:
    """Every group of a pyramid, and of a tree of nested groups, written as virtual
    references into a local Icechunk repository and read back by xarray's zarr engine,
    equal to the file read with engine='hurray'."""
    pyramid = _pyramid(tmp_path)
    nested = tmp_path / "tree.hurray"
    ds = dataset().drop_vars("label")
    xh.to_hurray(
        xr.DataTree.from_dict(
            {
                "/a": ds,
                "/a/inner": ds.isel(y=slice(5, 20)).rename(y="yi"),
                "/c": ds.v.to_dataset(),
            }
        ),
        nested,
    )
    for path in (pyramid, nested):
        repo = icechunk_repository(tmp_path, f"{path.stem}-repo")
        vdt = virtualizarr.open_virtual_datatree(
            path.as_uri(), registry=_registry(tmp_path), parser=HurrayParser()
        )
        session = repo.writable_session("main")
        vdt.vz.to_icechunk(session.store)
        session.commit(f"virtual references into {path.name}")
        with (
            xr.open_datatree(
                repo.readonly_session("main").store, engine="zarr", consolidated=False
            ) as back,
            xr.open_datatree(path, engine="hurray") as expected,
        ):
            assert sorted(node.path for node in back.subtree) == sorted(
                node.path for node in expected.subtree
            )
            for node in expected.subtree:
                # a pyramid's record as Zarr holds it: JSON objects, not their text
                held = node.to_dataset().load()
                held.attrs = convention_attrs(held.attrs)
                xr.testing.assert_identical(back[node.path].to_dataset().load(), held)
