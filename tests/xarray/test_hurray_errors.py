"""Bad files raise HurrayFormatError naming the problem; bad input fails before writing."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess

import dask.array as da
import fsspec
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from fuzz_cases import SLOT_AT, metadata_text, reseal, with_metadata

import xarray_hurray as xh
from xarray_hurray.container import ContainerWriter, DatasetMeta, verify_file
from xarray_hurray.container.checksum import crc32c
from xarray_hurray.container.format import HEADER_SIZE, PREFIX, SLOT
from xarray_hurray.container.metadata import parse_metadata
from xarray_hurray.container.storage import storage_order
from xarray_hurray.errors import HurrayFormatError
from xarray_hurray.layout import LayoutError


@pytest.fixture
def good(tmp_path):
    """A small valid file and its bytes."""
    ds = xr.Dataset(
        {"v": (("y", "x"), np.arange(256.0).reshape(16, 16))},
        attrs={"title": "good"},
    )
    path = tmp_path / "good.hurray"
    # a Hilbert layout, as the writer's old default gave: some cases break its rules
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (8, 8)}}, codecs=None, layout="auto")
    return path, bytearray(path.read_bytes())


SLOT_FIELDS = ["generation", "meta_off", "meta_len", "root_off", "root_len", "file_len"]
SLOT_FIELDS += ["meta_crc", "root_crc", "reserved"]


def _rewrite_header(blob: bytearray, **changes: int) -> bytearray:
    """``blob`` with header fields changed (the prefix's ``major``, ``minor``,
    ``flags``, or slot 0's fields) and slot 0 resealed."""
    magic, major, minor, flags = PREFIX.unpack_from(blob)
    prefix = dict(major=major, minor=minor, flags=flags)
    prefix |= {k: v for k, v in changes.items() if k in prefix}
    blob[: PREFIX.size] = PREFIX.pack(magic, *prefix.values())
    slot = dict(zip(SLOT_FIELDS, SLOT.unpack_from(blob, SLOT_AT), strict=True))
    slot |= {k: v for k, v in changes.items() if k in slot}
    body = SLOT.pack(*slot.values())
    blob[SLOT_AT : SLOT_AT + SLOT.size + 4] = body + struct.pack(
        "<I", crc32c(bytes(blob[: PREFIX.size]) + body)
    )
    return blob


def _open_and_read(path):
    with xr.open_dataset(path, engine="hurray") as ds:
        return ds.load()


def _corrupt(path, blob: bytes, match: str):
    path.write_bytes(bytes(blob))
    with pytest.raises(xh.HurrayFormatError, match=match):
        _open_and_read(path)


def test_error_is_a_value_error():
    assert issubclass(xh.HurrayFormatError, ValueError)


META = HEADER_SIZE + 6
"""A byte of the metadata."""


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda b: b"GIF89a" + b[6:], "not a Hurray file: magic"),
        (lambda b: b[:5], "not a Hurray file|truncated header"),
        (lambda b: b[:40], "truncated header"),
        (lambda b: b[: HEADER_SIZE + 10], "truncated"),
        (lambda b: b[:-1], "truncated"),
        (lambda b: _rewrite_header(b, major=2), "unsupported format version 2.3"),
        (lambda b: _rewrite_header(b, minor=7), "unsupported format version 1.7; .* newer"),
        (lambda b: _rewrite_header(b, minor=2), r"format version 1\.2 is a draft"),
        (lambda b: _rewrite_header(b, major=0, minor=0), "unsupported format version 0.0"),
        (lambda b: _rewrite_header(b, flags=1), "flags"),
        (lambda b: _rewrite_header(b, root_len=5), "root length"),
        (lambda b: _rewrite_header(b, generation=0), "damaged header"),
        (lambda b: b[:30] + bytes([b[30] ^ 1]) + b[31:], "damaged header"),
        (lambda b: b[:100] + bytes([b[100] ^ 1]) + b[101:], "header slot 1 is damaged"),
        (
            lambda b: b[:META] + bytes([b[META] ^ 1]) + b[META + 1 :],
            "checksum mismatch in metadata",
        ),
    ],
)
def test_bad_headers_and_metadata(good, mutate, match):
    path, blob = good
    _corrupt(path, mutate(blob), match)


def test_bytes_after_the_end_of_the_version_are_not_read(good):
    path, blob = good
    expected = _open_and_read(path)
    path.write_bytes(bytes(blob) + b"an interrupted commit")
    xr.testing.assert_identical(_open_and_read(path), expected)
    # legal (the trace of a commit that did not complete), read by nothing, so
    # reported: by verify as its one problem, and by info
    (problem,) = verify_file(path)
    assert problem.startswith("21 bytes after the end of the version")
    assert storage_order(xh.open_reader(path))["uncommitted_bytes"] == 21


