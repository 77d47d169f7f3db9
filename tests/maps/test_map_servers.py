"""The map servers and readers of GeoZarr, in-process on real files: the example apps
of titiler.xarray and xpublish-tiles through FastAPI's TestClient, and rio-tiler's
GeoZarr GroupReader on the to_zarr pyramid.  Each tile's pixels are checked against
the cells they must come from: the fields hold their own cell centres."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import io
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("titiler.xarray")

import morecantile
import xarray as xr
from fastapi.testclient import TestClient
from geo_fields import cell_of, position_field
from packaging.version import Version
from titiler.xarray.io import Reader

import xarray_hurray as xh
from xarray_hurray.maps import open_finest

pytestmark = pytest.mark.slow  # servers

EXAMPLES = Path(__file__).parents[2] / "examples"
TMS = morecantile.tms.get("WebMercatorQuad")
EARTH = 6378137.0


def example(name: str):
    """The example module ``examples/NAME.py``, imported."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The position field at 0.25° as a Hurray pyramid and a to_zarr pyramid (levels
    of 0.25°, 0.5° and 1° cells)."""
    folder = tmp_path_factory.mktemp("servers")
    ds = position_field(0.25)
    xh.to_hurray(ds, folder / "p.hurray", overviews=2)
    xh.to_zarr(ds, folder / "p.zarr", overviews=2)
    return folder / "p.hurray", folder / "p.zarr"


def pixel_centres(z: int, x: int, y: int, size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """The latitude and longitude of the centre of every pixel of a web-mercator tile."""
    left, bottom, right, top = TMS.xy_bounds(morecantile.Tile(x, y, z))
    centres = (np.arange(size) + 0.5) / size
    mx = left + centres * (right - left)
    my = top - centres * (top - bottom)
    lon = np.degrees(mx / EARTH)
    lat = np.degrees(2 * np.arctan(np.exp(my / EARTH)) - math.pi / 2)
    return np.broadcast_to(lat[:, None], (size, size)), np.broadcast_to(lon, (size, size))


def level_of(values: np.ndarray, z: int, x: int, y: int, slack: float = 0.5) -> set[float]:
    """The cell sizes (of 0.25, 0.5, 1) whose cells the valid pixels of a tile of the
    position field were read from, once each pixel's cell is checked to lie near the
    pixel's centre: within ``slack`` cells and half a pixel (half a cell: the cell
    holding it, as nearest resampling gives)."""
    lat, lon = pixel_centres(z, x, y, values.shape[-1])
    valid = np.isfinite(values)
    cell_lat, cell_lon = cell_of(values[valid])
    pixel = (360 / 2**z) / values.shape[-1]
    sizes = set()
    for size in (0.25, 0.5, 1.0):
        on_grid = np.isclose(((cell_lon + 180) / size - 0.5) % 1, 0, atol=1e-6)
        if on_grid.all():
            sizes.add(size)
            near = slack * size + pixel / 2 + 1e-9
            assert np.abs(cell_lon - lon[valid]).max() <= near
            assert np.abs(cell_lat - lat[valid]).max() <= near
    return sizes


@pytest.mark.parametrize(("tile", "cell"), [((0, 0, 0), 1.0), ((1, 0, 1), 0.5), ((4, 8, 5), 0.25)])
def test_the_titiler_example_serves_each_tile_from_its_level(files, tile, cell):
    hurray, _ = files
    z, x, y = tile
    client = TestClient(example("titiler_app").make_app())
    answer = client.get(
        f"/tiles/WebMercatorQuad/{z}/{x}/{y}.npy", params={"url": str(hurray), "variable": "t"}
    )
    assert answer.status_code == 200, answer.text
    data, mask = np.load(io.BytesIO(answer.content))
    values = np.where(mask > 0, data, np.nan)
    # the finest level whose cells all the pixels come from, at their places
    assert min(level_of(values, z, x, y)) == cell
    group = {1.0: "2", 0.5: "1", 0.25: "0"}[cell]
    with Reader(str(hurray), "t", group=group, opener=open_finest) as reader:
        np.testing.assert_array_equal(data, reader.tile(x, y, z).data[0])


def test_the_xpublish_tiles_example_serves_the_pyramid_opened_as_a_tree(files):
    pytest.importorskip("xpublish_tiles")
    # its module has no __version__; 0.12 and later (Python >= 3.12) find the levels
    if Version(importlib.metadata.version("xpublish-tiles")) < Version("0.12"):
        pytest.skip("xpublish-tiles before 0.12 (Python 3.11) serves no trees of levels")
    from PIL import Image
    from xpublish_tiles.multiscale import get_resolution_level, scan_resolution_levels

    hurray, _ = files
    with xr.open_datatree(hurray, engine="hurray") as tree:
        found = [(level.path, level.pixel_size) for level in scan_resolution_levels(tree)]
    assert found == [("0", 0.25), ("1", 0.5), ("2", 1.0)]
    client = TestClient(example("xpublish_tiles_app").make_app(hurray))
    assert client.get("/tiles/").status_code == 200
    query = {
        "variables": "t",
        "style": "raster/viridis",
        "colorscalerange": "-900000,900000",
        "width": 256,
        "height": 256,
        "f": "png",
    }
    # z0 from the coarsest level, z4 from level 0 (xpublish-tiles' own choice)
    with xr.open_datatree(hurray, engine="hurray") as tree:
        assert get_resolution_level(tree, zoom=0, tms=TMS).path == "2"
        assert get_resolution_level(tree, zoom=4, tms=TMS).path == "0"
    tiles = {}
    for tile in ("0/0/0", "4/8/6"):
        answer = client.get(f"/tiles/WebMercatorQuad/{tile}", params=query)
        assert answer.status_code == 200, answer.text
        tiles[tile] = np.asarray(Image.open(io.BytesIO(answer.content)).convert("RGBA"))
    # the same tile as xpublish-tiles draws it from the levels in memory
    import xpublish
    from xpublish_tiles.xpublish.tiles import TilesPlugin

    memory = xh.multiscale(position_field(0.25), 2)
    memory.attrs["_xpublish_id"] = "memory"
    rest = TestClient(xpublish.SingleDatasetRest(memory, plugins={"tiles": TilesPlugin()}).app)
    for tile, image in tiles.items():
        expected = rest.get(f"/tiles/WebMercatorQuad/{tile}", params=query)
        expected_image = np.asarray(Image.open(io.BytesIO(expected.content)).convert("RGBA"))
        np.testing.assert_array_equal(image, expected_image)


@pytest.mark.parametrize("tile", [(0, 0, 0), (1, 0, 1), (3, 2, 3), (6, 20, 25)])
def test_rio_tiler_geozarr_reader_reads_the_to_zarr_pyramid(files, tile):
    pytest.importorskip("isochron")  # rio-tiler's zarr extra
    import zarr
    from rio_tiler.experimental.zarr import GroupReader

    _, store = files
    z, x, y = tile
    with GroupReader(zarr.open_group(store, mode="r")) as reader:
        assert reader.crs.to_epsg() == 4326
        np.testing.assert_allclose(reader.bounds, (-180, -90, 180, 90))
        image = reader.tile(x, y, z, variables=["t"])
    values = image.array.data[0].astype("float64")
    # rio-tiler reads a window at about the tile's resolution and warps it, two
    # nearest resamplings: a pixel may come from the cell next to its own
    sizes = level_of(values, z, x, y, slack=1.5)
    assert sizes  # every pixel from one level's cells, each near its place
    if z == 0:
        assert min(sizes) > 0.25  # a coarser level than level 0


@pytest.mark.parametrize(("width", "cell"), [(24, 0.25), (12, 0.5), (6, 1.0)])
def test_rio_tiler_geozarr_reader_places_every_cell(files, width, cell):
    """Read in the data's own CRS, on pixels of a level's cells, every pixel is the
    cell at its place: the level's spatial:transform read as it was written."""
    pytest.importorskip("isochron")
    import zarr
    from rasterio.crs import CRS
    from rio_tiler.experimental.zarr import GroupReader

    _, store = files
    wgs84 = CRS.from_epsg(4326)
    with GroupReader(zarr.open_group(store, mode="r")) as reader:
        image = reader.part(
            (-68, 30, -62, 42), dst_crs=wgs84, bounds_crs=wgs84, variables=["t"],
            width=width, height=width * 2,
        )  # fmt: skip
    lat, lon = cell_of(image.array.data[0].astype("float64"))
    np.testing.assert_array_equal(lon[0], -68 + cell * (np.arange(width) + 0.5))
    np.testing.assert_array_equal(lat[:, 0], 42 - cell * (np.arange(2 * width) + 0.5))


