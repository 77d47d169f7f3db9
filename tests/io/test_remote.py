"""Hurray files on object storage: moto's S3 server, an HTTP server and fsspec memory,
all on this machine; s3fs and obstore clients."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import itertools
import os
import pickle
import re
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray import HurrayChangedError, HurrayFormatError
from xarray_hurray.container import ContainerReader
from xarray_hurray.container.format import HEAD_SIZE
from xarray_hurray.container.model import first_read_bytes
from xarray_hurray.io import (
    OBJECT_STORE,
    PLAIN_HTTP,
    CostModel,
    FsspecSource,
    HttpSource,
    LocalFileSource,
    MergePolicy,
    RangeIgnoredWarning,
    RetryPolicy,
    SourceChangedError,
    SourceReadError,
    open_source,
)
from xarray_hurray.io.multipart import pending_uploads
from xarray_hurray.testing import CountingSource

SIDE, CHUNK = 256, 32


@pytest.fixture(scope="module")
def ds() -> xr.Dataset:
    rng = np.random.default_rng(3)
    y, x = np.mgrid[0:SIDE, 0:SIDE] / SIDE
    field = (np.sin(5 * x) * np.cos(3 * y) + 0.1 * rng.standard_normal((SIDE, SIDE))).astype("f4")
    return xr.Dataset(
        {"v": (("y", "x"), field, {"units": "K"})},
        coords={"x": np.arange(SIDE, dtype="f8") * 0.5},
        attrs={"title": "remote"},
    )


def write(ds: xr.Dataset, target: object, **kwargs: object) -> None:
    xh.to_hurray(ds, target, encoding={"v": {"chunks": (CHUNK, CHUNK)}}, **kwargs)


def assert_same(out: xr.Dataset, ds: xr.Dataset) -> None:
    np.testing.assert_array_equal(out["v"].values, ds["v"].values)
    np.testing.assert_array_equal(out["x"].values, ds["x"].values)
    assert out["v"].attrs == {"units": "K"} and out.attrs == {"title": "remote"}


# ---------------------------------------------------------------- the cost model


@pytest.mark.parametrize(
    ("model", "overhead", "policy"),
    [
        # 2 ms of request overhead, worth 200 kB of a 100 MB/s link; in a read of more
        # than 32 requests also 20 ms / 32 of a round: 2.625 ms, 262.5 kB
        (OBJECT_STORE, 0.002, MergePolicy(200_000, 64_000_000, 32, 262_500)),
        # 0.5 ms: 50 kB, and 1.125 ms, 112.5 kB
        (PLAIN_HTTP, 0.0005, MergePolicy(50_000, 64_000_000, 32, 112_500)),
    ],
    ids=["object-store", "plain-http"],
)
def test_remote_policies_follow_from_the_cost_model(model, overhead, policy):
    assert model == CostModel(latency=0.02, bandwidth=100e6, concurrency=32, overhead=overhead)
    assert model.merge_policy() == policy
    # merging at the break-even gap leaves the modelled time unchanged, in one round ...
    split = model.seconds(requests=2, nbytes=2 * 10**6)
    merged = model.seconds(requests=1, nbytes=2 * 10**6 + model.max_gap)
    assert merged == pytest.approx(split)
    # ... and in a read of many rounds (64 requests against 32 slots), on average
    many = model.seconds(requests=64, nbytes=10**7)
    fewer = model.seconds(requests=32, nbytes=10**7 + 32 * model.crowded_gap)
    assert fewer == pytest.approx(many)


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"latency": 0.0, "bandwidth": 1e6, "concurrency": 1, "overhead": 0}, "latency"),
        ({"latency": 0.01, "bandwidth": -1.0, "concurrency": 1, "overhead": 0}, "bandwidth"),
        ({"latency": 0.01, "bandwidth": 1e6, "concurrency": 0, "overhead": 0}, "concurrency"),
        ({"latency": 0.01, "bandwidth": 1e6, "concurrency": 1, "overhead": -1}, "overhead"),
    ],
)
def test_cost_model_refuses_nonsense(kwargs, word):
    with pytest.raises(ValueError, match=word):
        CostModel(**kwargs)


def test_remote_sources_default_to_the_object_store_policy(tmp_path):
    remote = FsspecSource("s3://bucket/x.hurray")
    assert remote.default_policy() == OBJECT_STORE.merge_policy()
    assert CountingSource(remote).default_policy() == OBJECT_STORE.merge_policy()
    assert LocalFileSource(tmp_path / "x").default_policy() == MergePolicy()
    assert HttpSource("http://127.0.0.1:1/x.hurray").default_policy() == PLAIN_HTTP.merge_policy()


# ---------------------------------------------------------------- S3 through s3fs


def test_s3_write_then_open_dataset(ds, s3):
    url = f"s3://{s3.bucket}/dir/x.hurray"
    write(ds, url, storage_options=s3.storage_options)
    assert s3.fs().ls(f"{s3.bucket}/dir") == [f"{s3.bucket}/dir/x.hurray"]
    with xr.open_dataset(url, engine="hurray", storage_options=s3.storage_options) as out:
        assert_same(out, ds)
        region = out["v"][37:141, 90:200].values
    np.testing.assert_array_equal(region, ds["v"].values[37:141, 90:200])


def test_s3_reads_with_dask_and_after_pickling(ds, s3):
    url = f"s3://{s3.bucket}/x.hurray"
    write(ds, url, storage_options=s3.storage_options)
    reader = xh.open_reader(url, storage_options=s3.storage_options)
    clone = pickle.loads(pickle.dumps(reader))
    np.testing.assert_array_equal(clone.read("v"), ds["v"].values)
    with (
        dask.config.set(scheduler="threads"),
        xr.open_dataset(url, engine="hurray", storage_options=s3.storage_options, chunks={}) as out,
    ):
        assert out["v"].chunks == ((CHUNK,) * (SIDE // CHUNK),) * 2
        assert float(out["v"].sum()) == pytest.approx(float(ds["v"].sum(dtype="f8")), rel=1e-5)


def test_s3_open_is_one_request_and_the_index_is_fetched_once(ds, s3):
    url = f"s3://{s3.bucket}/x.hurray"
    write(ds, url, storage_options=s3.storage_options)
    source = CountingSource(FsspecSource(url, s3.storage_options))
    reader = ContainerReader(source)
    # the first read: what the cost model's link moves in a quarter of a latency
    assert source.requests == [(0, first_read_bytes(reader.policy))]
    assert first_read_bytes(reader.policy) > HEAD_SIZE
    reader.index("v")  # 64 chunks: the index came with the head
    assert len(source.requests) == 1
    reader.read("v", (slice(0, 40), slice(0, 40)))
    reader.read("v", (slice(100, 140), slice(0, 40)))
    data_start = int(reader.index("v")["offset"].min())  # later requests fetch chunks only
    assert len(source.requests) > 1 and all(a >= data_start for a, _ in source.requests[1:])


@pytest.mark.slow
def test_s3_index_pages_beyond_the_head_cost_one_request_then_are_cached(s3):
    # 20,000 chunks: 20 index pages of 20 kB (and a bitmap), past the first 64 KiB read
    # (a policy stating no cost model: a first read of the head alone, not the 500 kB
    # that would hold every page here)
    big = xr.Dataset({"w": (("t",), np.arange(20_000, dtype="i4"))})
    url = f"s3://{s3.bucket}/big.hurray"
    xh.to_hurray(
        big, url, encoding={"w": {"chunks": (1,)}}, codecs=None,
        storage_options=s3.storage_options,
    )  # fmt: skip
    source = CountingSource(FsspecSource(url, s3.storage_options))
    with xr.open_dataset(source, engine="hurray", merge_policy={"max_gap": 64 * 1024}) as out:
        assert source.requests[0] == (0, HEAD_SIZE)
        assert int(out["w"][12_345]) == 12_345
        assert len(source.requests) == 3  # the chunk's index page, then the chunk
        assert int(out["w"][19_999]) == 19_999
        assert len(source.requests) == 5  # another page, another chunk
        assert int(out["w"][12_346]) == 12_346
        assert len(source.requests) == 6  # a cached page is not fetched again
    assert all(b - a <= 128 + 1024 * 20 for a, b in source.requests[1:])


def chunk_ranges(reader: ContainerReader, key: tuple[slice, ...]) -> list[tuple[int, int]]:
    """Sorted byte ranges of the chunks a box touches, straight from the index."""
    rows = [range(s.start // CHUNK, (s.stop - 1) // CHUNK + 1) for s in key]
    ids = [i * (SIDE // CHUNK) + j for i in rows[0] for j in rows[1]]
    index = reader.index("v")
    return sorted(
        (int(index["offset"][c]), int(index["offset"][c] + index["size"][c])) for c in ids
    )


def contiguous_runs(ranges: list[tuple[int, int]]) -> int:
    return 1 + sum(a != stop for (_, stop), (a, _) in itertools.pairwise(ranges))


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({"max_gap": 0, "max_request": 1}, len),  # one request per chunk
        ({"max_gap": 0}, contiguous_runs),  # one request per contiguous run
        (MergePolicy(max_gap=10**9, max_request=10**9), lambda ranges: 1),
    ],
)
def test_s3_merge_policy_through_backend_kwargs(ds, s3, policy, expected):
    url = f"s3://{s3.bucket}/x.hurray"
    write(ds, url, storage_options=s3.storage_options)
    key = (slice(20, 150), slice(70, 190))
    source = CountingSource(FsspecSource(url, s3.storage_options))
    with xr.open_dataset(source, engine="hurray", backend_kwargs={"merge_policy": policy}) as out:
        before = len(source.requests)
        np.testing.assert_array_equal(out["v"][key].values, ds["v"].values[key])
    ranges = chunk_ranges(xh.open_reader(url, storage_options=s3.storage_options), key)
    assert len(source.requests) - before == expected(ranges)


def test_bad_merge_policy_is_refused_by_name(ds, tmp_path):
    write(ds, tmp_path / "x.hurray")
    with pytest.raises(ValueError, match="max_gaps"):
        xr.open_dataset(tmp_path / "x.hurray", engine="hurray", merge_policy={"max_gaps": 1})
    with pytest.raises(TypeError, match="merge_policy"):
        xr.open_dataset(tmp_path / "x.hurray", engine="hurray", merge_policy=65536)


def failing_copy(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with a dask-backed variable whose last block fails to compute."""

    def block(x: np.ndarray, block_info: dict | None = None) -> np.ndarray:
        if block_info[0]["chunk-location"] == (SIDE // CHUNK - 1, SIDE // CHUNK - 1):
            raise RuntimeError("disk on fire")
        return x

    data = da.from_array(ds["v"].values, chunks=CHUNK).map_blocks(block, dtype="f4")
    return ds.assign(v=(("y", "x"), data, ds["v"].attrs))


def test_s3_failed_write_leaves_the_old_object(ds, s3):
    url = f"s3://{s3.bucket}/x.hurray"
    write(ds, url, storage_options=s3.storage_options)
    fs = s3.fs()
    before = fs.cat_file(f"{s3.bucket}/x.hurray")
    with dask.config.set(scheduler="threads"), pytest.raises(RuntimeError, match="disk on fire"):
        write(failing_copy(ds * 2), url, storage_options=s3.storage_options)
    assert fs.ls(s3.bucket) == [f"{s3.bucket}/x.hurray"]
    assert fs.cat_file(f"{s3.bucket}/x.hurray") == before


def test_storage_options_for_a_local_path_are_refused(ds, tmp_path):
    with pytest.raises(ValueError, match="storage_options"):
        write(ds, tmp_path / "x.hurray", storage_options={"anon": True})
    assert not any(tmp_path.iterdir())


# ---------------------------------------------------------------- fsspec memory://


def test_memory_url_round_trip(ds):
    url = f"memory://hurray-{uuid.uuid4().hex}/x.hurray"
    write(ds, url)
    with xr.open_dataset(url, engine="hurray") as out:
        assert_same(out, ds)


# ---------------------------------------------------------------- http(s)://


DELAY = 0.25
"""Seconds the test HTTP server waits before answering each request."""

LATE = 0.6
"""Seconds a request given the ``"late"`` fault waits before its answer."""


class RangeHandler(SimpleHTTPRequestHandler):
    """Serve files with single-range ``Range`` requests, after a fixed delay.

    With ``ranges`` False, ``Range`` is ignored and every answer is the whole file
    (as ``python -m http.server`` does).  Answers carry an ``ETag`` (from the file's
    inode, modification time and size) and ``Last-Modified`` unless switched off, and
    honour ``If-Match`` and ``If-Unmodified-Since`` with 412 unless ``conditional`` is
    False.
    """

    delay = 0.0
    ranges = True
    etag = True
    last_modified = True
    conditional = True
    faults: ClassVar[list[str]] = []
    """Misbehaviours for the next requests, one each, taken from the front:
    ``"503"``, ``"drop"`` (close without an answer), ``"truncate"`` (close halfway
    through the body), ``"short"`` (a shorter body than the range, consistently
    declared), ``"stall"`` (answer after 3 s) and ``"late"`` (answer after ``LATE`` s)."""

    def do_GET(self) -> None:
        fault = self.faults.pop(0) if self.faults else None
        if fault == "503":
            self.send_error(503)
            return
        if fault == "drop":
            self.close_connection = True
            return
        if fault == "stall":
            time.sleep(3)
        if fault == "late":
            time.sleep(LATE)
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return
        with path.open("rb") as f:  # one version: stat and bytes of the same open file
            stat = os.fstat(f.fileno())
            data = f.read()
        time.sleep(self.delay)
        tag = f'"{stat.st_ino:x}-{stat.st_mtime_ns:x}-{stat.st_size:x}"'
        modified = email.utils.formatdate(stat.st_mtime, usegmt=True)
        if self.conditional and (
            self.headers.get("If-Match", tag) != tag
            or self.headers.get("If-Unmodified-Since", modified) != modified
        ):
            self.send_error(412)
            return
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if match and self.ranges:
            start = int(match[1])
            stop = min(int(match[2]) + 1 if match[2] else len(data), len(data))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{len(data)}")
            data = data[start : stop - 1 if fault == "short" else stop]
        else:
            self.send_response(200)
        if self.etag:
            self.send_header("ETag", tag)
        if self.last_modified:
            self.send_header("Last-Modified", modified)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if fault == "truncate":
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
            return
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        """Quiet."""


class RangeServer(ThreadingHTTPServer):
    """A threading HTTP server whose listen queue holds a burst of concurrent requests."""

    request_queue_size = 64

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients that gave up on a stalled answer are expected; other errors print."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve(root: Path, **settings: object) -> Iterator[str]:
    """The URL of an HTTP server on 127.0.0.1 serving ``root``, with ``RangeHandler``
    attributes set to ``settings``."""

    class Handler(RangeHandler):
        def __init__(self, *args: object) -> None:
            super().__init__(*args, directory=os.fspath(root))

    for key, value in settings.items():
        setattr(Handler, key, value)
    server = RangeServer(("127.0.0.1", 0), Handler)
    # a short poll: shutdown waits for the serving loop's next look at its flag
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def http_root(tmp_path) -> Iterator[tuple[str, Path]]:
    """An HTTP server on 127.0.0.1 serving ``tmp_path``, ``DELAY`` seconds per request."""
    with serve(tmp_path, delay=DELAY) as base:
        yield base, tmp_path


HTTP_SOURCES = [FsspecSource, HttpSource]
"""The two readers of http(s) URLs: through fsspec (with storage options), and the
standard library's client (the default for plain URLs)."""


def test_plain_http_urls_get_the_standard_library_reader(tmp_path):
    assert isinstance(open_source("http://127.0.0.1:1/x.hurray"), HttpSource)
    assert isinstance(open_source("https://example.org/a/x.hurray?sig=1"), HttpSource)
    for other in ("http://user:pw@127.0.0.1/x.hurray", "s3://bucket/x.hurray"):
        assert isinstance(open_source(other), FsspecSource)
    assert isinstance(open_source("http://127.0.0.1:1/x", {"headers": {}}), FsspecSource)


@pytest.mark.parametrize("kind", HTTP_SOURCES)
def test_http_url_reads_a_region_with_concurrent_requests(ds, http_root, kind):
    base, root = http_root
    write(ds, root / "x.hurray", chunk_order="row-major")
    source = CountingSource(kind(f"{base}/x.hurray"))
    reader = ContainerReader(source, MergePolicy(max_gap=0))
    key = (slice(0, 8 * CHUNK), slice(0, CHUNK))  # a column of chunks: 8 separate ranges
    start = time.perf_counter()
    region = reader.read("v", key)
    elapsed = time.perf_counter() - start
    np.testing.assert_array_equal(region, ds["v"].values[key])
    assert len(source.requests) == 1 + 8
    assert elapsed < 4 * DELAY  # 8 requests, not one after another


@pytest.mark.parametrize("kind", HTTP_SOURCES)
def test_http_answers_are_handed_over_as_they_arrive(tmp_path, kind):
    data = np.random.default_rng(1).bytes(8 * 512)
    (tmp_path / "blob").write_bytes(data)
    ranges = np.array([[k * 512, (k + 1) * 512] for k in range(8)])
    faults: list[str] = []
    with serve(tmp_path, faults=faults) as base:
        source = kind(f"{base}/blob")
        source.read(0, 1)  # pins the version and makes a connection
        faults.append("late")  # the first of the next requests to arrive answers late
        start = time.perf_counter()
        answers = source.read_ranges_as_completed(ranges)
        first = next(answers)
        waited = time.perf_counter() - start
        rest = list(answers)
    assert waited < LATE / 2  # not held back by the late answer
    assert sorted(row for row, _ in [first, *rest]) == list(range(8))
    for row, blob in [first, *rest]:
        assert blob == data[row * 512 : (row + 1) * 512]


@pytest.mark.parametrize("kind", HTTP_SOURCES)
def test_http_answers_as_they_arrive_raise_a_failed_read(tmp_path, kind):
    (tmp_path / "blob").write_bytes(bytes(4096))
    ranges = np.array([[0, 100], [1000, 1100], [2000, 2100]])
    faults: list[str] = []
    with serve(tmp_path, faults=faults) as base:
        source = kind(f"{base}/blob", retry=RetryPolicy(timeout=1.0, retries=0))
        source.read(0, 1)
        faults.append("503")  # one of the three requests fails, and is not retried
        with pytest.raises(SourceReadError, match="HTTP 503"):
            list(source.read_ranges_as_completed(ranges))


def test_s3_answers_as_they_arrive_are_each_range_once(s3):
    data = np.random.default_rng(2).bytes(100_000)
    url = f"s3://{s3.bucket}/blob"
    s3.fs().pipe(url, data)
    ranges = np.array([[k * 9000, k * 9000 + 5000 + k] for k in range(10)])
    answers = list(FsspecSource(url, s3.storage_options).read_ranges_as_completed(ranges))
    assert sorted(row for row, _ in answers) == list(range(10))
    assert all(blob == data[ranges[row][0] : ranges[row][1]] for row, blob in answers)


def test_a_server_ignoring_ranges_is_read_right_and_named_once(ds, tmp_path):
    write(ds, tmp_path / "x.hurray")
    with serve(tmp_path, ranges=False) as base, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")  # however the user's filters are set: once per file
        with xr.open_dataset(f"{base}/x.hurray", engine="hurray") as back:
            for box in (np.s_[:5, :7], np.s_[20:40, 3:9], np.s_[:, 30:]):
                np.testing.assert_array_equal(back["v"][box].values, ds["v"][box].values)
    ignored = [w for w in seen if issubclass(w.category, RangeIgnoredWarning)]
    assert len(ignored) == 1
    assert "the server ignored the HTTP Range request and sent the whole file" in str(
        ignored[0].message
    )


def test_http_open_dataset(ds, http_root):
    base, root = http_root
    write(ds, root / "x.hurray")
    with xr.open_dataset(f"{base}/x.hurray", engine="hurray") as out:
        assert_same(out, ds)


# ---------------------------------------------------------------- obstore


@pytest.fixture
def obstore_s3(s3):
    pytest.importorskip("obstore")
    from obstore.store import S3Store

    return S3Store(
        s3.bucket,
        endpoint=s3.url,
        access_key_id="testing",
        secret_access_key="testing",
        region="us-west-2",
        virtual_hosted_style_request=False,
        client_options={"allow_http": True},
    )


def test_obstore_write_then_open_dataset(ds, s3, obstore_s3):
    from xarray_hurray.io.obstore_source import ObstoreSource

    write(ds, ObstoreSource(obstore_s3, "o/x.hurray"))
    assert s3.fs().ls(f"{s3.bucket}/o") == [f"{s3.bucket}/o/x.hurray"]
    source = CountingSource(ObstoreSource(obstore_s3, "o/x.hurray"))
    with xr.open_dataset(source, engine="hurray") as out:
        # the first read alone: the "x" coordinate that xarray loads lies there
        assert len(source.requests) == 1 and source.requests[0][0] == 0
        assert_same(out, ds)
    clone = pickle.loads(pickle.dumps(ObstoreSource(obstore_s3, "o/x.hurray")))
    assert clone.read(0, 8) == source.read(0, 8)
    assert clone.read(10**9, 10**9 + 8) == b""


def test_obstore_failed_write_leaves_the_old_object(ds, s3, obstore_s3):
    from xarray_hurray.io.obstore_source import ObstoreSource

    target = ObstoreSource(obstore_s3, "x.hurray")
    write(ds, target)
    before = target.read(0, 10**9)
    with dask.config.set(scheduler="threads"), pytest.raises(RuntimeError, match="disk on fire"):
        write(failing_copy(ds), target)
    assert target.read(0, 10**9) == before


# ---------------------------------------------------------------- one version per reader

LONG = 4_000
"""Chunks of one element: an 80 kB index that the first 64 KiB read does not hold,
so it is fetched later, after the object may have been replaced."""


def versions(local: Path) -> tuple[Path, Path]:
    """Two files of the same structure, the second with other values and units."""
    old, new = local / "old.hurray", local / "new.hurray"
    for path, scale, units in ((old, 1, "K"), (new, 2, "C")):
        w = xr.Dataset({"w": (("t",), np.arange(LONG, dtype="i4") * scale, {"units": units})})
        xh.to_hurray(w, path, encoding={"w": {"chunks": (1,)}}, codecs=None)
    return old, new


def assert_old_or_refused(reader: ContainerReader) -> None:
    """A reader opened on the old version reads old values or refuses; never new ones."""
    assert reader.variable("w").attrs == {"units": "K"}
    with pytest.raises(HurrayChangedError, match="replaced or modified after it was first read"):
        reader.read("w", (slice(3, 5),))


def test_s3_object_replaced_between_reads_is_refused(s3, tmp_path):
    old, new = versions(tmp_path)
    fs = s3.fs()
    fs.put_file(os.fspath(old), f"{s3.bucket}/x.hurray")
    url = f"s3://{s3.bucket}/x.hurray"
    reader = xh.open_reader(url, storage_options=s3.storage_options)
    assert reader.source.version.etag and reader.source.size() == old.stat().st_size
    pickled = pickle.dumps(reader)
    fs.put_file(os.fspath(new), f"{s3.bucket}/x.hurray")
    assert_old_or_refused(reader)
    assert_old_or_refused(pickle.loads(pickled))  # a worker carries the pinned version


def test_s3_versioned_bucket_keeps_serving_the_pinned_version(s3, tmp_path):
    old, new = versions(tmp_path)
    import boto3

    client = boto3.client("s3", endpoint_url=s3.url, region_name="us-west-2")
    client.put_bucket_versioning(Bucket=s3.bucket, VersioningConfiguration={"Status": "Enabled"})
    fs = s3.fs()
    fs.put_file(os.fspath(old), f"{s3.bucket}/x.hurray")
    reader = xh.open_reader(f"s3://{s3.bucket}/x.hurray", storage_options=s3.storage_options)
    assert reader.source.version.version_id
    fs.put_file(os.fspath(new), f"{s3.bucket}/x.hurray")
    clone = pickle.loads(pickle.dumps(reader))
    for r in (reader, clone):
        np.testing.assert_array_equal(r.read("w", (slice(3, 5),)), [3, 4])
    versions_of = client.list_object_versions(Bucket=s3.bucket)["Versions"]
    old_id = reader.source.version.version_id
    client.delete_object(Bucket=s3.bucket, Key="x.hurray", VersionId=old_id)
    assert len(versions_of) == 2
    with pytest.raises(SourceChangedError):
        pickle.loads(pickle.dumps(reader)).read("w")


@pytest.mark.parametrize(
    "server",
    [
        pytest.param({}, id="etag-if-match"),
        pytest.param({"conditional": False}, id="etag-ignored-conditions"),
        pytest.param({"etag": False}, id="last-modified-only"),
    ],
)
def test_http_object_replaced_between_reads_is_refused(tmp_path, server):
    old, new = versions(tmp_path)
    root = tmp_path / "served"
    root.mkdir()
    os.replace(old, root / "x.hurray")
    with serve(root, **server) as base:
        reader = xh.open_reader(f"{base}/x.hurray")
        pickled = pickle.dumps(reader)
        os.utime(new, (time.time() + 10, time.time() + 10))  # Last-Modified has seconds
        os.replace(new, root / "x.hurray")
        assert_old_or_refused(reader)
        assert_old_or_refused(pickle.loads(pickled))


def test_obstore_object_replaced_between_reads_is_refused(s3, obstore_s3, tmp_path):
    from xarray_hurray.io.obstore_source import ObstoreSource

    old, new = versions(tmp_path)
    fs = s3.fs()
    fs.put_file(os.fspath(old), f"{s3.bucket}/x.hurray")
    reader = xh.open_reader(ObstoreSource(obstore_s3, "x.hurray"))
    assert reader.source.version.etag and reader.source.size() == old.stat().st_size
    pickled = pickle.dumps(reader)
    fs.put_file(os.fspath(new), f"{s3.bucket}/x.hurray")
    assert_old_or_refused(reader)
    assert_old_or_refused(pickle.loads(pickled))


def test_obstore_async_reads_match_and_refuse_a_replaced_object(ds, s3, obstore_s3, tmp_path):
    from xarray_hurray.io.obstore_source import ObstoreSource

    write(ds, ObstoreSource(obstore_s3, "a/x.hurray"))
    reader = xh.open_reader(ObstoreSource(obstore_s3, "a/x.hurray"))
    key = (slice(3, 40), slice(5, 60))
    np.testing.assert_array_equal(asyncio.run(reader.read_async("v", key)), reader.read("v", key))
    ranges = np.array([[0, 8], [10**9, 10**9 + 8]], dtype=np.int64)
    assert asyncio.run(reader.source.read_ranges_async(ranges)) == [reader.source.read(0, 8), b""]
    old, new = versions(tmp_path)
    fs = s3.fs()
    fs.put_file(os.fspath(old), f"{s3.bucket}/x.hurray")
    replaced = xh.open_reader(ObstoreSource(obstore_s3, "x.hurray"))
    fs.put_file(os.fspath(new), f"{s3.bucket}/x.hurray")
    with pytest.raises(SourceChangedError, match="replaced or modified after it was first read"):
        asyncio.run(replaced.read_async("w", (slice(3, 5),)))


# ---------------------------------------------------------------- failing servers

FAST_RETRY = RetryPolicy(timeout=1.0, retries=3, backoff=0.01)


@pytest.mark.parametrize("kind", HTTP_SOURCES)
@pytest.mark.parametrize(
    "faults",
    [["503"], ["drop"], ["truncate"], ["short"], ["stall"], ["503", "truncate", "short"]],
)
def test_http_transient_failures_are_retried(ds, tmp_path, faults, kind):
    write(ds, tmp_path / "x.hurray")
    pending = list(faults)
    with serve(tmp_path, faults=pending) as base:
        reader = ContainerReader(kind(f"{base}/x.hurray", retry=FAST_RETRY))
        np.testing.assert_array_equal(reader.read("v"), ds["v"].values)
    assert pending == []  # every fault was met, and retried


@pytest.mark.parametrize(
    ("kind", "fault", "message"),
    [
        (FsspecSource, "503", "HTTP 503"),
        (FsspecSource, "truncate", "ClientPayloadError"),
        (FsspecSource, "short", "answered with"),
        (HttpSource, "503", "HTTP 503"),
        (HttpSource, "truncate", "answered with 50 of 100 bytes"),
        (HttpSource, "short", "answered with"),
        (HttpSource, "drop", "RemoteDisconnected"),
    ],
)
def test_http_read_failing_every_attempt_names_the_last_failure(ds, tmp_path, kind, fault, message):
    write(ds, tmp_path / "x.hurray")
    with serve(tmp_path, faults=[fault] * 4) as base:
        source = kind(f"{base}/x.hurray", retry=FAST_RETRY)
        with pytest.raises(SourceReadError, match=rf"4 attempts failed; the last: .*{message}"):
            source.read(0, 100)


@pytest.mark.parametrize("kind", HTTP_SOURCES)
def test_http_stalled_server_times_out(ds, tmp_path, kind):
    write(ds, tmp_path / "x.hurray")
    with serve(tmp_path, faults=["stall"] * 2) as base:
        source = kind(f"{base}/x.hurray", retry=RetryPolicy(timeout=0.3, retries=1))
        start = time.perf_counter()
        with pytest.raises(SourceReadError, match=r"no answer within 0.3 s"):
            source.read(0, 100)
        assert time.perf_counter() - start < 2


def obstore_http(base: str, retries: int) -> object:
    """An obstore HTTP store of ``base`` whose attempts time out after 0.5 s and are
    retried ``retries`` times after short waits."""
    pytest.importorskip("obstore")
    from datetime import timedelta

    from obstore.store import HTTPStore

    return HTTPStore.from_url(
        base,
        client_options={"allow_http": True, "timeout": "500ms"},
        retry_config={
            "max_retries": retries,
            "backoff": {
                "init_backoff": timedelta(milliseconds=10),
                "max_backoff": timedelta(milliseconds=50),
                "base": 2,
            },
            "retry_timeout": timedelta(seconds=10),
        },
    )


@pytest.mark.parametrize("faults", [["503"], ["drop"], ["truncate"], ["stall"], ["503", "drop"]])
def test_obstore_transient_failures_are_retried_by_the_store(ds, tmp_path, faults):
    from xarray_hurray.io.obstore_source import ObstoreSource

    write(ds, tmp_path / "x.hurray")
    pending = list(faults)
    with serve(tmp_path, faults=pending) as base:
        reader = ContainerReader(ObstoreSource(obstore_http(base, 3), "x.hurray"))
        np.testing.assert_array_equal(reader.read("v"), ds["v"].values)
    assert pending == []


@pytest.mark.parametrize("fault", ["503", "drop", "truncate", "stall", "short"])
def test_obstore_read_failing_every_attempt_is_a_source_read_error(ds, tmp_path, fault):
    # the store's retries spent (a short answer is refused at once): SourceReadError,
    # never the store's own exception or the bytes of a failed answer
    from xarray_hurray.io.obstore_source import ObstoreSource

    write(ds, tmp_path / "x.hurray")
    with serve(tmp_path, faults=[fault] * 4) as base:  # two attempts per read
        source = ObstoreSource(obstore_http(base, 1), "x.hurray")
        message = "answered with 99 of 100" if fault == "short" else "after the store's retries"
        with pytest.raises(SourceReadError, match=rf"bytes \[0, 100\) .*{message}"):
            source.read(0, 100)
        with pytest.raises(SourceReadError, match=message):
            asyncio.run(source.read_ranges_async(np.array([[0, 100]])))


def test_retry_policy_refuses_nonsense():
    for bad in ({"timeout": 0}, {"retries": -1}, {"retries": 1.5}, {"backoff": "x"}):
        with pytest.raises(ValueError, match="retry"):
            RetryPolicy(**bad)


def test_s3_append_and_region_write_replace_the_object_whole(s3):
    url = f"s3://{s3.bucket}/dir/a.hurray"
    so = s3.storage_options
    ds = xr.Dataset({"v": (("t", "x"), np.arange(40.0).reshape(8, 5))}, coords={"t": np.arange(8)})
    xh.to_hurray(
        ds.isel(t=slice(0, 5)), url, storage_options=so, encoding={"v": {"chunks": (2, 5)}}
    )
    xh.to_hurray(ds.isel(t=slice(5, 8)), url, storage_options=so, append_dim="t")
    fix = ds.isel(t=slice(2, 4)).drop_vars("t") * -1
    xh.to_hurray(fix, url, storage_options=so, region={"t": slice(2, 4)})
    expected = ds.copy(deep=True)
    expected["v"][2:4] *= -1
    with xr.open_dataset(url, engine="hurray", storage_options=so) as out:
        xr.testing.assert_identical(out.load(), expected)
    with pytest.raises(FileExistsError):
        xh.to_hurray(ds, url, storage_options=so, mode="w-")


def test_s3_append_copies_the_old_bytes_on_the_server(s3):
    """An object of two smallest parts or more: the new object is the old bytes copied
    by the store (UploadPartCopy), the new ones uploaded, one slot changed."""
    url = f"s3://{s3.bucket}/big.hurray"
    so = s3.storage_options
    rng = np.random.default_rng(3)
    values = rng.random((12, 512, 512), dtype="float32")  # 12.6 MB, incompressible
    ds = xr.Dataset({"v": (("t", "y", "x"), values)})
    enc = {"v": {"chunks": (1, 256, 256), "chunk_axes": ["y", "x"], "codecs": None}}
    xh.to_hurray(ds.isel(t=slice(0, 10)), url, storage_options=so, encoding=enc)
    xh.to_hurray(ds.isel(t=slice(10, 12)), url, storage_options=so, append_dim="t")
    reader = xh.open_reader(url, storage_options=so)
    assert reader.header.generation == 2  # committed by slot, not rewritten
    np.testing.assert_array_equal(reader.read("v"), values)
    assert pending_uploads(url, so) == []


# ------------------------------------------- a same-size replacement, no ETag


def same_size_versions(local: Path) -> tuple[Path, Path]:
    """Two files of one structure and size, an index coordinate ``t`` (held by a reader
    once read) and ``w``, of other values in the second."""
    old, new = local / "old.hurray", local / "new.hurray"
    for path, scale in ((old, 1), (new, 2)):
        t = np.arange(LONG, dtype="i4") * scale
        ds = xr.Dataset({"w": (("t",), t * 3)}, coords={"t": t})
        xh.to_hurray(ds, path, encoding={"w": {"chunks": (100,)}}, codecs=None)
    assert old.stat().st_size == new.stat().st_size
    return old, new


def replace_in_the_same_second(new: Path, served: Path) -> None:
    """Put ``new`` at ``served``, keeping the modification time of the file there, as
    a replacement within the same second has it."""
    stat = served.stat()
    os.replace(new, served)
    os.utime(served, ns=(stat.st_atime_ns, stat.st_mtime_ns))


WEAK_SERVERS = [{"etag": False}, {"etag": False, "last_modified": False}]
"""Servers that cannot tell two versions of one size apart within a second, as `hurray
view` was: no ETag, and Last-Modified (whole seconds) or nothing at all."""


@pytest.mark.parametrize("settings", WEAK_SERVERS, ids=["last-modified", "nothing"])
@pytest.mark.parametrize("verify", [True, False], ids=["checked", "unchecked"])
@pytest.mark.parametrize("source", HTTP_SOURCES)
def test_a_same_size_replacement_without_etag_is_named_and_never_mixed(
    tmp_path, settings, verify, source
):
    """A reader holding the first file's coordinates never reads the second's values
    with them, chunk checksums asked for or not (they are checked anyway where the
    server cannot tell the versions apart), and names the change: its header."""
    old, new = same_size_versions(tmp_path)
    root = tmp_path / "served"
    root.mkdir()
    os.replace(old, root / "x.hurray")
    with serve(root, **settings) as base:
        url = f"{base}/x.hurray"
        reader = ContainerReader(source(url), verify_checksums=verify)
        assert not reader.source.pins_content
        reader.hold(["t"])
        np.testing.assert_array_equal(reader.read("t"), np.arange(LONG))
        replace_in_the_same_second(new, root / "x.hurray")
        with pytest.raises(HurrayChangedError, match="its header changed, at generation 1"):
            reader.read("w", (slice(0, 300),))
        # the second file, opened anew, reads as itself
        with xr.open_dataset(url, engine="hurray", verify_checksums=verify) as ds:
            np.testing.assert_array_equal(ds.w.values, np.arange(LONG) * 6)


@pytest.mark.parametrize("source", HTTP_SOURCES)
def test_a_damaged_chunk_of_an_unchanged_file_is_named_as_damage(tmp_path, source):
    """A chunk damaged where the header stays as it was is damage, not a change."""
    old, _ = same_size_versions(tmp_path)
    with serve(tmp_path, etag=False) as base:
        reader = ContainerReader(source(f"{base}/old.hurray"))
        offset = int(reader.index("w")["offset"][1])
        stat = old.stat()
        with old.open("r+b") as f:
            f.seek(offset)
            f.write(b"\xff")
        os.utime(old, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        with pytest.raises(HurrayFormatError, match="checksum mismatch in chunk 1") as err:
            reader.read("w", (slice(0, 300),))
        assert not isinstance(err.value, HurrayChangedError)


def test_a_replacement_seen_in_the_etag_is_named_at_once(tmp_path):
    old, new = same_size_versions(tmp_path)
    root = tmp_path / "served"
    root.mkdir()
    os.replace(old, root / "x.hurray")
    with serve(root) as base:
        reader = ContainerReader(HttpSource(f"{base}/x.hurray"), verify_checksums=False)
        assert reader.source.pins_content
        replace_in_the_same_second(new, root / "x.hurray")
        with pytest.raises(HurrayChangedError, match="412"):
            reader.read("w", (slice(0, 300),))
