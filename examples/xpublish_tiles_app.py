"""Serve a Hurray pyramid with xpublish-tiles, opened as it is with no glue:
``xr.open_datatree(FILE, engine="hurray")``.

xpublish-tiles finds the levels of a tree by the ``spatial:transform`` each level's
group holds and reads the CRS from ``proj:code``, both of which a pyramid written by
xarray-hurray carries (docs/spec/overviews.md, "Where the levels lie"); it then
serves each tile from the level its zoom calls for.

Run::

    pip install xarray-hurray xpublish-tiles uvicorn   # Python >= 3.12
    python examples/xpublish_tiles_app.py FILE

then open ``/tiles/WebMercatorQuad/0/0/0?variables=NAME&style=raster/viridis&
colorscalerange=-1,1&width=256&height=256&f=png`` (or ``/tiles/`` for the tilesets).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import xarray as xr
import xpublish
from fastapi import FastAPI
from xpublish_tiles.xpublish.tiles import TilesPlugin


def make_app(path: str | Path) -> FastAPI:
    """The tile server of the pyramid at ``path``."""
    tree = xr.open_datatree(path, engine="hurray", decode_coords="all")
    # xpublish-tiles keeps each level's grid between tiles under this name
    tree.attrs["_xpublish_id"] = str(path)
    rest = xpublish.SingleDatasetRest(tree, plugins={"tiles": TilesPlugin()})
    app: FastAPI = rest.app
    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a Hurray pyramid (to_hurray(..., overviews=N))")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    uvicorn.run(make_app(args.file), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
