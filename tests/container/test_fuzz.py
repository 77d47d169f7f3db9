"""Damaged and hostile files: only HurrayFormatError, never another exception, a
hang or an allocation the file's bytes do not justify."""

from __future__ import annotations

import io
import json
import random
import re
import struct
import tracemalloc
import zlib
from types import SimpleNamespace

import numcodecs
import numpy as np
import pytest
import xarray as xr
from fuzz_cases import (
    SLOT,
    SLOT_AT,
    appended_file,
    metadata_text,
    mutate,
    read_everything,
    reseal,
    small_file,
    tiny_file,
    tiny_tree_file,
    unreferenced,
    with_last_chunk,
    with_metadata,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import xarray_hurray as xh
from xarray_hurray.cli import main as cli_main
from xarray_hurray.container import bounded, verify_file
from xarray_hurray.container.limits import MAX_METADATA_CONTAINERS, MAX_NESTING
from xarray_hurray.container.storage import storage_order
from xarray_hurray.io import FileObjectSource
from xarray_hurray.testing import CountingSource


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> bytes:
    return small_file(tmp_path_factory.mktemp("fuzz"))


@pytest.fixture(scope="module")
def truth(good) -> dict[str, object]:
    return read_everything(good)


def _same(a: dict[str, object], b: dict[str, object]) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind in "fc")
        if isinstance(a[k], np.ndarray)
        else repr(a[k]) == repr(b[k])
        for k in a
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
@pytest.mark.slow
def test_damaged_files_raise_only_format_errors(good, truth, seed):
    kind, blob = mutate(good, random.Random(seed))
    try:
        result = read_everything(blob)
    except xh.HurrayFormatError:
        return
    if "seal" not in kind and kind != "json":
        # nothing outside a checksum: an unsealed change that reads must change nothing
        # but bytes after the end of the version (an uncommitted write, which a file
        # may have)
        assert blob[: len(good)] == good and _same(result, truth)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> bytes:
    return tiny_tree_file(tmp_path_factory.mktemp("fuzz-tree"))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
@example(seed=1681)  # a splice that adds bytes after the end of the version
def test_damaged_trees_with_missing_chunks_raise_only_format_errors(tree, seed):
    truth = read_everything(tree)
    kind, blob = mutate(tree, random.Random(seed))
    try:
        result = read_everything(blob)
    except xh.HurrayFormatError:
        return
    if "seal" not in kind and kind != "json":
        # only bytes nothing references changed: after the end of the version, or
        # the room the head keeps for pages that took less
        assert len(blob) >= len(tree) and _same(result, truth)
        changed = np.flatnonzero(
            np.frombuffer(blob[: len(tree)], np.uint8) != np.frombuffer(tree, np.uint8)
        )
        assert unreferenced(tree)[changed].all()


@pytest.mark.parametrize("make", [tiny_file, tiny_tree_file], ids=["flat", "tree"])
@pytest.mark.slow
def test_every_single_bit_flip_is_detected(tmp_path, make):
    """Every flip fails the read, except one in the room the head keeps for pages that
    took less (zeros nothing references), which reads the same."""
    good = make(tmp_path)
    truth = read_everything(good)
    spare = unreferenced(good)
    assert spare.any() == (make is tiny_tree_file)
    flips = 0
    for position in range(len(good)):
        for bit in range(8):
            blob = bytearray(good)
            blob[position] ^= 1 << bit
            flips += 1
            if spare[position]:
                assert _same(read_everything(bytes(blob)), truth)
                continue
            with pytest.raises(xh.HurrayFormatError):
                read_everything(bytes(blob))
    assert flips == 8 * len(good)


@pytest.mark.slow
def test_every_single_bit_flip_of_an_appended_file(tmp_path):
    """In a file of two versions a flip fails the read, or reads the newest version
    exactly when it lands in bytes nothing references (the first version's index and
    metadata), or, in the newest version's header slot, reads the first version
    exactly: a damaged newest slot looks like a commit that never finished."""
    before, good = appended_file(tmp_path)
    newest, first = read_everything(good), read_everything(before)
    reader = xh.open_reader(FileObjectSource(io.BytesIO(good)))
    unreferenced = storage_order(reader)["unreferenced_bytes"]
    newest_slot = SLOT_AT + (reader.header.generation % 2 == 0) * 64
    read_newest = read_first = 0
    for position in range(len(good)):
        for bit in range(8):
            blob = bytearray(good)
            blob[position] ^= 1 << bit
            try:
                result = read_everything(bytes(blob))
            except xh.HurrayFormatError:
                continue
            if newest_slot <= position < newest_slot + 64:
                assert _same(result, first)
                read_first += 1
            else:
                assert _same(result, newest)
                read_newest += 1
    assert read_first == 8 * 64
    assert read_newest == 8 * unreferenced > 0


