"""Serve map tiles of Hurray files with titiler.xarray, each tile from the pyramid
level its zoom calls for (``xarray_hurray.maps.HurrayReader``, the ``titiler`` extra).

The application is titiler.xarray's own tile endpoints with the Hurray reader in
place of the Zarr one: a tile of ``/tiles/WebMercatorQuad/{z}/{x}/{y}.png?url=FILE&
variable=NAME`` is read from the coarsest level whose cells are no larger than the
tile's, and every file stays open between tiles.

Run::

    pip install "xarray-hurray[titiler]" uvicorn
    python examples/titiler_app.py           # a demo pyramid in a temporary folder
    python examples/titiler_app.py FILE      # a pyramid of yours

then open the printed tile URL (or ``/docs`` for every endpoint).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr
from fastapi import FastAPI
from titiler.core.errors import DEFAULT_STATUS_CODES, add_exception_handlers
from titiler.xarray.factory import TilerFactory

import xarray_hurray as xh
from xarray_hurray.maps import HurrayReader


def make_app() -> FastAPI:
    """The tile server: titiler.xarray's endpoints reading Hurray files by level."""
    app = FastAPI(title="Hurray tiles")
    tiler = TilerFactory(reader=HurrayReader)
    app.include_router(tiler.router, tags=["Hurray"])
    add_exception_handlers(app, DEFAULT_STATUS_CODES)
    return app


def demo_pyramid(folder: Path) -> Path:
    """A global 0.25° field in EPSG:4326 with two coarser levels, written as a
    Hurray pyramid."""
    lat = np.arange(89.875, -90, -0.25)
    lon = np.arange(-179.875, 180, 0.25)
    values = (np.cos(np.radians(lat))[:, None] * np.sin(np.radians(2 * lon))).astype("f4")
    ds = xr.Dataset(
        {"t": (("lat", "lon"), values, {"grid_mapping": "crs"}), "crs": ((), 0)},
        coords={"lat": ("lat", lat), "lon": ("lon", lon)},
    )
    ds["crs"].attrs["epsg_code"] = "EPSG:4326"
    path = folder / "demo.hurray"
    xh.to_hurray(ds, path, overviews=2)
    return path


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", help="a Hurray file (default: a demo pyramid)")
    parser.add_argument("--variable", default="t")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(args.file) if args.file else demo_pyramid(Path(folder))
        print(
            f"http://127.0.0.1:{args.port}/tiles/WebMercatorQuad/0/0/0.png?"
            f"url={path.resolve()}&variable={args.variable}&rescale=-1,1&colormap_name=viridis"
        )
        uvicorn.run(make_app(), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
