"""Distributed writes to object storage: to_hurray (workers upload the parts of one
multipart upload) against to_zarr (workers put one object per chunk), same cluster,
same data, same S3 server.

moto's S3 server, a dask scheduler and ``--workers`` one-thread workers (the
``dask`` command line) run in their own processes; this script is the client.
The client reaches the scheduler and the S3 server only through counting TCP
relays, so the bytes it receives and sends are counted on the wire (the workers
connect directly).  For each write the script reports the wall time, those bytes
and the peak size of the client's temporary directory, sampled every 10 ms.

    python benchmarks/distributed_write.py --gib 1 --workers 4
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr

from xarray_hurray.io import pending_uploads
from xarray_hurray.xarray import to_hurray

MIB = 2**20


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class CountingRelay:
    """A TCP relay on 127.0.0.1 to ``port``, counting the bytes each way."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.received = 0  # bytes towards the client
        self.sent = 0  # bytes from the client
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                inbound, _ = self._listener.accept()
            except OSError:
                return
            try:
                outbound = socket.create_connection(("127.0.0.1", self.target))
            except OSError:  # the server is not up yet: the client retries
                inbound.close()
                continue
            for src, dst, towards_client in ((inbound, outbound, False), (outbound, inbound, True)):
                threading.Thread(
                    target=self._pipe, args=(src, dst, towards_client), daemon=True
                ).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, towards_client: bool) -> None:
        try:
            while data := src.recv(1 << 16):
                dst.sendall(data)
                with self._lock:
                    if towards_client:
                        self.received += len(data)
                    else:
                        self.sent += len(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return self.received, self.sent


def _tree_bytes(root: Path) -> int:
    total = 0
    for path in root.rglob("*"):
        try:
            total += path.stat().st_size if path.is_file() else 0
        except FileNotFoundError:
            pass
    return total


class Timings(logging.Handler):
    """The phase timings the multipart writer logs."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.last: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        self.last = {k: getattr(record, k) for k in ("runs_s", "head_s", "complete_s")}


def measure(
    label: str,
    write: Callable[[], None],
    scratch: Path,
    relays: list[CountingRelay],
    output: int,
) -> dict[str, float]:
    """Run ``write``; wall time, client bytes in and out, peak local disk."""
    peak = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _tree_bytes(scratch))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    before = [r.counts() for r in relays]
    start = time.perf_counter()
    write()
    wall = time.perf_counter() - start
    after = [r.counts() for r in relays]
    read0, written0 = (sum(c[k] for c in before) for k in (0, 1))
    read1, written1 = (sum(c[k] for c in after) for k in (0, 1))
    stop.set()
    watcher.join()
    row = {
        "wall_s": wall,
        "client_read_MiB": (read1 - read0) / MIB,
        "client_written_MiB": (written1 - written0) / MIB,
        "disk_peak_MiB": peak[0] / MIB,
    }
    share = max(read1 - read0, written1 - written0, peak[0]) / output
    print(
        f"{label:<22} {wall:7.1f} s   client received {row['client_read_MiB']:8.2f} MiB   "
        f"sent {row['client_written_MiB']:8.2f} MiB   local disk peak "
        f"{row['disk_peak_MiB']:7.2f} MiB   (largest {100 * share:.3f}% of output)",
        flush=True,
    )
    return row


def control_completion(fs: Any, size: int, relays: list[CountingRelay]) -> None:
    """Time the server completing a multipart upload of ``size`` bytes in parts of
    64 MiB uploaded by this process through s3fs alone: the completion cost of the
    server itself, whoever wrote the parts."""
    part = bytes(64 * MIB)
    key = {"Bucket": "bench", "Key": "control.bin"}
    upload = fs.call_s3("create_multipart_upload", **key)["UploadId"]
    parts = []
    for number, start in enumerate(range(0, size, len(part)), start=1):
        body = part[: min(len(part), size - start)]
        etag = fs.call_s3("upload_part", Body=body, PartNumber=number, UploadId=upload, **key)[
            "ETag"
        ]
        parts.append({"PartNumber": number, "ETag": etag})
    start = time.perf_counter()
    fs.call_s3(
        "complete_multipart_upload",
        MultipartUpload={"Parts": parts},
        UploadId=upload,
        **key,
    )
    print(
        f"control: the server completes a plain {size / MIB:.0f} MiB upload of "
        f"{len(parts)} parts in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    fs.rm("bench/control.bin")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=1.0, help="output size before compression")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--no-control",
        dest="control",
        action="store_false",
        help="skip timing the server's completion of a plain multipart upload",
    )
    args = parser.parse_args()

    from distributed import Client

    work = Path(tempfile.mkdtemp(prefix="hurray-bench-"))
    scratch = work / "client-tmp"
    scratch.mkdir()
    tempfile.tempdir = str(scratch)  # where a staged write would go
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-west-2",
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    s3_port, scheduler_port = _free_port(), _free_port()
    processes = []
    try:
        server_env = {**env, "TMPDIR": str(work)}
        processes.append(
            subprocess.Popen(
                ["moto_server", "-H", "127.0.0.1", "-p", str(s3_port)],
                env=server_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        address = f"tcp://127.0.0.1:{scheduler_port}"
        processes.append(
            subprocess.Popen(
                [
                    "dask",
                    "scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(scheduler_port),
                    "--no-dashboard",
                ],
                env=env,
                stderr=subprocess.DEVNULL,
            )
        )
        processes.append(
            subprocess.Popen(
                [
                    "dask",
                    "worker",
                    address,
                    "--nworkers",
                    str(args.workers),
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--local-directory",
                    str(work / "workers"),
                ],
                env={
                    **env,
                    "TMPDIR": str(work / "workers"),
                    "AWS_ENDPOINT_URL": f"http://127.0.0.1:{s3_port}",
                },
                stderr=subprocess.DEVNULL,
            )
        )
        # the client's own connections go through counting relays; the S3 endpoint
        # comes from the environment (botocore's AWS_ENDPOINT_URL), so the same
        # storage options reach the server directly from the workers
        scheduler_relay, s3_relay = CountingRelay(scheduler_port), CountingRelay(s3_port)
        relays = [scheduler_relay, s3_relay]
        os.environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{s3_relay.port}"
        options = {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"region_name": "us-west-2"},
        }
        import s3fs

        fs = s3fs.S3FileSystem(**options)
        for _ in range(100):
            try:
                fs.mkdir("bench")
                break
            except OSError:
                time.sleep(0.2)
        client = Client(
            f"tcp://127.0.0.1:{scheduler_relay.port}", timeout=60, direct_to_workers=False
        )
        client.wait_for_workers(args.workers, timeout=60)

        # float32 normal noise (little compression), chunks of 4 MiB
        side = 512
        steps = max(int(args.gib * 2**30 / (side * side * 4)), 16)
        shape, chunks = (steps, side, side), (4, side, side)
        output = steps * side * side * 4
        print(
            f"output {output / MIB:.0f} MiB in {steps // 4} chunks of 4 MiB, "
            f"{args.workers} workers",
            flush=True,
        )
        field = da.random.default_rng(0).standard_normal(shape, dtype=np.float32, chunks=chunks)
        ds = xr.Dataset({"field": (("time", "y", "x"), field)})

        def hurray() -> None:
            to_hurray(ds, "s3://bench/field.hurray", storage_options=options)

        def zarr() -> None:
            ds.to_zarr("s3://bench/field.zarr", storage_options=options, mode="w")

        timings = Timings()
        writer_log = logging.getLogger("xarray_hurray.write.sinks.parts")
        writer_log.setLevel(logging.INFO)
        writer_log.addHandler(timings)
        for _ in range(args.repeats):
            measure("to_zarr", zarr, scratch, relays, output)
            measure("to_hurray (multipart)", hurray, scratch, relays, output)
            print(
                "    of which: runs encoded and uploaded {runs_s:.1f} s, head {head_s:.1f} s, "
                "completion by the server {complete_s:.1f} s".format(**timings.last),
                flush=True,
            )
        if args.control:
            control_completion(fs, fs.size("bench/field.hurray"), relays)
        print(
            "hurray object:",
            fs.size("bench/field.hurray") / MIB,
            "MiB; uploads left:",
            pending_uploads("s3://bench/field.hurray", options),
        )
        back = xr.open_dataset("s3://bench/field.hurray", engine="hurray", storage_options=options)
        sample = (slice(0, 8), slice(100, 300), slice(0, 512))
        assert np.array_equal(back["field"][sample].values, field[sample].compute())
        client.close()
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            process.wait(30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