def test_verify_finds_every_damaged_chunk(good):
    assert verify_file(io.BytesIO(good)) == []
    blob = bytearray(good)
    blob[-1] ^= 0x10
    blob[-40] ^= 0x01
    problems = verify_file(io.BytesIO(bytes(blob)))
    assert len(problems) == 2 and all("checksum mismatch in chunk" in p for p in problems)
    assert "truncated" in verify_file(io.BytesIO(good[:-5]))[0]


def test_verify_of_a_file_with_every_chunk_damaged_names_each_once_in_linear_requests(tmp_path):
    ds = xr.Dataset({"v": (("y", "x"), np.arange(64 * 64, dtype="f4").reshape(64, 64))})
    path = tmp_path / "damaged.hurray"
    xh.to_hurray(ds, path, codecs=None, encoding={"v": {"chunks": (8, 8)}})
    entries = xh.open_reader(path).index("v")
    blob = bytearray(path.read_bytes())
    for offset in entries["offset"].tolist():
        blob[offset] ^= 0x01
    source = CountingSource(FileObjectSource(io.BytesIO(bytes(blob))))
    problems = verify_file(source)
    assert len(problems) == 64
    assert {p.split("chunk ")[1].split(" ")[0] for p in problems} == {str(i) for i in range(64)}
    # after opening: the batch once, then each chunk once more on its own (linear),
    # not the rest of the batch again after every bad chunk (quadratic)
    chunk_bytes = int(entries["size"].sum())
    assert sum(stop - start for start, stop in source.requests[1:]) <= 2 * chunk_bytes


def test_verify_finds_chunks_that_share_bytes(good):
    page, _ = xh.open_reader(FileObjectSource(io.BytesIO(good))).index_parts("z")[1]
    blob = bytearray(good)
    # entry 1 of the first page of "z" repeats entry 0: checksums match, but two chunks
    # now claim the same bytes, which only verify can see
    blob[page + 20 : page + 40] = good[page : page + 20]
    problems = verify_file(io.BytesIO(reseal(bytes(blob))))
    assert problems and "overlaps chunk" in problems[0]
    assert read_everything(reseal(bytes(blob)))  # readable: a reader cannot tell


def _meta(good: bytes) -> dict:
    return json.loads(metadata_text(good))


@pytest.mark.parametrize(
    ("codec", "frame"),
    [
        ("zstd", numcodecs.Zstd().encode(bytes(2**22))),
        ("lz4", numcodecs.LZ4().encode(bytes(2**22))),
        ("zlib", zlib.compress(bytes(2**22), 9)),
        ("blosc", numcodecs.Blosc().encode(bytes(2**22))),
        ("lz4", struct.pack("<I", 2**32 - 1) + b"\0"),
    ],
)
def test_decompression_bombs_stop_at_the_declared_chunk_size(tmp_path, codec, frame):
    ds = xr.Dataset({"v": (("x",), np.arange(8.0))})
    path = tmp_path / "bomb.hurray"
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (4,), "codecs": codec}})
    blob = with_last_chunk(path.read_bytes(), frame)
    with pytest.raises(xh.HurrayFormatError, match=r"declares|expands past"):
        read_everything(blob)


ZSTD_FRAME = numcodecs.Zstd().encode(np.arange(4.0))  # the 32 bytes of one chunk of "v"
SKIPPABLE = b"\x50\x2a\x4d\x18" + struct.pack("<I", 4) + b"abcd"


@pytest.mark.parametrize(
    "frame",
    [
        ZSTD_FRAME + numcodecs.Zstd().encode(bytes(2**22)),  # a bomb behind a small frame
        ZSTD_FRAME + SKIPPABLE,
        ZSTD_FRAME + b"\0",
        ZSTD_FRAME[:-1],
    ],
    ids=["second-frame", "skippable-frame", "trailing-byte", "cut-short"],
)
def test_a_zstd_chunk_is_exactly_one_frame(tmp_path, frame):
    ds = xr.Dataset({"v": (("x",), np.arange(8.0))})
    path = tmp_path / "frames.hurray"
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (4,), "codecs": "zstd"}})
    good = path.read_bytes()
    assert read_everything(with_last_chunk(good, ZSTD_FRAME))["v"][4:].tolist() == [0, 1, 2, 3]
    blob = with_last_chunk(good, frame)
    with pytest.raises(xh.HurrayFormatError, match=r"one Zstandard frame|truncated Zstandard"):
        read_everything(blob)
    assert len(verify_file(io.BytesIO(blob))) == 1


