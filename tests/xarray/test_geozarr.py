"""GeoZarr metadata of pyramids: the ``multiscales`` (v1), ``proj`` and ``spatial``
conventions at the root, against values worked out by hand from the conventions'
texts, the same in a Hurray file, a Zarr store and references, and nothing of them
where a dataset has no CRS or no regular grid."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import pytest
import xarray as xr
import zarr
from geo_fields import WKT1_32632, WKT2_4326, WKT2_CUSTOM, global_field, utm_field
from hypothesis import given, settings

import xarray_hurray as xh
from xarray_hurray.container import ContainerReader
from xarray_hurray.io import LocalFileSource
from xarray_hurray.xarray.geozarr import grid_of, proj_attrs
from xarray_hurray.zarr.references import kerchunk_references


def test_a_global_field_gets_the_conventions_as_worked_out_by_hand():
    tree = xh.multiscale(global_field(), [2, 4])
    attrs = tree.attrs
    assert [c["uuid"] for c in attrs["zarr_conventions"]] == [
        "d35379db-88df-4056-af3a-620245f8e347",
        "f17cb550-5864-4468-aeb7-f3180cfb622f",
        "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4",
    ]
    multiscales_entry = attrs["zarr_conventions"][0]
    assert multiscales_entry["schema_url"] == (
        "https://raw.githubusercontent.com/zarr-conventions/multiscales/refs/tags/v1/schema.json"
    )
    assert multiscales_entry["spec_url"] == (
        "https://github.com/zarr-conventions/multiscales/blob/v1/README.md"
    )
    assert attrs["proj:code"] == "EPSG:4326" and "proj:wkt2" not in attrs
    assert attrs["spatial:dimensions"] == ["lat", "lon"]
    assert attrs["spatial:bbox"] == [-180.0, -90.0, 180.0, 90.0]
    layout = attrs["multiscales"]["layout"]
    assert layout == [
        {
            "asset": "0",
            "transform": {"scale": [1.0, 1.0], "translation": [0.0, 0.0]},
            "spatial:shape": [180, 360],
            "spatial:transform": [1.0, 0.0, -180.0, 0.0, -1.0, 90.0],
        },
        {
            "asset": "1",
            "derived_from": "0",
            "transform": {"scale": [2.0, 2.0], "translation": [0.0, 0.0]},
            "spatial:shape": [90, 180],
            "spatial:transform": [2.0, 0.0, -180.0, 0.0, -2.0, 90.0],
        },
        {
            "asset": "2",
            "derived_from": "0",
            "transform": {"scale": [4.0, 4.0], "translation": [0.0, 0.0]},
            "spatial:shape": [45, 90],
            "spatial:transform": [4.0, 0.0, -180.0, 0.0, -4.0, 90.0],
        },
    ]
    assert attrs["multiscales"]["resampling_method"] == "average"
    assert "version" not in attrs["multiscales"]


def test_a_wkt1_utm_field_named_in_the_encoding_gets_its_code():
    tree = xh.multiscale(utm_field(), [2, 4])
    assert tree.attrs["proj:code"] == "EPSG:32632"
    assert tree.attrs["spatial:dimensions"] == ["y", "x"]
    assert tree.attrs["spatial:bbox"] == [500_000.0, 4_999_520.0, 500_640.0, 5_000_000.0]
    layout = tree.attrs["multiscales"]["layout"]
    assert layout[2]["spatial:shape"] == [12, 16]
    assert layout[2]["spatial:transform"] == [40.0, 0.0, 500_000.0, 0.0, -40.0, 5_000_000.0]


@pytest.mark.parametrize(
    ("grid_mapping", "expected"),
    [
        ({"crs_wkt": WKT2_4326}, {"proj:code": "EPSG:4326"}),
        ({"spatial_ref": WKT1_32632}, {"proj:code": "EPSG:32632"}),
        # the IDs of its base CRS and method are not the projected CRS's code
        ({"crs_wkt": WKT2_CUSTOM}, {"proj:wkt2": WKT2_CUSTOM}),
        ({"epsg_code": "EPSG:3035"}, {"proj:code": "EPSG:3035"}),
        ({"epsg_code": 3035}, {"proj:code": "EPSG:3035"}),
        ({"proj:code": "epsg:3857"}, {"proj:code": "EPSG:3857"}),
        ({"grid_mapping_name": "latitude_longitude"}, None),  # CF parameters: no CRS text
        ({"crs_wkt": ""}, None),
    ],
)
def test_the_crs_of_a_grid_mapping(grid_mapping, expected):
    assert proj_attrs(grid_mapping) == expected


def test_a_quoted_bracket_does_not_hide_the_code():
    wkt = WKT2_4326.replace('"WGS 84"', '"WGS ""84"" [a]"', 1)
    assert proj_attrs({"crs_wkt": wkt}) == {"proj:code": "EPSG:4326"}


def test_a_wkt1_text_without_a_code_becomes_wkt2_through_pyproj():
    pyproj = pytest.importorskip("pyproj")
    wkt1 = WKT1_32632.replace(',AUTHORITY["EPSG","32632"]]', "]")
    ((key, text),) = proj_attrs({"spatial_ref": wkt1}).items()
    assert key == "proj:wkt2" and text.startswith("PROJCRS[")
    assert pyproj.CRS.from_wkt(text).equals(pyproj.CRS.from_wkt(wkt1))


def test_a_wkt1_text_without_a_code_gives_no_crs_without_pyproj(monkeypatch):
    """proj:wkt2 must be WKT2: a WKT1 text pyproj is not there to turn is left out."""
    monkeypatch.setitem(sys.modules, "pyproj", None)  # import pyproj raises ImportError
    wkt1 = WKT1_32632.replace(',AUTHORITY["EPSG","32632"]]', "]")
    assert proj_attrs({"spatial_ref": wkt1}) is None
    assert proj_attrs({"spatial_ref": WKT1_32632}) == {"proj:code": "EPSG:32632"}


def test_data_without_a_crs_keeps_the_record_it_had():
    ds = global_field().drop_vars("spatial_ref")
    del ds["t"].attrs["grid_mapping"]
    attrs = xh.multiscale(ds, [2, 4]).attrs
    assert set(attrs) == {"zarr_conventions", "multiscales", "hurray_overviews"}
    assert [c["name"] for c in attrs["zarr_conventions"]] == ["multiscales"]
    assert all(not k.startswith("spatial:") for e in attrs["multiscales"]["layout"] for k in e)


@pytest.mark.parametrize(
    "change",
    [
        lambda ds: ds.assign_coords(lon=ds.lon + np.linspace(0, 2, 360) ** 2),  # irregular
        lambda ds: ds.rename(lat="a", lon="b").assign_coords(
            b=("b", ds.lon.values), a=("a", ds.lat.values)
        ),  # neither an attribute nor a name says which is X
        lambda ds: ds.assign(u=ds.t.assign_attrs(grid_mapping="other"), other=ds.spatial_ref),
        lambda ds: ds.assign(t=ds.t.assign_attrs(grid_mapping="missing")),
    ],
    ids=["irregular", "no-axes", "two-grid-mappings", "missing-grid-mapping"],
)
def test_nothing_false_is_written_where_the_grid_is_not_known(change):
    ds = change(global_field())
    assert grid_of(ds, ds.t.dims) is None
    assert "spatial:bbox" not in xh.multiscale(ds, [2, 4]).attrs


@settings(max_examples=25)
@given(
    height=st.integers(4, 40),
    width=st.integers(4, 40),
    dy=st.sampled_from([-0.5, 0.25, -30.0]),
    dx=st.sampled_from([0.5, -0.25, 30.0]),
    factors=st.sampled_from([[2], [2, 4], [3, 6]]),
)
def test_each_level_transform_gives_its_cell_centres(height, width, dy, dx, factors):
    """``spatial:transform`` at a cell's centre (index + 0.5) is the level's coordinate
    there, for every cell made of a whole window (the last may hold fewer cells)."""
    y = 1000 + dy * np.arange(height)
    x = -50 + dx * np.arange(width)
    ds = xr.Dataset(
        {"v": (("y", "x"), np.ones((height, width), "float32"), {"grid_mapping": "crs"})},
        coords={"y": ("y", y, {"axis": "Y"}), "x": ("x", x, {"axis": "X"})},
    ).assign(crs=((), 0, {"epsg_code": "EPSG:3857"}))
    if max(factors) >= 2 * max(height, width):
        return
    tree = xh.multiscale(ds, factors)
    for entry, factor in zip(tree.attrs["multiscales"]["layout"], [1, *factors], strict=True):
        level = tree[entry["asset"]]
        a, b, c, d, e, f = entry["spatial:transform"]
        assert b == d == 0
        assert entry["spatial:shape"] == [level.sizes["y"], level.sizes["x"]]
        whole_x = width // factor
        whole_y = height // factor
        np.testing.assert_allclose(
            a * (np.arange(whole_x) + 0.5) + c, level["x"].values[:whole_x], atol=1e-9
        )
        np.testing.assert_allclose(
            e * (np.arange(whole_y) + 0.5) + f, level["y"].values[:whole_y], atol=1e-9
        )


def _expected_root(ds: xr.Dataset) -> dict:
    return xh.multiscale(ds, [2, 4]).attrs


def test_the_hurray_file_the_zarr_store_and_references_hold_the_same(tmp_path):
    ds = global_field()
    expected = _expected_root(ds)
    xh.to_hurray(ds, tmp_path / "p.hurray", overviews=[2, 4])
    xh.to_zarr(ds, tmp_path / "p.zarr", overviews=[2, 4])
    from_zarr = dict(zarr.open_group(tmp_path / "p.zarr", mode="r").attrs)
    reader = ContainerReader(LocalFileSource(tmp_path / "p.hurray"))
    refs = kerchunk_references(reader, (tmp_path / "p.hurray").as_uri())
    from_refs = json.loads(refs["refs"]["zarr.json"])["attributes"]
    with xr.open_datatree(tmp_path / "p.hurray", engine="hurray") as tree:
        held = dict(tree.attrs)
    for key in ("multiscales", "zarr_conventions"):
        assert json.loads(held.pop(key)) == expected[key]
    assert {k: np.asarray(v).tolist() for k, v in held.items()} == {
        k: v for k, v in expected.items() if k not in ("multiscales", "zarr_conventions")
    }
    from_refs.pop("hurray_references")
    assert from_zarr == from_refs == json.loads(json.dumps(expected))


def test_our_reader_opens_and_picks_levels_of_the_new_record(tmp_path):
    xh.to_hurray(global_field(), tmp_path / "p.hurray", overviews=[2, 4])
    with xr.open_datatree(tmp_path / "p.hurray", engine="hurray") as tree:
        assert tree.hurray.level(resolution={"lon": 2.5}).attrs["overview_level"] == 1
    with xr.open_dataset(tmp_path / "p.hurray", engine="hurray") as finest:
        assert finest.attrs["overview_level"] == 0


def test_a_field_rioxarray_wrote_and_read_gets_its_code(tmp_path):
    """rioxarray names its ``x`` and ``y`` by no attribute, and a file it wrote, read
    with ``decode_coords="all"``, names the grid mapping in the encoding."""
    pytest.importorskip("rioxarray")
    ds = utm_field().drop_vars("crs")
    for name in ("x", "y"):
        ds[name].attrs.clear()
    ds["dem"].encoding.clear()
    ds = ds.rio.write_crs("EPSG:32632")
    ds.to_netcdf(tmp_path / "utm.nc")
    with xr.open_dataset(tmp_path / "utm.nc", decode_coords="all") as read:
        attrs = xh.multiscale(read.load(), [2]).attrs
    assert attrs["proj:code"] == "EPSG:32632"
    assert attrs["spatial:dimensions"] == ["y", "x"]
    assert attrs["multiscales"]["layout"][1]["spatial:transform"] == [
        20.0,
        0.0,
        500_000.0,
        0.0,
        -20.0,
        5_000_000.0,
    ]


def test_an_append_keeps_where_the_levels_lie(tmp_path):
    """Values appended without their grid mapping leave the file's record as it was."""
    path = tmp_path / "p.hurray"
    ds = global_field().expand_dims(time=np.array(["2024-01-01"], "datetime64[ns]"))
    ds["spatial_ref"] = global_field().spatial_ref
    xh.to_hurray(ds, path, overviews=[2, 4])
    with xr.open_datatree(path, engine="hurray") as tree:
        before = {node.path: dict(node.attrs) for node in tree.subtree}
    more = ds.assign_coords(time=ds.time + np.timedelta64(1, "D")).drop_vars("spatial_ref")
    more["t"].attrs.pop("grid_mapping")
    xh.to_hurray(more, path, append_dim="time")
    with xr.open_datatree(path, engine="hurray") as tree:
        assert tree["2"].sizes["time"] == 2
        assert {node.path: dict(node.attrs) for node in tree.subtree} == before