def test_corrupt_index_and_chunk_are_caught(good):
    path, blob = good
    reader = xh.open_reader(path)
    page_at = reader.index_parts("v")[1][0]
    broken = blob.copy()
    broken[page_at + 3] ^= 0xFF
    _corrupt(path, broken, "checksum mismatch in index page 0 of 'v'")
    broken = blob.copy()
    broken[int(reader.index("v")["offset"].min()) + 100] ^= 0x01
    _corrupt(path, broken, r"checksum mismatch in chunk \d+ of variable 'v'")


def _entries_at(path) -> tuple[bytearray, int]:
    """The bytes of the file at ``path``, and where the entries of page 0 of ``v``
    start (after the one-byte bitmap of its 4 chunks)."""
    return bytearray(path.read_bytes()), xh.open_reader(path).index_parts("v")[1][0] + 1


def test_index_pointing_outside_the_file_is_caught(good):
    path, _ = good
    blob, entries_at = _entries_at(path)
    blob[entries_at + 2 * 20 + 8 : entries_at + 2 * 20 + 16] = struct.pack("<Q", 10**6)
    _corrupt(path, reseal(bytes(blob)), "entry 2 of index page 0 of 'v'.* inside the file")


def test_a_stored_chunk_entry_of_size_0_is_refused(good):
    # a page lists stored chunks only
    path, _ = good
    blob, entries_at = _entries_at(path)
    blob[entries_at + 8 : entries_at + 16] = bytes(8)  # size 0, offset and crc32c kept
    _corrupt(path, reseal(bytes(blob)), "entry 0 of index page 0 of 'v'.* not a stored chunk")


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda m: m["variables"][0]["layout"].update(hilbert_order=2), "hilbert constraint 1"),
        (lambda m: m["variables"][0].update(dtype="datetime64"), "unknown element type"),
        (lambda m: m["variables"][0].update(codecs=[{"id": "gzip"}]), "unsupported codec"),
        (lambda m: m["variables"][0].update(codecs=["zstd"]), "a list of objects"),
        (lambda m: m["variables"][0].update(codecs=[None]), "a list of objects"),
        (lambda m: m["variables"][0].update(extra=1), "needs exactly the keys"),
        (lambda m: m["variables"][0].update(chunks=[8, 0]), "chunks must be"),
        (lambda m: m["variables"].append(m["variables"][0]), "unique"),
        (lambda m: m.update(extra=[]), "exactly the keys attrs, groups, variables"),
        (lambda m: m["variables"][0].update(fill_value="0000"), "has 8 bytes, got 2"),
        (lambda m: m["variables"][0].update(fill_value="00 00"), "hexadecimal"),
        (lambda m: m["variables"][0].update(fill_value=None), "hexadecimal bytes, got None"),
        (lambda m: m["variables"][0].update(name="a/v"), "contains '/'"),
        (lambda m: m["groups"].append({"name": "g"}), "a group needs exactly the keys"),
        (lambda m: m["groups"].append(_group("a/b")), "contains '/'"),
        (lambda m: m["groups"].append(_group("v")), "unique"),
        (lambda m: m["groups"].extend([_group("g"), _group("g")]), "unique"),
        # an object in an attribute list is a numpy attribute, the empty one too
        (lambda m: m["attrs"].update(a=[{}]), r"needs dtype, shape and data, got \[\]"),
        (lambda m: m["attrs"].update(a=[1, [{}]]), "needs dtype, shape and data"),
    ],
)
def test_invalid_metadata_with_valid_checksums(good, edit, match):
    path, blob = good
    meta = json.loads(metadata_text(bytes(blob)))
    edit(meta)
    _corrupt(
        path, with_metadata(bytes(blob), json.dumps(meta).encode()), f"invalid metadata: .*{match}"
    )


def test_an_empty_object_in_an_attribute_list_is_refused():
    members = {"attrs": {"a": [{}]}, "variables": [], "groups": []}
    with pytest.raises(HurrayFormatError, match="needs dtype, shape and data"):
        parse_metadata(json.dumps(members).encode())


def _group(name: str) -> dict:
    return {"name": name, "attrs": {}, "variables": [], "groups": []}


def test_truncation_is_caught_when_the_size_is_unknown(good):
    _, blob = good
    url = "memory://hurray-errors/cut.hurray"
    with fsspec.open(url, "wb") as f:
        f.write(bytes(blob[:-10]))
    with pytest.raises(xh.HurrayFormatError, match="truncated"):
        _open_and_read(url)


