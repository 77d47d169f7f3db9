"""Every argument of ``to_hurray`` is checked with the request, against the input,
before the target is looked at: each bad one is refused with a message naming it,
and the target, a local file or an ``s3://`` object, is left byte for byte as it
was, with nothing beside it (no temporary file, no object, no pending upload)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.errors import HurrayError
from xarray_hurray.io import pending_uploads


def field() -> xr.Dataset:
    """A (time, y, x) field with its coordinates, and a label without ``time``."""
    rng = np.random.default_rng(0)
    return xr.Dataset(
        {
            "v": (("time", "y", "x"), rng.standard_normal((4, 8, 8)).astype("f4")),
            "label": (("y", "x"), np.full((8, 8), "a")),
        },
        coords={"time": np.arange(4), "y": np.arange(8.0), "x": np.arange(8.0)},
    )


def tree() -> xr.DataTree:
    return xr.DataTree.from_dict({"/": xr.Dataset(attrs={"t": 1}), "/g": field()})


def region_box() -> xr.Dataset:
    """Part of the field's values, for a region write: no coordinates, no label."""
    return field().isel(time=slice(0, 2)).drop_vars(["time", "y", "x", "label"])


# (the input, the arguments, the error, a part of its message)
CASES: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    # the overview levels
    ("field", {"overviews": 0}, ValueError, "at least 1 level"),
    ("field", {"overviews": True}, TypeError, "number of levels"),
    ("field", {"overviews": "2"}, TypeError, "number of levels"),
    ("field", {"overviews": []}, TypeError, "at least one integer"),
    ("field", {"overviews": [4, 2]}, ValueError, "must increase"),
    ("field", {"overviews": [2, 3]}, ValueError, "each a multiple"),
    ("field", {"overviews": 1, "group": "g"}, ValueError, "not take group="),
    ("tree", {"overviews": 1}, TypeError, "made of a Dataset"),
    # whether the levels are of use for the input's sizes, its encoding's chunks
    # included (the pyramid of a new file is planned with the request)
    ("field", {"overviews": 5}, ValueError, "more levels than are of use"),
    ("field", {"overviews": [2, 16]}, ValueError, "factors must be below 16"),
    (
        "field",
        {"overviews": 4, "encoding": {"v": {"chunks": (1, 2, 2)}, "label": {"chunks": (2, 2)}}},
        ValueError,
        "level 2 .factor 4. is the first that fits",
    ),
    # the dimensions they coarsen
    ("field", {"overviews": 1, "overview_dims": ["z"]}, ValueError, r"\['z'\] are not dimensions"),
    ("field", {"overviews": 1, "overview_dims": ["x", "x"]}, ValueError, "twice"),
    ("field", {"overviews": 1, "overview_dims": []}, ValueError, "at least one dimension"),
    ("field", {"overview_dims": ["x"]}, ValueError, "give overviews= too"),
    # how they resample
    ("field", {"overviews": 1, "resampling": "bilinear"}, ValueError, "unknown resampling"),
    ("field", {"overviews": 1, "resampling": {"v": "cubic"}}, ValueError, "'cubic'"),
    ("field", {"overviews": 1, "resampling": {"w": "mean"}}, ValueError, "not variables"),
    ("field", {"overviews": 1, "resampling": 3}, TypeError, "resampling must be"),
    ("field", {"resampling": "mean"}, ValueError, "give overviews= too"),
    ("field", {"overviews": 1, "resampling": {"label": "mean"}}, ValueError, "only 'nearest'"),
    # what a region holds
    ("box", {"region": 3}, TypeError, "must be a dict"),
    ("box", {"region": {"z": slice(0, 2)}}, ValueError, "not in Dataset dimensions"),
    ("box", {"region": {"time": 1}}, TypeError, "slice objects"),
    ("box", {"region": {"time": slice(0.5, 2)}}, TypeError, "slice objects of integers"),
    ("box", {"region": {"time": slice(0, 4, 2)}}, ValueError, "step on all slices"),
    ("field", {"region": {"time": slice(0, 4)}}, ValueError, "drop_vars"),
    (
        "box",
        {"region": {"time": slice(0, 2)}, "append_dim": "time"},
        ValueError,
        "same dimension in both",
    ),
    ("tree", {"region": {"z": slice(0, 2)}}, ValueError, "no group of the tree"),
    # the encoding, and the storage settings in it
    ("field", {"encoding": ["v"]}, TypeError, "encoding must be a dict"),
    ("field", {"encoding": {"w": {}}}, KeyError, "not a variable"),
    ("field", {"encoding": {"v": 3}}, ValueError, "castable to a dict"),
    ("field", {"encoding": {"v": {"compressor": "zstd"}}}, ValueError, "unexpected encoding"),
    ("field", {"encoding": {"v": {"codecs": "snappy"}}}, ValueError, "'v'.*unsupported codec"),
    ("field", {"encoding": {"v": {"codecs": {"id": "zlib", "level": 99}}}}, ValueError, "'v'"),
    ("field", {"encoding": {"v": {"chunk_order": "zigzag"}}}, ValueError, "'v'.*chunk order"),
    ("field", {"encoding": {"v": {"chunks": (4, 4)}}}, ValueError, "'v'.*3 integers"),
    ("field", {"encoding": {"v": {"chunks": (0, 4, 4)}}}, ValueError, "at least 1"),
    ("field", {"encoding": {"v": {"chunks": 4}}}, ValueError, "'v'.*3 integers"),
    ("field", {"encoding": {"v": {"chunk_axes": ["z"]}}}, ValueError, "'v'.*chunk_axes"),
    ("field", {"encoding": {"v": {"layout": "spiral"}}}, ValueError, "'v'.*unknown layout"),
    ("field", {"encoding": {"v": {"layout": {"name": "spiral"}}}}, ValueError, "unknown layout"),
    (
        "field",
        {"encoding": {"v": {"layout": "hilbert", "chunks": (1, 3, 5)}}},
        ValueError,
        "'v'",
    ),
    ("tree", {"encoding": {"/h": {}}}, ValueError, r"groups \['h'\]"),
    ("tree", {"encoding": {"/g": ["v"]}}, TypeError, "group '/g' must map"),
    ("tree", {"encoding": {"/g": {"w": {}}}}, KeyError, "not a variable"),
    # the storage arguments
    ("field", {"layout": "spiral"}, ValueError, "arguments: unknown layout"),
    ("field", {"chunk_order": "zigzag"}, ValueError, "arguments: chunk order"),
    ("field", {"codecs": "snappy"}, ValueError, "arguments: unsupported codec"),
    ("field", {"chunk_bytes": 0}, ValueError, "chunk_bytes must be"),
    ("field", {"part_bytes": -1}, ValueError, "part_bytes must be"),
    ("field", {"window": 0}, ValueError, "window must be"),
    ("field", {"mode": "x"}, ValueError, "supported options for mode"),
    ("field", {"group": "a//b"}, ValueError, "must not be empty"),
]

