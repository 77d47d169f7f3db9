"""The I/O layer: range planning against a brute-force check, and byte sources."""

from __future__ import annotations

import io
import itertools
import os
import pickle

import fsspec
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from xarray_hurray.io import (
    FileObjectSource,
    FsspecSource,
    LocalFileSource,
    MergePolicy,
    open_source,
    plan_reads,
)

ranges = st.lists(
    st.tuples(st.integers(0, 10_000), st.integers(0, 500)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=40,
)


@given(ranges=ranges, gap=st.integers(0, 300), cap=st.integers(1, 3000))
def test_plan_covers_every_range_and_respects_the_policy(ranges, gap, cap):
    starts = np.array([r[0] for r in ranges], dtype=np.int64)
    stops = np.array([r[1] for r in ranges], dtype=np.int64)
    plan = plan_reads(starts, stops, MergePolicy(max_gap=gap, max_request=cap))
    requests = plan.requests
    # sorted and disjoint; neighbours may touch when the size cap split them
    assert np.all(requests[1:, 0] >= requests[:-1, 1]) or len(requests) < 2
    for start, stop, request in zip(starts, stops, plan.request_of, strict=True):
        assert requests[request, 0] <= start and stop <= requests[request, 1]
    for (a0, a1), (b0, b1) in itertools.pairwise(requests):
        # two neighbours were kept apart by the gap or by the size cap
        assert b0 - a1 > gap or b1 - a0 > cap
    for request, (r0, r1) in enumerate(requests):
        members = plan.request_of == request
        # a request is exactly the hull of its ranges: no byte beyond them is read
        assert r0 == starts[members].min() and r1 == stops[members].max()


def _greedy(starts, stops, gap, cap):
    """The merge rule as plan_reads states it, one range at a time in start order."""
    requests, request_of = [], {}
    for i in sorted(range(len(starts)), key=lambda i: (starts[i], i)):
        start, stop = int(starts[i]), int(stops[i])
        if requests:
            current = requests[-1]
            joined = max(current[1], stop)
            if start < current[1] or (start - current[1] <= gap and joined - current[0] <= cap):
                current[1] = joined
                request_of[i] = len(requests) - 1
                continue
        requests.append([start, stop])
        request_of[i] = len(requests) - 1
    return requests, [request_of[i] for i in range(len(starts))]


@given(ranges=ranges, gap=st.integers(0, 300), cap=st.integers(1, 3000))
def test_plan_is_the_stated_greedy_rule(ranges, gap, cap):
    starts = [r[0] for r in ranges]
    stops = [r[1] for r in ranges]
    plan = plan_reads(starts, stops, MergePolicy(max_gap=gap, max_request=cap))
    requests, request_of = _greedy(starts, stops, gap, cap)
    assert plan.requests.tolist() == requests
    assert plan.request_of.tolist() == request_of


@given(
    ranges=ranges,
    gap=st.integers(0, 300),
    crowded=st.integers(0, 600),
    cap=st.integers(1, 3000),
    in_flight=st.integers(1, 20),
)
def test_plan_widens_the_gap_when_requests_exceed_those_in_flight(
    ranges, gap, crowded, cap, in_flight
):
    starts = [r[0] for r in ranges]
    stops = [r[1] for r in ranges]
    policy = MergePolicy(max_gap=gap, max_request=cap, in_flight=in_flight, crowded_gap=crowded)
    plan = plan_reads(starts, stops, policy)
    requests, request_of = _greedy(starts, stops, gap, cap)
    if len(requests) > in_flight and crowded > gap:
        requests, request_of = _greedy(starts, stops, crowded, cap)
    assert plan.requests.tolist() == requests
    assert plan.request_of.tolist() == request_of


def test_plan_examples():
    plan = plan_reads([0, 10, 30, 1000], [10, 20, 40, 1010], MergePolicy(max_gap=10))
    assert plan.requests.tolist() == [[0, 40], [1000, 1010]]
    assert plan.request_of.tolist() == [0, 0, 0, 1]
    plan = plan_reads([0, 10, 20], [10, 20, 30], MergePolicy(max_gap=0, max_request=20))
    assert plan.requests.tolist() == [[0, 20], [20, 30]]
    # three requests where two fit in flight: the 20-byte gaps are read through
    crowded = MergePolicy(max_gap=10, in_flight=2, crowded_gap=20)
    plan = plan_reads([0, 30, 60], [10, 40, 70], crowded)
    assert plan.requests.tolist() == [[0, 70]]
    assert plan_reads([0, 30], [10, 40], crowded).requests.tolist() == [[0, 10], [30, 40]]


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_gap", -1), ("max_request", 0), ("max_gap", 1.5), ("in_flight", 0), ("crowded_gap", -1)],
)
def test_merge_policy_rejects_bad_values(field, value):
    with pytest.raises(ValueError, match=field):
        MergePolicy(**{field: value})


