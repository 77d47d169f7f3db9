"""The latency-injecting HTTP server of the benchmarks, over real sockets."""

from __future__ import annotations

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


def test_concurrent_requests_overlap_and_none_is_dropped(tmp_path):
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
    # every request overlaps the others: far below one latency each, and no
    # dropped connection (a one-second retransmit)
    assert latency <= threaded < latency + 0.9
    assert latency <= gathered < latency + 0.9


def test_bandwidth_is_shared_by_all_responses(tmp_path):
    (tmp_path / "data.bin").write_bytes(DATA)
    with LatencyServer(tmp_path, latency=0.0, bandwidth=len(DATA) / 0.1) as server:
        url = server.url("data.bin")
        start = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: _get(url), range(4)))
        elapsed = time.perf_counter() - start
    assert 0.4 <= elapsed < 1.5