def _zstd_outcome(frame: bytes, limit: int) -> bytes | str:
    try:
        return bounded.decode_bounded([numcodecs.Zstd()], frame, limit)
    except (ValueError, RuntimeError) as err:
        return type(err).__name__


@settings(max_examples=150, deadline=None)
@given(
    st.binary(min_size=1, max_size=3000),
    st.integers(-3, 9),
    st.one_of(st.none(), st.tuples(st.integers(0, 10**6), st.integers(1, 255))),
)
def test_both_zstd_decoders_give_the_same_bytes_or_the_same_refusal(data, level, flip):
    """The ``zstandard`` package's decoder (one context per thread) and numcodecs'
    give the same bytes for every frame, damaged ones too, or both refuse it with the
    same kind of error."""
    frame = bytearray(numcodecs.Zstd(level=level).encode(data))
    if flip is not None:
        frame[flip[0] % len(frame)] ^= flip[1]
    limit = len(data) + 64
    fast = _zstd_outcome(bytes(frame), limit)
    with pytest.MonkeyPatch.context() as patch:
        # numcodecs' decoder in the place of this thread's zstandard context
        numcodecs_decoder = SimpleNamespace(decompress=numcodecs.Zstd().decode)
        patch.setattr(bounded, "_zstd_decompressor", lambda: numcodecs_decoder)
        plain = _zstd_outcome(bytes(frame), limit)
    assert fast == plain
    if flip is None:
        assert fast == data


def test_a_nonsense_setting_only_encoding_uses_does_not_stop_a_read(tmp_path):
    # the zstd level of a stored chunk does not matter to its decoding (seed 2097151
    # of test_damaged_files_raise_only_format_errors found a TypeError here)
    ds = xr.Dataset({"v": (("x",), np.arange(8.0))})
    path = tmp_path / "level.hurray"
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (4,), "codecs": "zstd"}})
    codecs = [{"id": "zstd", "level": [[[1]]], "checksum": False}]
    blob = _set_variable(path.read_bytes(), {"codecs": codecs})
    np.testing.assert_array_equal(xh.open_reader(io.BytesIO(blob)).read("v"), np.arange(8.0))


def test_a_reader_caps_what_one_chunk_may_allocate(tmp_path):
    # a one-element chunk may declare a 1 GiB Morton buffer; the file is 1 KB
    ds = xr.Dataset({"v": (("x",), np.arange(4, dtype="u1"))})
    path = tmp_path / "wide.hurray"
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (1,), "codecs": "zstd"}})
    blob = _set_variable(path.read_bytes(), {"layout": {"name": "morton", "morton_bits": [30]}})
    reader = xh.open_reader(io.BytesIO(blob), max_chunk_bytes=2**26)
    with pytest.raises(xh.HurrayFormatError, match=r"decodes to 1073741824 bytes.*max_chunk_b"):
        reader.read("v")
    with pytest.raises(xh.HurrayFormatError, match="max_chunk_bytes"):
        xr.open_dataset(io.BytesIO(blob), engine="hurray", max_chunk_bytes=2**26).load()


def test_many_containers_are_refused_before_parsing(good):
    text = (
        '{"attrs":{"a":[' + ",".join(["[]"] * (10 * MAX_METADATA_CONTAINERS)) + ']},"variables":[]}'
    )
    blob = with_metadata(good, text.encode())
    # Refused from a count of its brackets, before parsing: parsing would build 1.3
    # million lists (over 70 MiB); the count allocates nothing of that size, whatever
    # the machine's load (a bound on memory, not on time).
    tracemalloc.start()
    try:
        with pytest.raises(xh.HurrayFormatError, match="arrays and objects"):
            read_everything(blob)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * len(blob)
    # brackets inside strings are text, not containers
    blob = _set_variable(good, {"attrs": {"a": "[" * (MAX_METADATA_CONTAINERS + 1)}})
    assert read_everything(blob)["z.attrs"]["a"].startswith("[[")


