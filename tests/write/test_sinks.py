"""Every sink of a write follows one protocol: what it is given is what the target
holds once it commits, every other chunk kept; aborted, the target is as it was.

Each case is a real target: a local file (appended in place, or rewritten), a file
of an fsspec memory store (rewritten locally, uploaded whole) and an object of
moto's S3 server (committed by a multipart upload of the old bytes and the new).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import ChunkCodec, ContainerWriter, VariableMeta, open_reader
from xarray_hurray.container.sink import ChunkSink, TaskSink
from xarray_hurray.container.update import InPlaceCommit
from xarray_hurray.io import pending_uploads
from xarray_hurray.write import engine
from xarray_hurray.write.plan import WritePart, WritePlan
from xarray_hurray.write.sinks import (
    FileAppend,
    ObjectAppend,
    ObjectUpload,
    PartLayout,
    StagedRewrite,
    StagedUpload,
    choose_sink,
)
from xarray_hurray.write.target import WriteTarget

CHUNK = (128, 128)
ENCODING = {"v": {"chunks": CHUNK}}


def _values(rows: int) -> np.ndarray:
    """Values that do not compress, so that an object of them is several parts."""
    return np.random.default_rng(rows).standard_normal((rows, 1024))


def _box(var: VariableMeta, chunk_id: int) -> tuple[slice, ...]:
    corner = np.unravel_index(chunk_id, var.grid_shape)
    return tuple(slice(i * c, (i + 1) * c) for i, c in zip(corner, var.chunks, strict=True))


@dataclass(frozen=True)
class Target:
    """Where a case writes, how to read its bytes back, and the sink (and for an
    in-place commit, the append target) the update must get."""

    where: str
    options: dict[str, Any] | None
    rows: int
    read: Callable[[], bytes]
    sink: type
    appends_to: type | None = None
    rewrite: bool = False


def _local(tmp_path: Path, rewrite: bool) -> Target:
    path = tmp_path / "t.hurray"
    if rewrite:
        return Target(str(path), None, 64, path.read_bytes, StagedRewrite, rewrite=True)
    return Target(str(path), None, 64, path.read_bytes, InPlaceCommit, FileAppend)


def _memory() -> Target:
    url = f"memory://sinks-{uuid.uuid4().hex}/t.hurray"
    read = partial(fsspec.filesystem("memory").cat_file, url)
    return Target(url, None, 64, read, StagedUpload)


def _s3(s3: Any) -> Target:
    import s3fs

    url = f"s3://{s3.bucket}/t-{uuid.uuid4().hex}.hurray"
    fs = s3fs.S3FileSystem(**s3.storage_options, skip_instance_cache=True)
    # 1536 rows of float64: 12 MiB, over the two smallest parts a multipart commit needs
    return Target(
        url, s3.storage_options, 1536, partial(fs.cat_file, url), InPlaceCommit, ObjectAppend
    )


@pytest.fixture(params=["in place", "rewritten", "memory store", "s3 object"])
def target(request, tmp_path) -> Target:
    if request.param == "s3 object":
        made = _s3(request.getfixturevalue("s3"))
    elif request.param == "memory store":
        made = _memory()
    else:
        made = _local(tmp_path, rewrite=request.param == "rewritten")
    ds = xr.Dataset({"v": (("y", "x"), _values(made.rows))})
    xh.to_hurray(ds, made.where, storage_options=made.options, codecs=None, encoding=ENCODING)
    return made


def _read(target: Target) -> np.ndarray:
    options = {"storage_options": target.options} if target.options else {}
    with xr.open_dataset(target.where, engine="hurray", backend_kwargs=options) as ds:
        return ds["v"].values


def _changed_chunks(var: VariableMeta) -> tuple[np.ndarray, list[bytes], np.ndarray]:
    """Chunks 1 and 3 of ``var``, in its placement order, with new values: their ids,
    stored bytes and the values the file holds once they are written."""
    truth = _values(var.shape[0])
    codec = ChunkCodec(var)
    ids = [i for i in var.placement.tolist() if i in (1, 3)]
    for chunk_id in ids:
        truth[_box(var, chunk_id)] = -1.0 - chunk_id
    return np.array(ids), [codec.encode(truth[_box(var, i)]) for i in ids], truth


@contextmanager
def _locked(target: Target) -> Iterator[tuple[WriteTarget, Any]]:
    """The target of a case, its lock held, and its base."""
    where = WriteTarget.resolve(target.where, target.options)
    with where.lock(), where.open() as base:
        yield where, base


def test_a_sink_stores_what_it_is_given_and_keeps_every_other_chunk(target):
    with _locked(target) as (where, base):
        ids, blobs, truth = _changed_chunks(base.variable("v"))
        chosen = choose_sink(where, base, base.metadata, {"v": ids}, rewrite=target.rewrite)
        assert not chosen.in_tasks
        sink = chosen.open()
        assert type(sink) is target.sink
        if target.appends_to is not None:
            assert isinstance(sink, InPlaceCommit)
            assert type(sink.target) is target.appends_to
        with sink:
            sink.write_chunks("v", ids, blobs)
    np.testing.assert_array_equal(_read(target), truth)


def test_an_aborted_sink_leaves_the_target_as_it_was(target):
    before = target.read()
    with pytest.raises(RuntimeError, match="stop"):
        with _locked(target) as (where, base):
            ids, blobs, _ = _changed_chunks(base.variable("v"))
            chosen = choose_sink(where, base, base.metadata, {"v": ids}, rewrite=target.rewrite)
            with chosen.open() as sink:
                assert isinstance(sink, ChunkSink)
                sink.write_chunks("v", ids, blobs)
                raise RuntimeError("stop")
    assert target.read() == before
    np.testing.assert_array_equal(_read(target), _values(target.rows))


@pytest.mark.parametrize("commit", [True, False])
def test_a_staged_upload_uploads_only_a_committed_file_and_leaves_no_local_one(commit):
    memory = fsspec.filesystem("memory")
    url, reference = (f"memory://sinks-{uuid.uuid4().hex}/{n}.hurray" for n in ("new", "ref"))
    values = _values(64)
    xh.to_hurray(xr.Dataset({"v": (("y", "x"), values)}), reference, codecs=None, encoding=ENCODING)
    metadata = open_reader(reference).metadata
    sink = choose_sink(WriteTarget.resolve(url), None, metadata, {}).open()
    # the file is built in a local directory of its own
    assert isinstance(sink, StagedUpload) and sink.path.parent.is_dir()
    var = metadata.variables[0]
    codec = ChunkCodec(var)
    blobs = [codec.encode(values[_box(var, i)]) for i in var.placement]
    sink.write_chunks("v", var.placement, blobs)
    if commit:
        sink.commit()
        assert memory.cat_file(url) == memory.cat_file(reference)
    else:
        sink.abort()
        assert not memory.exists(url)
    assert not sink.path.parent.exists()


def test_a_new_local_file_is_a_container_writer_and_an_abort_leaves_nothing(tmp_path):
    ds = xr.Dataset({"v": (("y", "x"), _values(64))})
    xh.to_hurray(ds, tmp_path / "ref.hurray", codecs=None, encoding=ENCODING)
    metadata = open_reader(tmp_path / "ref.hurray").metadata
    sink = choose_sink(WriteTarget.resolve(tmp_path / "new.hurray"), None, metadata, {}).open()
    assert isinstance(sink, ContainerWriter)
    sink.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ref.hurray"]


def test_a_plan_runs_its_parts_in_placement_order_and_refuses_others(tmp_path):
    # "a" is large, "b" small: "b" is placed first, whatever the order of the parts
    ds = xr.Dataset({"a": ("x", np.arange(2.0**14)), "b": ("x", -np.arange(2.0**14) % 7)})
    ds["b"] = ds.b.astype("i1")
    xh.to_hurray(ds, tmp_path / "ref.hurray")
    metadata = open_reader(tmp_path / "ref.hurray").metadata
    parts = [WritePart.whole(var, ds.variables[var.name]) for var in metadata.variables]
    sink = choose_sink(WriteTarget.resolve(tmp_path / "new.hurray"), None, metadata, {}).open
    foreign = WritePart.whole(replace(metadata.variables[0], name="c"), ds.variables["a"])
    for wrong in (parts + parts[:1], [*parts, foreign]):
        with pytest.raises(ValueError, match="must be variables of its metadata"):
            WritePlan(metadata, wrong, sink, "new.hurray")
    plan = WritePlan(metadata, parts, sink, "new.hurray")
    assert [part.name for part in plan.parts] == ["b", "a"]
    assert [part.name for part in WritePlan(metadata, parts[::-1], sink, "-").parts] == ["b", "a"]
    engine.execute(plan)
    assert (tmp_path / "new.hurray").read_bytes() == (tmp_path / "ref.hurray").read_bytes()
    reader = open_reader(tmp_path / "new.hurray")
    assert reader.index("b")["offset"].max() < reader.index("a")["offset"].min()


def test_a_new_object_takes_its_runs_in_the_tasks_never_in_the_writing_process(s3, tmp_path):
    url, options = f"s3://{s3.bucket}/new.hurray", s3.storage_options
    ds = xr.Dataset({"v": (("y", "x"), _values(1536))})  # 12 MiB: three runs of 5 MiB
    xh.to_hurray(ds, tmp_path / "ref.hurray", codecs=None, encoding=ENCODING)
    metadata = open_reader(tmp_path / "ref.hurray").metadata
    chosen = choose_sink(
        WriteTarget.resolve(url, options), None, metadata, {}, part_bytes=5 * 2**20
    )
    assert chosen.in_tasks
    in_memory = [WritePart.whole(var, ds.variables[var.name]) for var in metadata.variables]
    plan = WritePlan(metadata, [part.in_tasks() for part in in_memory], chosen.open, url)
    sink = plan.open_sink()
    assert isinstance(sink, ObjectUpload) and isinstance(sink, TaskSink)
    runs = sink.runs_in_tasks()
    assert runs.count == 3 and runs.unit == "parts"
    # the runs cover every chunk, in order
    assert runs.cuts[0] == 0 and runs.cuts[-1] == sum(len(p.chunk_ids) for p in plan.parts)
    # its chunks cannot be handed to the writing process
    assert not isinstance(sink, ChunkSink) and not hasattr(sink, "write_chunks")
    sink.abort()
    assert pending_uploads(url, options) == []
    # parts held in memory, encoded in the writing process, are refused before any
    # run is written, and the upload the sink began is given up
    layout = PartLayout.of(url, metadata, 5 * 2**20)
    sinks = partial(ObjectUpload, url, options, layout)
    with pytest.raises(ValueError, match="encoded in the writing process"):
        engine.execute(WritePlan(metadata, in_memory, sinks, url))
    assert pending_uploads(url, options) == []
    engine.execute(plan)
    back = xr.open_dataset(url, engine="hurray", storage_options=options)
    xr.testing.assert_identical(back.load(), xr.open_dataset(tmp_path / "ref.hurray").load())


class _Unreachable(ChunkSink):
    """A sink whose store stops answering: its commit and its abort both fail."""

    def write_chunks(self, name: str, chunk_ids: np.ndarray, data: Any) -> None:
        pass

    def commit(self) -> None:
        raise FileExistsError("an object appeared at the target")

    def abort(self) -> None:
        failed = ConnectionError("the store did not answer the abort")
        failed.add_note("its parts stay stored")
        raise failed


@pytest.mark.parametrize("fails", ["write", "commit"])
def test_an_abort_that_fails_too_leaves_the_error_of_the_write_raised(fails):
    error: type[Exception] = RuntimeError if fails == "write" else FileExistsError
    with pytest.raises(error) as raised:
        with _Unreachable():
            if fails == "write":
                raise RuntimeError("a task failed")
    assert raised.value.__notes__ == [
        "aborting the write failed too: ConnectionError('the store did not answer the abort')",
        "its parts stay stored",
    ]
