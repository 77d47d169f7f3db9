"""Reads decode each answer as it arrives: results and errors do not depend on the
order in which a source's answers come."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import ContainerReader, decode
from xarray_hurray.io import ByteSource, LocalFileSource, MergePolicy

SIDE, CHUNK = 96, 8
ONE_CHUNK_PER_REQUEST = MergePolicy(max_gap=0, max_request=1)


class ShuffledAnswers(ByteSource):
    """A local file whose answers to the requests of a read come in an order of its
    own (as those of a remote store do): last request first, or shuffled by ``seed``."""

    def __init__(self, path: Path, seed: int | None) -> None:
        self.source = LocalFileSource(path)
        self.seed = seed

    @property
    def name(self) -> str:
        return self.source.name

    def read(self, start: int, stop: int) -> bytes:
        return self.source.read(start, stop)

    def read_ranges_as_completed(self, ranges: np.ndarray) -> Iterator[tuple[int, bytes]]:
        answers = list(enumerate(self.source.read_ranges(ranges)))
        if self.seed is None:
            return reversed(answers)
        order = np.random.default_rng(self.seed).permutation(len(answers))
        return iter([answers[k] for k in order.tolist()])

    def size(self) -> int:
        return self.source.size()


@pytest.fixture(scope="module")
def truth() -> np.ndarray:
    rng = np.random.default_rng(5)
    values = rng.standard_normal((SIDE, SIDE)).astype("f4")
    values[8:40, 16:48] = np.nan  # 16 chunks of the fill value: missing chunks (1.1)
    return values


@pytest.fixture(scope="module", params=["hilbert", "row-major"])
def path(request, tmp_path_factory, truth) -> Path:
    path = tmp_path_factory.mktemp("order") / "f.hurray"
    ds = xr.Dataset({"v": (("y", "x"), truth)})
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (CHUNK, CHUNK)}}, chunk_order=request.param)
    return path


KEYS = [
    (slice(None), slice(None)),
    (slice(3, 77), slice(10, 50)),
    (slice(5, 90, 7), np.array([95, 0, 33, 33, 12])),
    (17, slice(None)),
]


@pytest.mark.parametrize("seed", [None, 0, 1])
@pytest.mark.parametrize("batch_bytes", [1, 2**30])
def test_any_order_of_answers_reads_the_same_values(path, truth, seed, batch_bytes, monkeypatch):
    # a batch of one byte decodes each chunk as a task of its own, on the decode pool;
    # a batch of 1 GiB decodes each answer in one task (a read of one, in this thread)
    monkeypatch.setattr(decode, "DECODE_BATCH_BYTES", batch_bytes)
    shuffled = ContainerReader(ShuffledAnswers(path, seed), ONE_CHUNK_PER_REQUEST)
    for key in KEYS:
        np.testing.assert_array_equal(shuffled.read("v", key), truth[key])


@pytest.mark.parametrize("seed", [None, 0])
def test_the_first_damaged_chunk_in_the_selection_is_named_whatever_arrives_first(
    path, tmp_path, seed
):
    entries = xh.open_reader(path).index("v")
    grid = SIDE // CHUNK
    first, second = 2 * grid + 1, 9 * grid + 10  # chunks (2, 1) and (9, 10), both stored
    assert entries["size"][[first, second]].all()
    damaged = bytearray(path.read_bytes())
    for chunk in (first, second):
        damaged[int(entries["offset"][chunk]) + 5] ^= 0xFF
    copy = tmp_path / "damaged.hurray"
    copy.write_bytes(bytes(damaged))
    shuffled = ContainerReader(ShuffledAnswers(copy, seed), ONE_CHUNK_PER_REQUEST)
    with pytest.raises(xh.HurrayFormatError, match=f"checksum mismatch in chunk {first} "):
        shuffled.read("v")
    with pytest.raises(xh.HurrayFormatError, match=f"checksum mismatch in chunk {second} "):
        shuffled.read("v", (slice(9 * CHUNK, None), slice(None)))