INPUTS = {"field": field, "tree": tree, "box": region_box}


def _case_id(case: tuple[str, dict[str, Any], type[Exception], str]) -> str:
    return f"{case[0]}-{'-'.join(f'{k}={v!r}' for k, v in case[1].items())}"


@pytest.mark.parametrize("compute", [True, False])
@pytest.mark.parametrize(
    ("given", "kwargs", "error", "match"), CASES, ids=list(map(_case_id, CASES))
)
def test_a_bad_argument_is_refused_before_the_target_is_looked_at(
    tmp_path, given, kwargs, error, match, compute
):
    """No file, and no folder for one: an argument's own error, not the target's,
    whether the write runs now or later."""
    target = tmp_path / "missing" / "f.hurray"
    with pytest.raises(error, match=match) as caught:
        xh.to_hurray(INPUTS[given](), target, compute=compute, **kwargs)
    assert isinstance(caught.value, HurrayError)
    assert not (tmp_path / "missing").exists()


def _listing(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


@pytest.mark.parametrize(
    ("given", "kwargs", "error", "match"), CASES, ids=list(map(_case_id, CASES))
)
def test_a_bad_argument_leaves_the_file_byte_identical(tmp_path, given, kwargs, error, match):
    path = tmp_path / "f.hurray"
    xh.to_hurray(field(), path)
    before = path.read_bytes()
    with pytest.raises(error, match=match):
        xh.to_hurray(INPUTS[given](), path, **kwargs)
    assert path.read_bytes() == before
    assert _listing(tmp_path) == ["f.hurray"]


def _remote_cases() -> list[Any]:
    """The cases of the arguments a remote write uses, the first of each argument run
    by default and the others with the slow tests (each writes an object first)."""
    cases, seen = [], set()
    for case in CASES:
        family = set(case[1]) & {"overviews", "region", "encoding", "part_bytes"}
        if not family:
            continue
        first = not family & seen
        seen |= family
        marks = () if first else (pytest.mark.slow,)
        cases.append(pytest.param(*case, id=_case_id(case), marks=marks))
    return cases


@pytest.mark.parametrize(("given", "kwargs", "error", "match"), _remote_cases())
def test_a_bad_argument_leaves_the_object_as_it_was(s3, given, kwargs, error, match):
    """An ``s3://`` object, whose new versions are multipart uploads: none is begun."""
    url = f"s3://{s3.bucket}/f.hurray"
    so = s3.storage_options
    xh.to_hurray(field(), url, storage_options=so)
    fs = s3.fs()
    before = fs.cat_file(url)
    with pytest.raises(error, match=match):
        xh.to_hurray(INPUTS[given](), url, storage_options=so, **kwargs)
    fs.invalidate_cache()
    assert fs.cat_file(url) == before
    assert fs.ls(s3.bucket, detail=False) == [url.removeprefix("s3://")]
    assert pending_uploads(url, so) == []