@pytest.fixture
def payload(tmp_path):
    data = bytes(range(256)) * 40
    path = tmp_path / "bytes.bin"
    path.write_bytes(data)
    url = "memory://hurray-io/bytes.bin"
    with fsspec.open(url, "wb") as f:
        f.write(data)
    return data, path, url


@pytest.mark.parametrize("kind", ["path", "fileobj", "url"])
def test_sources_read_ranges_and_survive_pickling(payload, kind):
    data, path, url = payload
    source = {
        "path": lambda: open_source(path),
        "fileobj": lambda: open_source(io.BytesIO(data)),
        "url": lambda: open_source(url),
    }[kind]()
    expected_type = {"path": LocalFileSource, "fileobj": FileObjectSource, "url": FsspecSource}
    assert isinstance(source, expected_type[kind])
    assert source.read(5, 9) == data[5:9]
    assert source.read(len(data) - 2, len(data) + 5) == data[-2:]  # short at the end
    ranges = np.array([[0, 3], [100, 300], [9000, 9100]])
    assert source.read_ranges(ranges) == [data[a:b] for a, b in ranges]
    clone = pickle.loads(pickle.dumps(source))
    assert clone.read(7, 70) == data[7:70]
    assert source.size() in (None, len(data))


def test_local_source_pickles_without_its_handle(payload):
    _, path, _ = payload
    source = LocalFileSource(path)
    source.read(0, 1)
    state = pickle.dumps(source)
    assert b"BufferedReader" not in state and len(state) < 200
    source.close()
    assert source.read(0, 2) == bytes([0, 1])


def test_storage_options_need_a_path():
    with pytest.raises(ValueError, match="storage_options"):
        open_source(io.BytesIO(b""), storage_options={"anon": True})
    with pytest.raises(TypeError, match="file-like"):
        FileObjectSource(42)


class _ShortReads(io.RawIOBase):
    """A seekable raw stream that returns at most 100 bytes per read, as raw streams may."""

    def __init__(self, data: bytes) -> None:
        self.inner = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self.inner.seek(offset, whence)

    def read(self, size: int = -1) -> bytes:
        return self.inner.read(min(size, 100))


def test_short_reads_are_continued_to_the_end_of_the_range(payload, monkeypatch):
    data, path, _ = payload
    assert FileObjectSource(_ShortReads(data)).read(10, 5000) == data[10:5000]
    pread = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, offset: pread(fd, min(n, 100), offset))
    source = LocalFileSource(path)
    assert source.read(10, 5000) == data[10:5000]
    assert source.read(len(data) - 50, len(data) + 50) == data[-50:]  # short only at the end


def test_closing_a_local_source_during_a_read_does_not_close_it_under_the_read(
    payload, tmp_path, monkeypatch
):
    data, path, _ = payload
    other = tmp_path / "other.bin"
    other.write_bytes(b"\xff" * len(data))
    source = LocalFileSource(path)
    pread = os.pread
    opened = []

    def close_then_read(fd, n, offset):
        source.close()  # another thread closes the source mid-read ...
        opened.append(open(other, "rb"))  # ... and another file may take the freed number
        return pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", close_then_read)
    try:
        assert source.read(0, 300) == data[:300]
    finally:
        for f in opened:
            f.close()
