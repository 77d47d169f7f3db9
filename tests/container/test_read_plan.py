"""The reader's parts that need no I/O: the bytes fetched already (``fetched.py``) and
the planning of a read's wave (``read_plan.py``), against brute force over bytes in
memory."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from xarray_hurray.container.fetched import ByteCache, Spans
from xarray_hurray.container.metadata import VariableMeta
from xarray_hurray.container.read_plan import Wave, one_chunk, whole_key
from xarray_hurray.io import MergePolicy
from xarray_hurray.layout import RowMajorLayout

FILE = bytes(range(256)) * 8
"""The bytes of a file, in memory."""


def _ranges(draw: st.DrawFn, count: int) -> np.ndarray:
    rows = []
    for _ in range(count):
        start = draw(st.integers(0, len(FILE) - 1))
        rows.append((start, draw(st.integers(start + 1, min(start + 200, len(FILE))))))
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


@st.composite
def waves(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, Spans, MergePolicy]:
    requests = _ranges(draw, draw(st.integers(0, 6)))
    ahead = _ranges(draw, draw(st.integers(0, 4)))
    spans = Spans(tuple((int(a), FILE[a:b]) for a, b in _ranges(draw, draw(st.integers(0, 3)))))
    gap = draw(st.sampled_from([0, 16, 4096]))
    return requests, ahead, spans, MergePolicy(max_gap=gap, max_request=max(gap, 1) * 64)


@given(waves(), st.randoms(use_true_random=False))
def test_a_wave_answers_each_request_with_its_bytes_whatever_the_order(wave, rng):
    requests, ahead, spans, policy = wave
    planned = Wave.of(requests, spans, ahead, policy)
    arrived = [(k, FILE[a:b]) for k, (a, b) in enumerate(planned.send.tolist())]
    rng.shuffle(arrived)
    kept: list[tuple[tuple[int, bytes], ...]] = []
    answers = list(planned.answers(arrived, kept.append))
    # every request once, with the file's bytes
    assert sorted(k for k, _ in answers) == list(range(len(requests)))
    for k, blob in answers:
        assert bytes(blob) == FILE[requests[k][0] : requests[k][1]]
    # what was cut from the spans takes no request, and the others go out
    inside = spans.inside(requests[:, 0], requests[:, 1])
    assert len(planned.cached) == inside.sum()
    sent_bytes = set()
    for a, b in planned.send.tolist():
        sent_bytes |= set(range(a, b))
    for (a, b), cut in zip(requests.tolist(), inside, strict=True):
        assert cut or set(range(a, b)) <= sent_bytes
    # ahead goes out only beside a request of the read, and its answers are kept
    if inside.all() or not len(ahead):
        assert kept == []
        assert len(planned.send) == (~inside).sum()
    else:
        (wave_kept,) = kept
        held = Spans(wave_kept)
        assert held.inside(ahead[:, 0], ahead[:, 1]).all()
        for offset, blob in wave_kept:
            assert blob == FILE[offset : offset + len(blob)]


def test_spans_cut_whole_parts_as_they_are_and_views_of_the_rest():
    part = FILE[100:300]
    spans = Spans(((100, part),))
    assert spans.cut(100, 300) is part
    assert bytes(spans.cut(150, 160)) == FILE[150:160]
    assert spans.cut(99, 110) is None and spans.cut(290, 301) is None
    assert spans.inside(np.array([100, 99, 299]), np.array([300, 110, 300])).tolist() == [
        True,
        False,
        True,
    ]
    assert Spans().joined(()) == Spans()
    assert bytes(Spans().joined(((0, b"ab"),)).cut(0, 1) or b"") == b"a"


def test_the_cache_keeps_the_last_two_waves_ahead_and_a_copy_the_head_alone():
    cache = ByteCache(FILE[:64])
    assert cache.spans("v", head=True).parts == ((0, FILE[:64]),)
    assert cache.spans("v", head=False).parts == ()
    waves = [((100 * k, FILE[100 * k : 100 * k + 10]),) for k in range(1, 4)]
    taken = []
    for wave in waves:
        cache.keep_ahead("v", wave)
        taken.append(cache.spans("v", head=False))
    # the two last waves, for this variable only
    assert cache.spans("v", head=False).parts == waves[1] + waves[2]
    assert cache.spans("w", head=False).parts == ()
    # a read's spans stay as they were taken, whatever is kept after
    assert taken[0].parts == waves[0] and taken[0].cut(100, 110) == FILE[100:110]
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.spans("v", head=True).parts == ((0, FILE[:64]),)


def _var(shape: tuple[int, ...], chunks: tuple[int, ...]) -> VariableMeta:
    dims = tuple(f"d{k}" for k in range(len(shape)))
    return VariableMeta("v", dims, shape, "float32", chunks, RowMajorLayout())


@given(
    st.lists(st.tuples(st.integers(1, 9), st.integers(1, 4)), min_size=1, max_size=3),
    st.data(),
)
def test_one_chunk_names_the_whole_chunk_a_key_selects(axes, data):
    shape = tuple(n for n, _ in axes)
    chunks = tuple(c for _, c in axes)
    var = _var(shape, chunks)
    grid = tuple(-(-n // c) for n, c in zip(shape, chunks, strict=True))

    def box(chunk_id: int) -> tuple[slice, ...]:
        at = np.unravel_index(chunk_id, grid)
        return tuple(slice(int(i) * c, int(i) * c + c) for i, c in zip(at, chunks, strict=True))

    # a chunk's own slices name it where the chunk is whole (not cut by the edge)
    for chunk_id in range(int(np.prod(grid))):
        full = all(b.stop <= n for b, n in zip(box(chunk_id), shape, strict=True))
        assert one_chunk(var, box(chunk_id)) == (chunk_id if full else None)
    # any key: a chunk named is exactly what the key selects, and whole
    key = tuple(
        slice(data.draw(st.integers(0, n)), data.draw(st.integers(0, n + 1))) for n in shape
    )
    picked = np.zeros(shape, dtype=bool)
    picked[key] = True
    found = one_chunk(var, key)
    if found is not None:
        inside = np.zeros(shape, dtype=bool)
        inside[box(found)] = True
        assert (picked == inside).all() and inside.sum() == np.prod(chunks)
    assert whole_key(var, key) == bool(picked.all())
    assert one_chunk(var, (np.arange(1),) * len(shape)) is None  # arrays never