def test_each_level_group_says_where_it_lies(tmp_path):
    """The level groups carry the proj and spatial conventions with their own shape
    and transform (clients that open a level alone read them there), in the tree,
    the Hurray file and the Zarr store alike."""
    ds = global_field()
    tree = xh.multiscale(ds, [2, 4])
    xh.to_hurray(ds, tmp_path / "p.hurray", overviews=[2, 4])
    xh.to_zarr(ds, tmp_path / "p.zarr", overviews=[2, 4])
    store = zarr.open_group(tmp_path / "p.zarr", mode="r")
    with xr.open_datatree(tmp_path / "p.hurray", engine="hurray") as hurray:
        for entry in tree.attrs["multiscales"]["layout"]:
            for attrs in (
                tree[entry["asset"]].attrs,
                dict(store[entry["asset"]].attrs),
                {
                    **hurray[entry["asset"]].attrs,
                    "zarr_conventions": json.loads(
                        hurray[entry["asset"]].attrs["zarr_conventions"]
                    ),
                },
            ):
                assert [c["name"] for c in attrs["zarr_conventions"]] == ["proj", "spatial"]
                assert attrs["proj:code"] == "EPSG:4326"
                assert attrs["spatial:transform"] == entry["spatial:transform"]
                assert attrs["spatial:shape"] == entry["spatial:shape"]
                assert attrs["spatial:dimensions"] == ["lat", "lon"]


def test_a_file_of_the_older_record_reads_its_levels_right():
    """A pyramid written before the v1 record (v0.1.0 URLs, level 2 derived from level
    1 with its scale against level 0), as a Zarr store written then holds it: the
    levels are read from the record of how they were made and the layout's assets,
    never from its transforms, so each level is picked by its own cells.  (The file
    holds the metadata and the chunks, byte for byte, of such a pyramid that a draft
    of the format held, in format 1.3.)"""
    path = Path(__file__).parents[1] / "data" / "hurray_1_3_pyramid_older_record.hurray"
    with xr.open_datatree(path, engine="hurray") as tree:
        layout = json.loads(tree.attrs["multiscales"])["layout"]
        assert layout[2]["derived_from"] == "1" and layout[2]["transform"]["scale"] == [4.0, 4.0]
        assert tree.hurray.level(size={"x": 3}).attrs["overview_factor"] == 2
        assert tree.hurray.level(size={"x": 2}).attrs["overview_factor"] == 4
        assert "spatial:bbox" not in tree.attrs