@pytest.mark.parametrize("kind", [bytes, bytearray])
def test_a_byte_string_is_named_by_its_start_and_length_not_pasted_whole(good, kind):
    _, blob = good
    data = kind(blob)
    with pytest.raises(xh.HurrayTypeError) as caught:
        xr.open_dataset(data, engine="hurray")
    message = str(caught.value)
    assert f"a byte string of {len(blob)} bytes, {bytes(blob[:16])!r}..." in message
    assert "io.BytesIO" in message and len(message) < 200
    assert caught.value.value is data
    with xr.open_dataset(io.BytesIO(data), engine="hurray") as ds:  # as the message says
        np.testing.assert_array_equal(ds["v"].values, np.arange(256.0).reshape(16, 16))


# --- writing ---------------------------------------------------------------------


def _assert_nothing_written(directory, before=()):
    assert sorted(p.name for p in directory.iterdir()) == sorted(before)


@pytest.mark.parametrize(
    ("ds", "kwargs", "error", "match"),
    [
        (
            xr.Dataset({"v": (("x",), np.zeros(3, dtype="V4"))}),
            {},
            TypeError,
            "variable 'v': dtype .* cannot be stored",
        ),
        (
            xr.Dataset({"v": (("x",), np.zeros(3))}, attrs={"meta": {"a": 1}}),
            {},
            TypeError,
            r"attribute 'meta' is a mapping, .* store json.dumps\(value\) as a string",
        ),
        (
            xr.Dataset({"v": (("x",), np.zeros(3), {"when": b"bytes"})}),
            {},
            TypeError,
            "variable 'v': attribute 'when' is bytes, which cannot be stored; decode it",
        ),
        (
            xr.Dataset({"v": (("x",), np.zeros(3), {"names": np.array(["a", None])})}),
            {},
            TypeError,
            "attribute 'names' is a numpy value of dtype object, which cannot be stored",
        ),
        (
            xr.Dataset({"v": (("y", "x"), np.zeros((16, 8)))}),
            {"layout": "hilbert"},
            LayoutError,
            "variable 'v': .*hilbert",
        ),
        (
            xr.Dataset({"v": (("y", "x"), np.zeros((16, 8)))}),
            {"encoding": {"v": {"zlib": True, "complevel": 4}}},
            ValueError,
            r"unexpected encoding parameters \['complevel', 'zlib'\] for variable 'v'",
        ),
        (
            xr.Dataset({"v": (("x",), np.zeros(3))}),
            {"encoding": {"w": {"chunks": (1,)}}},
            KeyError,
            "'w', which is not a variable",
        ),
        (
            xr.Dataset({"v": (("x",), np.zeros(3))}),
            {"codecs": "gzip"},
            ValueError,
            "unsupported codec",
        ),
        (
            xr.Dataset({"v": (("x",), np.zeros(3))}),
            {"encoding": {"v": {"chunks": (0,)}}},
            ValueError,
            "variable 'v': chunks must be",
        ),
        (
            xr.Dataset({"v": (("x",), np.zeros(3))}),
            {"chunk_order": "zigzag"},
            ValueError,
            "chunk order 'zigzag'",
        ),
        (
            xr.Dataset({"v": (("x", "y"), np.zeros((3, 3)))}),
            {"encoding": {"v": {"chunk_axes": ["t"]}}},
            ValueError,
            r"chunk_axes \['t'\]",
        ),
        (
            xr.Dataset({"v": (("x",), da.zeros(10, chunks=(3, 4, 3)))}),
            {},
            ValueError,
            "dask chunks .* not uniform",
        ),
        (
            xr.Dataset(coords={"t": pd.date_range("2024-01-01", periods=3, tz="UTC")}),
            {},
            TypeError,
            r"variable 't' holds times with a time zone \(datetime64\[.s, UTC\]\), which CF "
            r"encoding cannot store: convert them to UTC without a zone, as "
            r"ds\['t'\] = ds.indexes\['t'\].tz_convert\(None\) does",
        ),
        (
            xr.Dataset({"v": ("x", pd.Categorical(["a", "b", "a"]))}),
            {},
            TypeError,
            "variable 'v' holds values of the pandas type category, .* convert it to a numpy",
        ),
    ],
)
def test_bad_input_fails_before_any_byte_is_written(tmp_path, ds, kwargs, error, match):
    with pytest.raises(error, match=match):
        xh.to_hurray(ds, tmp_path / "out.hurray", **kwargs)
    _assert_nothing_written(tmp_path)


