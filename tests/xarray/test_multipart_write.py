"""to_hurray to s3:// as a multipart upload whose parts the workers upload: moto's S3
server on 127.0.0.1 and a LocalCluster of processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from hurray_datasets import everything

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from distributed_write import CountingRelay

from xarray_hurray.container import VERSION, open_reader
from xarray_hurray.container.verify import verify_file
from xarray_hurray.io import FsspecSource, pending_uploads
from xarray_hurray.xarray import to_hurray

distributed = pytest.importorskip("distributed")

MIB = 2**20
PART = 5 * MIB  # the store's minimum part: the smallest runs the planner makes


@pytest.fixture(scope="module")
def client(cluster: distributed.LocalCluster) -> Iterator[distributed.Client]:
    """A client of the session's two one-thread worker processes; a task that kills
    its worker twice fails."""
    with distributed.Client(cluster) as c:
        yield c


def _part_count(info: dict[str, object]) -> int:
    """The parts of an object, from S3's ETag of a multipart object ("<md5>-<parts>");
    an object uploaded as one part has no count."""
    etag = str(info["ETag"]).strip('"')
    return int(etag.split("-")[1]) if "-" in etag else 1


def _dataset(seed: int = 0) -> xr.Dataset:
    """8 MiB of incompressible floats, 4 MiB of NaN (missing chunks) and a small
    coordinate held in memory: runs of 5 MiB of input make two parts of noise."""
    noise = da.random.default_rng(seed).random((1024, 2048), dtype=np.float32, chunks=(256, 512))
    return xr.Dataset(
        {
            "noise": (("y", "x"), noise),
            "empty": (("z", "x"), da.full((512, 2048), np.nan, dtype=np.float32, chunks=256)),
        },
        coords={"y": np.arange(1024)},
    )


class DiskWatch:
    """The most bytes found under a directory, sampled every 5 ms while active."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            size = sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())
            self.peak = max(self.peak, size)
            time.sleep(0.005)

    def __enter__(self) -> DiskWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def local_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory temporary files of this process go to."""
    root = tmp_path / "local-tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_workers_upload_parts(s3, client, local_tmp):
    url = f"s3://{s3.bucket}/field.hurray"
    ds = _dataset()
    with DiskWatch(local_tmp) as disk:
        to_hurray(ds, url, storage_options=s3.storage_options, part_bytes=PART)
    assert disk.peak == 0  # nothing staged on local disk
    back = xr.open_dataset(url, engine="hurray", storage_options=s3.storage_options)
    xr.testing.assert_identical(back.load(), ds.compute())
    assert verify_file(FsspecSource(url, s3.storage_options)) == []
    assert pending_uploads(url, s3.storage_options) == []
    # the head part (padded to 5 MiB), then the coordinate (placed first) and 8 MiB
    # of noise in runs of 5 MiB of input, the NaN chunks (missing: no bytes) in the last
    info = s3.fs().info(url)
    assert _part_count(info) == 3
    assert 13 * MIB < info["size"] < 16 * MIB


@pytest.mark.slow
def test_chunks_never_pass_through_the_client(s3, monkeypatch):
    """What benchmarks/distributed_write.py measures, on a small write: the client
    reaches the S3 server and the scheduler only through counting relays (the
    workers reach both directly, their endpoint set in their environment), and it
    sends the head part and receives a few bytes per chunk, never the chunks."""
    s3_relay = CountingRelay(int(s3.url.rsplit(":", 1)[1]))
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{s3_relay.port}")
    # no endpoint in the options: each process takes its own from its environment
    options = {"key": "testing", "secret": "testing", "client_kwargs": {"region_name": "us-west-2"}}
    url = f"s3://{s3.bucket}/field.hurray"
    ds = _dataset(3)
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        env={"AWS_ENDPOINT_URL": s3.url},
    ) as cluster:
        scheduler_relay = CountingRelay(int(cluster.scheduler_address.rsplit(":", 1)[1]))
        address = f"tcp://127.0.0.1:{scheduler_relay.port}"
        with distributed.Client(address, direct_to_workers=False):
            before = [relay.counts() for relay in (s3_relay, scheduler_relay)]
            to_hurray(ds, url, storage_options=options, part_bytes=PART)
            after = [relay.counts() for relay in (s3_relay, scheduler_relay)]
    (s3_in, s3_out), (cluster_in, cluster_out) = (
        (b[0] - a[0], b[1] - a[1]) for a, b in zip(before, after, strict=True)
    )
    # 8 MiB of noise uploaded by the workers (15 MiB with the head part and padding)
    assert s3.fs().size(url) > 13 * MIB
    # the client: the head part (padded to 5 MiB) and the requests of the upload to
    # S3 (measured: 3 kB over the part, 2 kB back), the graph to the scheduler and the
    # sizes, CRCs and part receipts back (24 kB and 3 kB)
    assert PART <= s3_out < PART + 64 * 1024 and s3_in < 64 * 1024
    assert cluster_out < 256 * 1024 and cluster_in < 64 * 1024
    back = xr.open_dataset(url, engine="hurray", storage_options=s3.storage_options)
    xr.testing.assert_identical(back.load(), ds.compute())


def test_local_scheduler_streams_parts(s3, local_tmp):
    url = f"s3://{s3.bucket}/field.hurray"
    ds = _dataset(1)
    with dask.config.set(scheduler="threads"), DiskWatch(local_tmp) as disk:
        to_hurray(ds, url, storage_options=s3.storage_options, part_bytes=PART)
    assert disk.peak == 0
    back = xr.open_dataset(url, engine="hurray", storage_options=s3.storage_options)
    xr.testing.assert_identical(back.load(), ds.compute())
    assert pending_uploads(url, s3.storage_options) == []
    assert open_reader(FsspecSource(url, s3.storage_options)).version == VERSION


@pytest.mark.parametrize("scheduler", ["threads", "cluster"])
def test_a_pending_write_uploads_when_computed(s3, request, scheduler):
    """compute=False uploads nothing; computed (on the cluster, the write runs in a
    task whose run tasks it submits), it gives the object an immediate write gives."""
    url, now = (f"s3://{s3.bucket}/{name}.hurray" for name in ("pending", "now"))
    ds = _dataset(4)
    options = s3.storage_options
    with dask.config.set(scheduler="threads"):
        to_hurray(ds, now, storage_options=options, part_bytes=PART)
    pending = to_hurray(ds, url, storage_options=options, part_bytes=PART, compute=False)
    assert not s3.fs().exists(url) and pending_uploads(url, options) == []
    if scheduler == "cluster":
        request.getfixturevalue("client").compute(pending).result()
    else:
        with dask.config.set(scheduler="threads"):
            pending.compute()
    assert s3.fs().cat_file(url) == s3.fs().cat_file(now)
    assert pending_uploads(url, options) == []


@pytest.mark.parametrize(
    "ds",
    [
        xr.Dataset(attrs={"title": "no variables"}),
        xr.Dataset({"v": ("x", np.arange(1000, dtype=np.int16))}),
        everything(),
    ],
    ids=["no-variables", "one", "everything"],
)
def test_tiny_output_is_one_part(s3, ds):
    url = f"s3://{s3.bucket}/tiny.hurray"
    to_hurray(ds, url, storage_options=s3.storage_options)
    back = xr.open_dataset(url, engine="hurray", storage_options=s3.storage_options)
    xr.testing.assert_identical(back.load(), ds)
    assert s3.fs().size(url) < 64 * 1024  # no padding: the only part may be small
    assert pending_uploads(url, s3.storage_options) == []


def _progress_line(s3, capsys) -> str:
    url = f"s3://{s3.bucket}/field.hurray"
    to_hurray(_dataset(2), url, storage_options=s3.storage_options, part_bytes=PART)
    assert capsys.readouterr().err == ""  # stderr is not a terminal: no bar by default
    to_hurray(_dataset(2), url, storage_options=s3.storage_options, part_bytes=PART, progress=True)
    return capsys.readouterr().err


def test_progress_bar_counts_parts_on_workers(s3, client, capsys):
    err = _progress_line(s3, capsys)
    # 12 MiB of input (8 MiB of noise, 4 MiB of NaN) in runs of 5 MiB: three parts
    assert err.startswith(f"uploading s3://{s3.bucket}/field.hurray |")
    assert "100% 3/3 parts" in err and err.count("\n") == 1


def test_progress_bar_counts_parts_on_local_threads(s3, capsys):
    with dask.config.set(scheduler="threads"):
        err = _progress_line(s3, capsys)
    assert "100% 3/3 parts" in err and err.count("\n") == 1


def _many_chunks(noise: bool) -> xr.Dataset:
    """10,000 chunks of 10 floats (200 kB of pages, too many for the head), after
    8 MiB of noise in (256, 512) chunks when ``noise``: several runs."""
    ds = xr.Dataset({"small": ("n", np.arange(100_000, dtype=np.float32))})
    ds["small"].encoding["chunks"] = (10,)
    return xr.merge([_dataset()[["noise"]], ds]) if noise else ds


@pytest.mark.slow
@pytest.mark.parametrize("noise", [True, False], ids=["runs", "one-part"])
def test_pages_after_the_chunks(s3, noise):
    """An index too large for the head goes after the chunks, as a local write puts
    it: in its own part after the runs, or in the only part of a small file."""
    url = f"s3://{s3.bucket}/pages.hurray"
    ds = _many_chunks(noise)
    with dask.config.set(scheduler="threads"):
        to_hurray(ds, url, storage_options=s3.storage_options, part_bytes=PART)
    back = xr.open_dataset(url, engine="hurray", storage_options=s3.storage_options)
    xr.testing.assert_identical(back.load(), ds.compute())
    source = FsspecSource(url, s3.storage_options)
    assert verify_file(source) == []
    assert pending_uploads(url, s3.storage_options) == []
    info = s3.fs().info(url)
    # the head, two runs (8.4 MiB of input in runs of 5 MiB) and the pages; or one part
    assert _part_count(info) == (4 if noise else 1)
    # the last 200 kB are the pages of "small", back to back: every chunk stored, so
    # each lists all its positions after a full bitmap
    table = open_reader(source).page_table("small")
    lengths = table["length"].astype(np.int64)
    assert lengths.tolist() == [128 + 1024 * 20] * 9 + [98 + 784 * 20]
    starts = table["offset"].astype(np.int64)
    assert (starts[1:] == starts[:-1] + lengths[:-1]).all()
    assert starts[-1] + lengths[-1] == info["size"]


def _raise_on_block(block: np.ndarray, block_info=None) -> np.ndarray:
    if block_info[0]["chunk-location"] == (3, 1):
        raise RuntimeError("injected failure")
    return block


def _kill_worker_on_block(block: np.ndarray, marker: str, block_info=None) -> np.ndarray:
    """Kill the worker process running the task: every time, or once when ``marker``
    names a file (created on the first kill)."""
    if block_info[0]["chunk-location"] == (3, 1):
        if not marker or not os.path.exists(marker):
            if marker:
                Path(marker).touch()
            os._exit(1)
    return block


def _old_object(s3) -> tuple[str, bytes]:
    url = f"s3://{s3.bucket}/field.hurray"
    to_hurray(xr.Dataset({"old": ("x", np.arange(5))}), url, storage_options=s3.storage_options)
    return url, s3.fs().cat_file(url)


def _assert_untouched(s3, url: str, old: bytes) -> None:
    assert s3.fs().cat_file(url) == old
    assert pending_uploads(url, s3.storage_options) == []


def test_failing_task_aborts(s3, client):
    url, old = _old_object(s3)
    ds = _dataset()
    data = ds["noise"].data.map_blocks(_raise_on_block, dtype=np.float32)
    ds["noise"] = ds["noise"].copy(data=data)
    with pytest.raises(RuntimeError, match="injected failure"):
        to_hurray(ds, url, storage_options=s3.storage_options, part_bytes=PART)
    _assert_untouched(s3, url, old)


@pytest.mark.slow
def test_killed_worker_aborts(s3, client):
    url, old = _old_object(s3)
    ds = _dataset()
    data = ds["noise"].data.map_blocks(_kill_worker_on_block, "", dtype=np.float32)
    ds["noise"] = ds["noise"].copy(data=data)
    with pytest.raises(distributed.KilledWorker):
        to_hurray(ds, url, storage_options=s3.storage_options, part_bytes=PART)
    _assert_untouched(s3, url, old)
    client.wait_for_workers(2, timeout=60)


@pytest.mark.slow
def test_worker_lost_once_is_replaced(s3, client, tmp_path):
    """The task of a lost worker runs again elsewhere and uploads its part again."""
    url = f"s3://{s3.bucket}/field.hurray"
    ds = _dataset()
    data = ds["noise"].data.map_blocks(
        _kill_worker_on_block, str(tmp_path / "killed"), dtype=np.float32
    )
    to_hurray(ds.assign(noise=ds["noise"].copy(data=data)), url, storage_options=s3.storage_options)
    assert (tmp_path / "killed").exists()
    back = xr.open_dataset(url, engine="hurray", storage_options=s3.storage_options)
    xr.testing.assert_identical(back.load(), ds.compute())
    assert pending_uploads(url, s3.storage_options) == []
    client.wait_for_workers(2, timeout=60)


INTERRUPTED = textwrap.dedent(
    """
    import sys, time
    import dask, dask.array as da, numpy as np, xarray as xr
    from xarray_hurray.xarray import to_hurray

    def slow(block):
        time.sleep(1.0)
        return block

    data = da.random.random((4096, 2048), chunks=(256, 512)).astype("f4").map_blocks(slow)
    options = {"key": "testing", "secret": "testing",
               "client_kwargs": {"endpoint_url": sys.argv[2], "region_name": "us-west-2"}}
    with dask.config.set(scheduler="threads", num_workers=2):
        to_hurray(xr.Dataset({"v": (("y", "x"), data)}), sys.argv[1],
                  storage_options=options, part_bytes=5 * 2**20)
    """
)


@pytest.mark.slow
def test_interrupted_client_aborts(s3):
    url, old = _old_object(s3)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", INTERRUPTED, url, s3.url], env=env)
    try:
        deadline = time.monotonic() + 120
        while not pending_uploads(url, s3.storage_options):  # the upload has begun
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        # while its first runs are being encoded: 64 blocks of a second each on two
        # threads, the first part's 5 MiB after ten of them, so that the signal comes
        # half a minute before the end however late the upload is seen on a busy machine
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        assert child.wait(60) != 0
    finally:
        child.kill()
    _assert_untouched(s3, url, old)