def test_the_cap_on_metadata_containers_can_be_raised(good, tmp_path, capsys):
    # a valid file just over the default: refused by default, naming the cap, read by
    # every reading path once the cap is raised
    meta = json.loads(metadata_text(good))
    meta["attrs"]["rows"] = [[k] for k in range(MAX_METADATA_CONTAINERS)]
    text = json.dumps(meta)
    held = text.count("{") + text.count("[")  # no brackets in its strings
    assert held > MAX_METADATA_CONTAINERS
    path = tmp_path / "lists.hurray"
    path.write_bytes(with_metadata(good, text.encode()))
    refusal = rf"holds {held} JSON arrays and objects, more than max_metadata_containers=131072"
    with pytest.raises(xh.HurrayFormatError, match=refusal):
        xh.open_reader(path)
    with pytest.raises(xh.HurrayFormatError, match=refusal):
        xr.open_dataset(path, engine="hurray")
    assert re.search(refusal, verify_file(path)[0])
    assert cli_main(["verify", str(path)]) == 1
    assert re.search(refusal, capsys.readouterr().err)

    raised = {"max_metadata_containers": held}
    assert xh.open_reader(path, **raised).metadata.attrs["rows"][-1] == [
        MAX_METADATA_CONTAINERS - 1
    ]
    with xr.open_dataset(path, engine="hurray", **raised) as ds:
        assert len(ds.attrs["rows"]) == MAX_METADATA_CONTAINERS
    assert verify_file(path, **raised) == []
    assert cli_main(["verify", str(path), "--max-metadata-containers", str(held)]) == 0
    with pytest.raises(xh.HurrayFormatError, match=f"max_metadata_containers={held - 1};"):
        xh.open_reader(path, max_metadata_containers=held - 1)


def test_a_writer_refuses_metadata_readers_would_refuse_by_default(tmp_path):
    ds = xr.Dataset(attrs={"rows": [[k] for k in range(MAX_METADATA_CONTAINERS)]})
    with pytest.raises(xh.HurrayValueError, match="max_metadata_containers=131072; readers refuse"):
        xh.to_hurray(ds, tmp_path / "lists.hurray")
    assert list(tmp_path.iterdir()) == []


def test_wide_text_attributes_are_refused_both_ways(good, tmp_path):
    wide = {"dtype": "U536870911", "shape": [], "data": ["a"]}
    with pytest.raises(xh.HurrayFormatError, match="U536870911 needs 2147483644 bytes"):
        read_everything(_set_variable(good, {"attrs": {"a": wide}}))
    ds = xr.Dataset({"v": (("x",), [1, 2])}, attrs={"a": np.array(["a"], dtype="U1000000")})
    with pytest.raises(ValueError, match="numpy attributes take 4000000 bytes"):
        xh.to_hurray(ds, tmp_path / "wide.hurray")
    assert not any(tmp_path.iterdir())
    ds.attrs["a"] = np.array(["a"], dtype="U1000")  # 4 kB: within the allowance
    xh.to_hurray(ds, tmp_path / "ok.hurray")
    with xr.open_dataset(tmp_path / "ok.hurray", engine="hurray") as out:
        assert out.attrs["a"].dtype == "U1000"


def _set_variable(good: bytes, changes: dict) -> bytes:
    meta = _meta(good)
    meta["variables"][0].update(changes)
    return with_metadata(good, json.dumps(meta).encode())


DEEP = "[" * 100 + "]" * 100


def _group(name: object, groups: str = "") -> str:
    """The JSON text of an empty group called ``name`` holding ``groups``."""
    return json.dumps({"name": name, "attrs": {}, "variables": [], "groups": []})[:-2] + (
        groups + "]}"
    )


def _nested_groups(depth: int) -> str:
    """``depth`` groups, each inside the one before."""
    text = _group("g")
    for _ in range(depth - 1):
        text = _group("g", text)
    return text