def test_gdal_reads_each_level_through_references(files, tmp_path):
    """GDAL (rasterio's) reads every level of ``hurray refs`` of the pyramid: its CRS,
    its geotransform the level's spatial:transform, its values the file's (the
    command docs/zarr.md gives)."""
    import json

    import rasterio

    from xarray_hurray.container import ContainerReader
    from xarray_hurray.io import LocalFileSource
    from xarray_hurray.zarr.references import kerchunk_references

    hurray, _ = files
    refs = kerchunk_references(ContainerReader(LocalFileSource(hurray)), hurray.as_uri())
    path = tmp_path / "refs.json"
    path.write_text(json.dumps(refs))
    layout = json.loads(refs["refs"]["zarr.json"])["attributes"]["multiscales"]["layout"]
    with xr.open_datatree(hurray, engine="hurray") as tree:
        for entry in layout:
            name = f'ZARR:"/vsikerchunk_json_ref/{{{path}}}":/{entry["asset"]}/t'
            with rasterio.open(name) as level:
                assert level.crs.to_epsg() == 4326
                assert list(level.transform)[:6] == entry["spatial:transform"]
                assert [level.height, level.width] == entry["spatial:shape"]
                values = level.read(1)
            np.testing.assert_array_equal(values, tree[entry["asset"]]["t"].values)
