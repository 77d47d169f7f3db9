"""Multipart uploads against moto's S3 server, and the part planner."""

from __future__ import annotations

import itertools
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from xarray_hurray.io.multipart import (
    S3_RULES,
    MultipartUpload,
    PartRules,
    cut_runs,
    pending_uploads,
    start_multipart,
)

MIB = 2**20


def _upload_in_other_process(upload: MultipartUpload, number: int, data: bytes):
    return upload.upload_part(number, data)


@pytest.mark.slow
def test_parts_in_any_order_from_another_process(s3):
    url = f"s3://{s3.bucket}/field.hurray"
    rng = np.random.default_rng(0)
    pieces = [rng.bytes(5 * MIB), rng.bytes(5 * MIB), b"tail"]
    upload = start_multipart(url, s3.storage_options)
    assert upload is not None
    assert pending_uploads(url, s3.storage_options) == [upload.upload_id]
    # a pickled upload, used elsewhere; spawned, since this process runs threads (the S3
    # server, fsspec's event loop) whose locks a forked child could inherit held
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        second = pool.submit(_upload_in_other_process, upload, 2, pieces[1]).result()
    third = upload.upload_part(3, pieces[2])
    first = upload.upload_part(1, pieces[0])
    assert not s3.fs().exists(url)  # nothing appears before completion
    upload.complete([third, first, second])
    assert s3.fs().cat_file(url) == b"".join(pieces)
    assert pending_uploads(url, s3.storage_options) == []


def test_abort_leaves_old_object_and_no_parts(s3):
    url = f"s3://{s3.bucket}/field.hurray"
    fs = s3.fs()
    fs.pipe_file(url, b"old object")
    upload = start_multipart(url, s3.storage_options)
    upload.upload_part(1, bytes(5 * MIB))
    upload.upload_part(2, b"x")
    upload.abort()
    upload.abort()  # already gone: not an error
    assert fs.cat_file(url) == b"old object"
    assert pending_uploads(url, s3.storage_options) == []


def test_completion_whose_answer_was_lost(s3):
    """A completion retried after the store completed it (its answer lost to a
    timeout or a dropped connection) finds the upload gone: it succeeds when the
    object is this upload's, and fails when the upload is gone without it."""
    url = f"s3://{s3.bucket}/field.hurray"
    pieces = [bytes(5 * MIB), b"tail"]
    # moto answers the completion of an upload that is gone with a server error, which
    # botocore would retry four times with backoff (seconds): one attempt, the same
    # answer in the end
    options = {**s3.storage_options, "config_kwargs": {"retries": {"total_max_attempts": 1}}}
    upload = start_multipart(url, options)
    parts = [upload.upload_part(n, data) for n, data in enumerate(pieces, start=1)]
    upload.complete(parts)
    upload.complete(parts)  # the retry: the upload is gone, its object is there
    assert s3.fs().cat_file(url) == b"".join(pieces)
    aborted = start_multipart(url, options)
    part = aborted.upload_part(1, b"never completed")
    aborted.abort()
    with pytest.raises(OSError):  # gone, and the object is the earlier upload's
        aborted.complete([part])
    assert s3.fs().cat_file(url) == b"".join(pieces)


def test_exclusive_completion_keeps_an_object_that_appeared(s3):
    url = f"s3://{s3.bucket}/field.hurray"
    upload = start_multipart(url, s3.storage_options)
    part = upload.upload_part(1, b"new object")
    s3.fs().pipe_file(url, b"written meanwhile")
    with pytest.raises(FileExistsError):
        upload.complete([part], exclusive=True)
    upload.abort()
    assert s3.fs().cat_file(url) == b"written meanwhile"
    assert pending_uploads(url, s3.storage_options) == []
    other = start_multipart(f"s3://{s3.bucket}/fresh.hurray", s3.storage_options)
    other.complete([other.upload_part(1, b"fresh")], exclusive=True)
    assert s3.fs().cat_file(f"s3://{s3.bucket}/fresh.hurray") == b"fresh"


def test_server_enforces_minimum_part(s3):
    """moto refuses, as S3 does, a part below 5 MiB that is not the last."""
    url = f"s3://{s3.bucket}/small.hurray"
    upload = start_multipart(url, s3.storage_options)
    parts = [upload.upload_part(1, b"small"), upload.upload_part(2, b"last")]
    with pytest.raises(Exception, match="smaller than the minimum"):
        upload.complete(parts)
    upload.abort()
    assert pending_uploads(url, s3.storage_options) == []


def test_stores_without_multipart():
    assert start_multipart("memory://bucket/x.hurray", {}) is None
    with pytest.raises(ValueError, match="s3://"):
        pending_uploads("memory://bucket/x.hurray", {})


def test_one_run_for_tiny_output():
    assert cut_runs(np.array([10, 20, 30])).tolist() == [0, 3]
    assert cut_runs(np.array([], dtype=np.int64)).tolist() == [0]


SMALL = PartRules(min_part=100, max_part=10_000, max_parts=8)


@given(
    sizes=st.lists(st.integers(0, 400), min_size=1, max_size=200),
    part_bytes=st.integers(1, 3000),
    reserved=st.integers(0, 3),
)
def test_runs_fit_the_rules(sizes, part_bytes, reserved):
    sizes = np.array(sizes, dtype=np.int64)
    cuts = cut_runs(sizes, part_bytes, SMALL, reserved)
    assert cuts[0] == 0 and cuts[-1] == len(sizes)
    assert np.all(np.diff(cuts) > 0)  # no run is empty
    assert len(cuts) - 1 <= SMALL.max_parts - reserved
    part = max(part_bytes, SMALL.min_part, -(-int(sizes.sum()) // (SMALL.max_parts - reserved)))
    for start, stop in itertools.pairwise(cuts):
        run = sizes[start:stop]
        held = np.flatnonzero(run)
        last = run[held[-1]] if len(held) else 0  # empty pieces at the end add nothing
        assert run.sum() < part + last or run.sum() == 0  # memory per part bounded
        assert run.sum() <= SMALL.max_part


def test_empty_pieces_at_the_end_join_the_last_run():
    # seven full parts and a missing chunk (no bytes) fill the seven parts left
    cuts = cut_runs(np.array([100] * 7 + [0]), part_bytes=1, rules=SMALL, reserved=1)
    assert cuts.tolist() == [0, 1, 2, 3, 4, 5, 6, 8]


def test_part_size_grows_to_fit_the_part_count():
    cuts = cut_runs(np.full(1000, 50), part_bytes=100, rules=SMALL, reserved=1)
    assert len(cuts) - 1 == 7  # parts of 7143 bytes rather than 100


def test_too_large_for_one_object():
    with pytest.raises(ValueError, match="several objects"):
        cut_runs(np.full(100, 1000), rules=SMALL)
    with pytest.raises(ValueError, match="several objects"):
        cut_runs(np.array([S3_RULES.max_part + 1]))
