"""Shared test configuration and fixtures."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import settings

settings.register_profile("default", deadline=None, max_examples=60)
settings.load_profile("default")


@dataclass(frozen=True)
class S3Endpoint:
    """A running S3-compatible server on the loopback interface, and a fresh bucket."""

    url: str
    bucket: str
    client: Any = field(default=None, repr=False, compare=False)
    """The session's s3fs client of the server (see :meth:`fs`)."""

    @property
    def storage_options(self) -> dict[str, Any]:
        """fsspec/s3fs options that reach this server and nothing else."""
        return {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": self.url, "region_name": "us-west-2"},
        }

    def fs(self) -> Any:
        """An s3fs client of this server that knows nothing yet, as a new one: the
        session's, its listings forgotten (a new client reads botocore's service
        descriptions again, a tenth of a second each time)."""
        self.client.invalidate_cache()
        return self.client


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server_url() -> Iterator[str]:
    """Start moto's S3 server on 127.0.0.1 for the whole session."""
    server_module = pytest.importorskip("moto.server")
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-west-2",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        os.environ.setdefault(name, value)
    port = _free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3_buckets(s3_server_url: str) -> Any:
    """The client of the session's S3 server that makes the buckets: one for the
    session, as a new client reads botocore's service descriptions again (tenths of a
    second each time)."""
    s3fs = pytest.importorskip("s3fs")
    options = S3Endpoint(url=s3_server_url, bucket="").storage_options
    return s3fs.S3FileSystem(**options, skip_instance_cache=True)


@pytest.fixture
def s3(s3_server_url: str, s3_buckets: Any) -> S3Endpoint:
    """A new, empty bucket on the session's S3 server."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    endpoint = S3Endpoint(url=s3_server_url, bucket=name, client=s3_buckets)
    s3_buckets.mkdir(endpoint.bucket)
    return endpoint


@pytest.fixture(scope="session")
def cluster() -> Iterator[Any]:
    """A dask.distributed LocalCluster of two one-thread worker processes, started once
    for the session (a start and a close cost seconds); a task that kills its worker
    twice fails.  Each module makes its own client of it, as a client is dask's default
    scheduler while it is open."""
    distributed = pytest.importorskip("distributed")
    import dask

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        started = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
    with started:
        yield started