TYPED_INT8 = {"dtype": "int8", "shape": [1], "data": [300]}
HILBERT_99 = {"name": "hilbert", "hilbert_rank": 2, "hilbert_order": 99}


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"shape": [10**12] * 2, "dims": ["p", "q"]}, "page table of variable"),
        ({"shape": [2**64, 8]}, "integers from 0 to"),
        ({"shape": [1] * 40, "chunks": [1] * 40, "dims": [f"d{i}" for i in range(40)]}, "32 axes"),
        ({"chunks": [4, 2**40], "layout": {"name": "row-major"}}, "largest chunk"),
        ({"codecs": [{"id": "zstd"}] * 9}, "at most 8 codecs"),
        ({"codecs": [{"id": "pickle"}]}, "unsupported codec"),
        ({"dtype": "object"}, "unknown element type"),
        ({"layout": HILBERT_99}, "index limit"),
        ({"attrs": {"a": TYPED_INT8}}, "cannot be an element"),
        ({"attrs": {"a": TYPED_INT8 | {"shape": [10**12], "data": []}}}, "needs"),
        ({"attrs": []}, "attrs must be an object"),
        ({"name": ""}, "must not be empty"),
        ({"layout": HILBERT_99 | {"hilbert_order": True}}, "must be integers"),
        ({"layout": HILBERT_99 | {"hilbert_rank": True}}, "must be integers"),
        ({"dtype": "U1\n"}, "unknown element type"),
        ({"dtype": "S1\n"}, "unknown element type"),
        ({"chunk_order": {"curve": "hilbert", "axes": None}}, "axes must be a list"),
        ({"attrs": {"a": "\ud800"}}, "not valid Unicode"),
        ({"attrs": {"a": {"dtype": "U1", "shape": [1], "data": ["\udfff"]}}}, "not valid Uni"),
    ],
)
def test_hostile_variables_are_rejected(good, changes, match):
    with pytest.raises(xh.HurrayFormatError, match=match):
        read_everything(_set_variable(good, changes))


def test_a_string_that_looks_nested_is_a_string(good):
    blob = _set_variable(good, {"attrs": {"a": DEEP}})
    assert read_everything(blob)["z.attrs"]["a"] == DEEP


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"attrs":{},"variables":[],"attrs":{}}', "repeats the keys"),
        ('{"attrs":{"a":NaN},"variables":[]}', "not a JSON number"),
        ('{"attrs":{"a":-Infinity},"variables":[]}', "not a JSON number"),
        ('{"attrs":{"a":1e400},"variables":[]}', "out of range"),
        # every spelling of a float beyond the largest: the exponent's, the digits'
        ('{"attrs":{"a":[1.5,2E+309]},"variables":[]}', "out of range"),
        ('{"attrs":{"a":' + "9" * 310 + '.5},"variables":[]}', "out of range"),
        ('{"attrs":{"a":{"dtype":"float64","shape":[1],"data":[9e999]}},"variables":[]}', "range"),
        ('{"attrs":{"a":' + DEEP + '},"variables":[]}', f"deeper than {MAX_NESTING}"),
        ('{"attrs":{"a":' + DEEP * 1000 + '},"variables":[]}', "JSON"),
        ('{"attrs":{"a":' + "[" * 10**5 + "]" * 10**5 + '},"variables":[]}', "nested"),
        ("\ufeff{}", "JSON"),
        ("[]", "exactly the keys attrs, groups, variables"),
        ('{"attrs":{},"variables":[],"groups":{}}', "groups must be a list"),
        ('{"attrs":{},"variables":[],"groups":[{"name":"a"}]}', "a group needs exactly"),
        ('{"attrs":{},"variables":[],"groups":[' + _group("") + "]}", "must not be empty"),
        ('{"attrs":{},"variables":[],"groups":[' + _group("a/b") + "]}", "contains '/'"),
        ('{"attrs":{},"variables":[],"groups":[' + _group(5) + "]}", "must be a string"),
        ('{"attrs":{},"variables":[],"groups":[' + _group("a") * 2 + "]}", "JSON"),
        (
            '{"attrs":{},"variables":[],"groups":[' + ",".join([_group("a")] * 2) + "]}",
            "unique",
        ),
        ('{"attrs":{},"variables":[],"groups":[' + _nested_groups(20) + "]}", "deeper than"),
    ],
)
def test_hostile_metadata_json_is_rejected(good, text, match):
    with pytest.raises(xh.HurrayFormatError, match=match):
        read_everything(with_metadata(good, text.encode()))


def test_huge_metadata_length_is_rejected_before_reading_it(good):
    blob = bytearray(good)
    # metadata length 2**62, in a file that claims 2**63 bytes
    blob[SLOT_AT + 16 : SLOT_AT + 24] = struct.pack("<Q", 2**62)
    blob[SLOT_AT + 40 : SLOT_AT + 48] = struct.pack("<Q", 2**63)
    with pytest.raises(xh.HurrayFormatError, match="metadata length"):
        read_everything(reseal(bytes(blob)))


