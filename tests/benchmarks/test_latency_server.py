"""The latency-injecting HTTP server of the benchmarks, over real sockets."""

from __future__ import annotations

import errno
import select
import socket
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import fsspec
import pytest
from scripts import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from latency_server import LatencyServer

DATA = bytes(range(256)) * 64


def _get(url: str, headers: dict[str, str] | None = None, method: str = "GET"):
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    with urllib.request.urlopen(request) as response:
        return response.status, dict(response.headers), response.read()


@pytest.fixture
def served(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.bin").write_bytes(DATA)
    (tmp_path.parent / "outside.bin").write_bytes(b"secret")
    with LatencyServer(tmp_path, latency=0.0) as server:
        yield server


@pytest.mark.parametrize(
    ("header", "status", "expected"),
    [
        (None, 200, DATA),
        ("bytes=2-5", 206, DATA[2:6]),
        ("bytes=16380-", 206, DATA[16380:]),
        ("bytes=-3", 206, DATA[-3:]),
        ("bytes=100-99999", 206, DATA[100:]),
    ],
    ids=["whole", "closed", "open", "suffix", "past-the-end"],
)
def test_ranges_match_the_file(served, header, status, expected):
    got = _get(served.url("sub/data.bin"), {"Range": header} if header else None)
    assert got[0] == status
    assert got[2] == expected
    ((arrival, method, sent),) = served.log
    assert (method, sent) == ("GET", len(expected))
    assert served.arrivals == [arrival]
    if header:
        assert got[1]["Content-Range"].endswith(f"/{len(DATA)}")


def test_head_missing_outside_and_unsatisfiable(served):
    status, headers, body = _get(served.url("sub/data.bin"), method="HEAD")
    assert (status, int(headers["Content-Length"]), body) == (200, len(DATA), b"")
    for path, headers in [
        ("sub/missing.bin", None),
        ("../outside.bin", None),
        ("sub/data.bin", {"Range": f"bytes={len(DATA)}-"}),
    ]:
        with pytest.raises(urllib.error.HTTPError) as err:
            _get(served.url(path), headers)
        assert err.value.code in (404, 416)
    assert served.counts == {"HEAD": 1, "GET": 3}
    served.reset()
    assert served.requests == 0


def test_the_listen_queue_holds_every_connection_a_client_opens_at_once(tmp_path):
    # The server is listening but accepts nothing, so only the listen backlog can hold
    # the connections: with Python's default of 5, all but six stay unanswered (the
    # kernel drops their SYNs) however long one waits.  The deadline only stops a hang.
    count = 100
    server = LatencyServer(tmp_path, latency=0.0)
    clients = [socket.socket() for _ in range(count)]
    try:
        for client in clients:
            client.setblocking(False)
            assert client.connect_ex(server._server.server_address) in (0, errno.EINPROGRESS)
        pending = set(clients)
        deadline = time.monotonic() + 10
        while pending and time.monotonic() < deadline:
            _, writable, _ = select.select([], list(pending), [], 0.5)
            pending.difference_update(writable)
        assert not pending
        assert all(c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0 for c in clients)
    finally:
        for client in clients:
            client.close()
        server.stop()


def test_concurrent_requests_overlap(tmp_path):
    (tmp_path / "data.bin").write_bytes(DATA)
    latency, count = 0.5, 100
    with LatencyServer(tmp_path, latency=latency) as server:
        fs = fsspec.filesystem("http", skip_instance_cache=True)
        url = server.url("data.bin")
        start = time.perf_counter()
        with ThreadPoolExecutor(count) as pool:
            got = list(pool.map(lambda k: _get(url, {"Range": f"bytes={k}-{k}"})[2], range(count)))
        threaded = time.perf_counter() - start
        start = time.perf_counter()
        blobs = fs.cat_ranges([url] * count, list(range(count)), list(range(1, count + 1)))
        gathered = time.perf_counter() - start
        assert server.counts == {"GET": 2 * count}
    assert got == blobs == [DATA[k : k + 1] for k in range(count)]
    # Each request waits one latency on the server, so answered one at a time they take
    # count * latency (50 s).  A bound at a tenth of that fails a server that answers
    # fewer than ten at once, and leaves seconds for a loaded machine to start threads.
    serial = count * latency
    assert latency <= threaded < serial / 10
    assert latency <= gathered < serial / 10


def test_bandwidth_is_shared_by_all_responses(tmp_path):
    (tmp_path / "data.bin").write_bytes(DATA)
    with LatencyServer(tmp_path, latency=0.0, bandwidth=len(DATA) / 0.1) as server:
        url = server.url("data.bin")
        start = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: _get(url), range(4)))
        elapsed = time.perf_counter() - start
    assert 0.4 <= elapsed < 1.5


def test_round_trips_count_requests_sent_together_once_and_sent_on_answers_apart(tmp_path):
    # requests sent together but arriving apart, as on a loaded machine, by 30 ms of
    # a 100 ms latency: one round trip; each sent on the answers of the last: another
    (tmp_path / "data.bin").write_bytes(DATA)
    with LatencyServer(tmp_path, latency=0.1) as server:
        url = server.url("data.bin")

        def late(k: int) -> bytes:
            time.sleep(0.03 * k)
            return _get(url, {"Range": f"bytes={k}-{k}"})[2]

        server.reset()
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(late, range(3)))
        assert server.requests == 3 and server.round_trips == 1
        for _ in range(2):
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(late, range(2)))
        assert server.requests == 7 and server.round_trips == 3
