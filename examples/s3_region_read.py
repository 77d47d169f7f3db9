"""Write a Hurray file to S3 and read one region of it, counting the requests.

The example starts its own S3-compatible server (moto) on 127.0.0.1, so it needs no
network and no account; point ``STORAGE_OPTIONS`` at a real endpoint to use S3.

Run::

    python examples/s3_region_read.py
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

import numpy as np
import s3fs
import xarray as xr
from moto.server import ThreadedMotoServer

import xarray_hurray as xh
from xarray_hurray.container import ContainerReader
from xarray_hurray.io import FsspecSource
from xarray_hurray.testing import CountingSource


def free_port() -> int:
    """A TCP port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def storage_options(endpoint: str) -> dict[str, Any]:
    """fsspec options for the local server (any key and secret do)."""
    return {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-west-2"},
    }


def main() -> None:
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the server's access log
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        options = storage_options(f"http://127.0.0.1:{port}")
        s3fs.S3FileSystem(**options).mkdir("demo-bucket")
        url = "s3://demo-bucket/elevation.hurray"

        y, x = np.mgrid[0:1024, 0:1024]
        elevation = (1000 * np.sin(x / 150) * np.cos(y / 90)).astype("float32")
        ds = xr.Dataset({"elevation": (("y", "x"), elevation, {"units": "m"})})
        xh.to_hurray(ds, url, storage_options=options, encoding={"elevation": {"chunks": (64, 64)}})
        print(f"wrote {url}")

        # The xarray way: lazy, and only the chunks a selection touches are fetched.
        opened = xr.open_dataset(url, engine="hurray", storage_options=options)
        region = opened["elevation"].isel(y=slice(256, 512), x=slice(512, 768)).values
        assert np.array_equal(region, elevation[256:512, 512:768])
        print(f"read a {region.shape[0]} x {region.shape[1]} region through xarray")

        # The same read, counting the requests S3 serves.
        source = CountingSource(FsspecSource(url, options))
        reader = ContainerReader(source)
        reader.index("elevation")
        opening = len(source.requests)
        source.requests.clear()
        again = reader.read("elevation", (slice(256, 512), slice(512, 768)))
        assert np.array_equal(again, region)
        print(
            f"opening took {opening} request(s); the region (16 chunks) took "
            f"{len(source.requests)} request(s), {source.bytes_read} bytes"
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
