"""Every route of a write gives the bytes it gave when its digests were recorded.

The golden content (``tests/container/test_hurray_golden.py``) is written by each
route a write can take: a new local file, a new remote file staged locally, a new
``s3://`` object uploaded in parts, an update committed in place, an update of a
remote file (rewritten, or for an object of two parts or more committed by a
multipart upload) and ``compact``.  The SHA-256 of each result is kept in
``tests/data/write_route_digests_1_3.json``, recorded from the writers of format 1.3:
a change to how a write runs must not change a byte.
``python tests/xarray/test_write_route_bytes.py`` records them again, for a format
change made on purpose only (then bump the format version, as the golden files say).
"""

from __future__ import annotations

import hashlib
import json
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest
import xarray as xr

sys.path.insert(0, str(Path(__file__).parents[1] / "container"))
from test_hurray_golden import GOLDEN_ENCODING, golden_dataset, golden_tree

import xarray_hurray as xh
from xarray_hurray.write.sinks import compact

DIGESTS = Path(__file__).parents[1] / "data" / "write_route_digests_1_3.json"

SETTINGS: dict[str, Any] = {"codecs": None, "layout": "auto", "chunk_order": "hilbert"}
"""Every setting that decides the bytes, given: a default changing leaves these alone."""

TREE_ENCODING = {"/": GOLDEN_ENCODING, "/g": {"long": {"chunks": (1,)}}}


def _more() -> xr.Dataset:
    """Values appended to the golden dataset along ``y`` (two rows of chunks)."""
    base = golden_dataset()
    extra = base.isel(y=slice(0, 8)).drop_vars(["x", "names", "codes", "flag"])
    extra = extra.assign_coords(time=extra.time + np.timedelta64(8, "D"))
    # keep_attrs given: its default differs between the xarray versions tested (the
    # floor drops the dataset's attributes)
    return extra.map(lambda v: v * 2 if v.dtype.kind == "f" else v, keep_attrs=True)


def _large() -> xr.Dataset:
    """Over two of S3's smallest parts of values that do not compress, so that an
    update of it is committed by a multipart upload; in the chunks its digest was
    recorded with (then the default ones), given, so that a default changing leaves
    them alone."""
    values = np.random.default_rng(7).standard_normal((1536, 1024)).astype("f8")
    ds = xr.Dataset({"v": (("y", "x"), values)})
    ds.v.encoding["chunks"] = (512, 256)
    return ds


Route = Callable[[str, dict[str, Any]], bytes]


def _new_local(where: str, options: dict[str, Any]) -> bytes:
    path = Path(where) / "new.hurray"
    xh.to_hurray(golden_tree(), path, encoding=TREE_ENCODING, **SETTINGS)
    return path.read_bytes()


def _new_staged(where: str, options: dict[str, Any]) -> bytes:
    url = f"memory://routes-{uuid.uuid4().hex}/new.hurray"
    xh.to_hurray(golden_tree(), url, encoding=TREE_ENCODING, **SETTINGS)
    return bytes(fsspec.filesystem("memory").cat_file(url))


def _s3_url(options: dict[str, Any], name: str) -> str:
    return f"s3://{options['bucket']}/{name}-{uuid.uuid4().hex}.hurray"


def _new_s3(where: str, options: dict[str, Any]) -> bytes:
    url = _s3_url(options, "new")
    xh.to_hurray(
        golden_tree(),
        url,
        encoding=TREE_ENCODING,
        storage_options=options["storage_options"],
        **SETTINGS,
    )
    return _s3_bytes(url, options)


def _new_s3_parts(where: str, options: dict[str, Any]) -> bytes:
    """A new object of several parts: runs of 5 MiB, padded, and the head padded."""
    url = _s3_url(options, "parts")
    data = _large().chunk({"y": 128})
    xh.to_hurray(
        data,
        url,
        storage_options=options["storage_options"],
        part_bytes=5 * 2**20,
        encoding={"v": {"chunks": (128, 128)}},
        **SETTINGS,
    )
    return _s3_bytes(url, options)


def _s3_bytes(url: str, options: dict[str, Any]) -> bytes:
    import s3fs

    fs = s3fs.S3FileSystem(**options["storage_options"], skip_instance_cache=True)
    return bytes(fs.cat_file(url))


def _in_place(where: str, options: dict[str, Any]) -> bytes:
    path = Path(where) / "update.hurray"
    xh.to_hurray(golden_dataset(), path, encoding=GOLDEN_ENCODING, **SETTINGS)
    xh.to_hurray(_more(), path, append_dim="y")
    xh.to_hurray(xr.Dataset({"extra": ("z", np.arange(5.0))}), path, mode="a", **SETTINGS)
    return path.read_bytes()


def _remote_update(where: str, options: dict[str, Any]) -> bytes:
    url = f"memory://routes-{uuid.uuid4().hex}/update.hurray"
    xh.to_hurray(golden_dataset(), url, encoding=GOLDEN_ENCODING, **SETTINGS)
    xh.to_hurray(_more(), url, append_dim="y")
    return bytes(fsspec.filesystem("memory").cat_file(url))


def _s3_update(where: str, options: dict[str, Any]) -> bytes:
    url = _s3_url(options, "update")
    so = options["storage_options"]
    xh.to_hurray(_large(), url, storage_options=so, **SETTINGS)
    more = _large().isel(y=slice(0, 64)) + 1
    xh.to_hurray(more, url, append_dim="y", storage_options=so)
    return _s3_bytes(url, options)


def _compact(where: str, options: dict[str, Any]) -> bytes:
    path = Path(where) / "compact.hurray"
    xh.to_hurray(golden_dataset(), path, encoding=GOLDEN_ENCODING, **SETTINGS)
    xh.to_hurray(_more(), path, append_dim="y")
    compact(path)
    return path.read_bytes()


ROUTES: dict[str, Route] = {
    "new local file": _new_local,
    "new remote file, staged": _new_staged,
    "new s3 object, one part": _new_s3,
    "new s3 object, parts": _new_s3_parts,
    "update in place": _in_place,
    "update of a remote file, rewritten": _remote_update,
    "update of an s3 object, multipart commit": _s3_update,
    "compact": _compact,
}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def s3_options(s3) -> dict[str, Any]:
    return {"bucket": s3.bucket, "storage_options": s3.storage_options}


@pytest.mark.parametrize("route", list(ROUTES))
def test_each_write_route_gives_the_recorded_bytes(route, tmp_path, s3_options):
    recorded = json.loads(DIGESTS.read_text())
    assert _digest(ROUTES[route](str(tmp_path), s3_options)) == recorded[route], (
        f"the bytes of a write by the route {route!r} changed"
    )


def _record() -> Iterator[tuple[str, str]]:  # pragma: no cover - run by hand
    """Write every route against a moto server of its own; each digest."""
    import tempfile

    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        so = {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": f"http://{host}:{port}", "region_name": "us-west-2"},
        }
        import s3fs

        fs = s3fs.S3FileSystem(**so, skip_instance_cache=True)
        fs.mkdir("record")
        for name, route in ROUTES.items():
            with tempfile.TemporaryDirectory() as where:
                yield name, _digest(route(where, {"bucket": "record", "storage_options": so}))
    finally:
        server.stop()


if __name__ == "__main__":  # pragma: no cover
    DIGESTS.write_text(json.dumps(dict(_record()), indent=2) + "\n")
    print(f"recorded {DIGESTS}")