def test_trusted_data_switch_skips_only_chunk_checksums(good, truth):
    last = bytearray(good)
    last[-1] ^= 0x01  # a byte of the last chunk, of the uncompressed variable "r"
    with pytest.raises(xh.HurrayFormatError, match="checksum mismatch in chunk"):
        read_everything(bytes(last))
    trusted = read_everything(bytes(last), verify_checksums=False)
    assert not np.array_equal(trusted["r"], truth["r"])
    assert all(np.array_equal(trusted[k], truth[k]) for k in ("z", "l", "b", "s"))
    with pytest.raises(xh.HurrayFormatError, match="checksum mismatch in metadata"):
        read_everything(
            bytes(good[:150]) + bytes([good[150] ^ 1]) + good[151:], verify_checksums=False
        )


@pytest.mark.parametrize("verify_checksums", [True, False])
def test_open_dataset_passes_the_trusted_data_switch(tmp_path, good, truth, verify_checksums):
    path = tmp_path / "damaged.hurray"
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    with xr.open_dataset(path, engine="hurray", verify_checksums=verify_checksums) as ds:
        if verify_checksums:
            with pytest.raises(xh.HurrayFormatError, match="checksum mismatch in chunk"):
                ds["r"].load()
        else:
            assert not np.array_equal(ds["r"].values, truth["r"])
        np.testing.assert_array_equal(ds["z"].values, truth["z"])


@pytest.mark.parametrize("point", [0x110000, 0xD800, 0xDFFF, 2**32 - 1])
def test_text_that_is_not_unicode_is_refused(tmp_path, point):
    ds = xr.Dataset({"u": (("k",), np.array(["ab", "c"], dtype="U2"))})
    path = tmp_path / "u.hurray"
    xh.to_hurray(ds, path, codecs=None)
    good = path.read_bytes()
    at = good.index("ab".encode("utf-32-le"))
    blob = reseal(good[:at] + struct.pack("<I", point) + good[at + 4 :])
    with pytest.raises(xh.HurrayFormatError, match=f"{point:#x}, which is not a Unicode scalar"):
        read_everything(blob)
    assert len(verify_file(io.BytesIO(blob))) == 1


def test_every_bit_of_a_zero_length_variable_index_is_checked_by_a_read(tmp_path):
    ds = xr.Dataset({"e": (("n",), np.zeros(0, "f4")), "v": (("k",), np.arange(3.0))})
    path = tmp_path / "empty.hurray"
    xh.to_hurray(ds, path)
    good = path.read_bytes()
    # "e" comes first: its root entry (no page table: offset 0, crc32c 0) is the first
    root_offset = SLOT.unpack_from(good, SLOT_AT)[3]
    assert good[root_offset : root_offset + 12] == bytes(12)
    for bit in range(12 * 8):
        blob = bytearray(good)
        blob[root_offset + bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(xh.HurrayFormatError, match="checksum mismatch in the index root"):
            read_everything(bytes(blob))
        with pytest.raises(xh.HurrayFormatError, match="index root"):
            xr.open_dataset(io.BytesIO(bytes(blob)), engine="hurray")


def test_verify_accepts_text_variables_with_edge_chunks(tmp_path):
    ds = xr.Dataset(
        {
            "u": (("k",), np.array(["a", "bc", "", "d", "ef"], dtype="U2")),
            "s": (("k",), np.array([b"a", b"bc", b"", b"d", b"ef"], dtype="S2")),
            "o": (("k",), np.array(["a", "bc", "", "d", "ef"], dtype=object)),
        }
    )
    path = tmp_path / "text.hurray"
    xh.to_hurray(ds, path, encoding={name: {"chunks": (2,)} for name in ds})
    assert verify_file(path) == []


@pytest.mark.parametrize("padding", ["0", "x"])
def test_text_padding_is_zero_bytes_and_other_padding_reads_but_fails_verify(tmp_path, padding):
    """The writer pads fixed-width text with zero bytes (numpy would write the number
    zero as the character "0", which drafts of the format wrote); a reader does not
    refuse a chunk for its padding, verify names it."""
    ds = xr.Dataset({"u": (("k",), np.array(["a", "bc", "d"], dtype="U2"))})
    xh.to_hurray(ds, tmp_path / "zero.hurray", encoding={"u": {"chunks": (2,)}}, codecs=None)
    zero = (tmp_path / "zero.hurray").read_bytes()
    # the last element (U2: 8 bytes) is padding
    assert zero[-8:] == bytes(8)
    assert verify_file(io.BytesIO(zero)) == []
    bad = reseal(zero[:-8] + padding.encode("utf-32-le") + bytes(4))
    assert verify_file(io.BytesIO(bad)) == [
        "variable 'u': chunk 1 has padding elements that are not zero"
    ]
    assert read_everything(bad)["u"].tolist() == ["a", "bc", "d"]