def test_failed_write_leaves_no_partial_file_and_keeps_the_old_one(tmp_path):
    path = tmp_path / "out.hurray"
    old = xr.Dataset({"v": (("x",), np.arange(4))})
    xh.to_hurray(old, path)
    before = path.read_bytes()

    def explode(block, block_info=None):
        if block_info[0]["chunk-location"] == (2,):
            raise RuntimeError("source went away")
        return block

    failing = da.arange(40, chunks=10).map_blocks(explode, meta=np.array((), dtype=np.int64))
    with pytest.raises(RuntimeError, match="source went away"):
        xh.to_hurray(xr.Dataset({"v": (("x",), failing)}), path)
    _assert_nothing_written(tmp_path, ["out.hurray"])
    assert path.read_bytes() == before


def test_a_bool_byte_other_than_0_or_1_is_rejected(tmp_path):
    # numpy would hold the byte 2 as a bool that counts twice in a sum
    path = tmp_path / "b.hurray"
    xh.to_hurray(xr.Dataset({"b": (("x",), np.ones(4, dtype=bool))}), path, codecs=None)
    blob = bytearray(path.read_bytes())
    blob[int(xh.open_reader(path).index("b")["offset"][0])] = 2
    _corrupt(
        path,
        reseal(bytes(blob)),
        "chunk 0 of variable 'b': a bool element is a byte other than 0 or 1",
    )


def test_a_writer_that_fails_to_start_leaves_no_temporary_file(tmp_path, monkeypatch):
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, fd):
            self.file = real_fdopen(fd, "wb")

        def write(self, data):
            raise OSError(28, "No space left on device")

        def close(self):
            self.file.close()

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: Full(fd))
    with pytest.raises(OSError, match="No space"):
        ContainerWriter(tmp_path / "full.hurray", DatasetMeta(attrs={}, variables=()))
    _assert_nothing_written(tmp_path)


@pytest.mark.parametrize(
    "write",
    [
        lambda ds, path: xh.to_hurray(ds, path, layout="hilbert"),  # default chunks
        lambda ds, path: xh.to_hurray(
            ds, path, layout="hilbert", encoding={"t2m": {"chunks": (1, 64, 64)}}
        ),
        lambda ds, path: xh.to_zarr(ds, path, layout="hilbert", consolidated=False),
    ],
)
def test_a_hilbert_misfit_names_the_variable_and_what_to_do(tmp_path, write):
    ds = xr.Dataset({"t2m": (("time", "y", "x"), np.zeros((4, 64, 100), "f4"))})
    with pytest.raises(LayoutError) as caught:
        write(ds, tmp_path / "out")
    message = str(caught.value)
    assert message.startswith("variable 't2m': a hilbert layout cannot hold chunks (")
    assert "sides are all the same power of two" in message
    assert "or the layout 'auto' (Hilbert where it fits, Morton elsewhere) or 'morton'" in message
    # the rule the chunks break in their own terms; the descriptor's fields are not
    # the user's (hilbert_order, derived from the first side)
    assert "and their sides " in message and " differ;" in message
    assert "hilbert_order" not in message and "got 0" not in message
    _assert_nothing_written(tmp_path)


@pytest.mark.parametrize(
    ("chunks", "broken"),
    [
        ((1, 128, 128), "their sides 1, 128, 128 differ"),
        ((1, 1), "their sides are 1"),
        ((24, 24), "24 is not a power of two"),
        ((64,), "they have 1 dimension"),
    ],
)
def test_a_hilbert_misfit_says_which_rule_the_chunks_break(tmp_path, chunks, broken):
    ds = xr.Dataset({"v": (tuple("tyx"[-len(chunks) :]), np.zeros(chunks, "f4"))})
    with pytest.raises(LayoutError) as caught:
        xh.to_hurray(ds, tmp_path / "out.hurray", layout="hilbert")
    message = str(caught.value)
    assert f"such as (64, 64{', 64' * (len(chunks) == 3)}), and {broken}; choose" in message
    assert message.endswith("(docs/spec/layouts.md, hilbert constraint " + message[-2:])
    assert "hilbert_order" not in message


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder no file can be created in: made immutable for root (who may write into
    any folder the permissions close), read-only for others."""
    folder = tmp_path / "locked"
    folder.mkdir()
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
            pytest.skip("chattr +i is not available here")
        yield folder
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)


@pytest.mark.skipif(os.name != "posix", reason="folder permissions of POSIX")
def test_a_folder_that_takes_no_file_is_named_by_the_target(read_only_folder):
    target = read_only_folder / "new.hurray"
    with pytest.raises(PermissionError) as caught:
        xh.to_hurray(xr.Dataset({"v": ("x", np.zeros(3))}), target)
    assert caught.value.filename == str(target) and ".tmp" not in str(caught.value)
    assert "cannot create a file in its folder" in str(caught.value)
