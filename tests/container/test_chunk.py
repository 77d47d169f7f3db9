"""Chunks to bytes: what the element encoding refuses, named; a block of chunks at once."""

from __future__ import annotations

from dataclasses import replace

import google_crc32c
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from layout_strategies import layouts_with_shapes

from xarray_hurray.container import ChunkCodec, VariableMeta, chunk
from xarray_hurray.layout import RowMajorLayout


def test_a_string_chunk_holding_no_str_is_refused_naming_the_variable():
    meta = VariableMeta(
        name="s", dims=("x",), shape=(2,), dtype="string", chunks=(2,), layout=RowMajorLayout()
    )
    with pytest.raises(TypeError, match=r"variable 's': .* not str: None of type NoneType"):
        ChunkCodec(meta).encode(np.array(["a", None], dtype=object))


@st.composite
def blocks(draw):
    """A variable (layout, chunks, element type, fill, codecs) and a block of it: a
    box of whole chunks, its last ones along each axis perhaps cut by the variable's
    end; some chunks hold the fill value alone, one of them -0.0 for a 0.0 fill."""
    layout, chunks = draw(layouts_with_shapes(max_elements=256))
    dtype = draw(st.sampled_from(["float32", "int16", "bool", "complex64", "U2", "string"]))
    grid = draw(st.lists(st.integers(1, 3), min_size=len(chunks), max_size=len(chunks)))
    cut = [draw(st.integers(0, c - 1)) for c in chunks]
    shape = tuple(g * c - k for g, c, k in zip(grid, chunks, cut, strict=True))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    values = rng.integers(-3, 4, size=shape)
    fill_value = None
    if dtype == "float32" and draw(st.booleans()):
        fill_value = np.float32(np.nan).tobytes()
        values = np.where(values == 0, np.nan, values)
    values = values.astype(dtype if dtype != "string" else "U2")
    if dtype == "string":
        values = values.astype(object)
    meta = VariableMeta(
        name="v",
        dims=tuple(f"d{i}" for i in range(len(shape))),
        shape=shape,
        dtype=dtype,
        chunks=chunks,
        layout=layout,
        codecs=draw(st.sampled_from([[], [{"id": "zstd", "level": 1}], [{"id": "zlib"}]])),
        fill_value=fill_value,
    )
    fill = meta.fill  # every first, second or third chunk holds nothing else
    for box in list(np.ndindex(*grid))[:: draw(st.integers(1, 3))]:
        part = tuple(slice(i * c, (i + 1) * c) for i, c in zip(box, chunks, strict=True))
        values[part] = fill
    if dtype == "float32" and fill_value is None and values.size:
        values.reshape(-1)[0] = -0.0  # not the fill: stored
    as_source = draw(st.sampled_from([None, "float64"])) if dtype == "float32" else None
    return meta, values if as_source is None else values.astype(as_source)


@settings(max_examples=60, deadline=None)
@given(
    blocks(),
    st.booleans(),
    st.sampled_from([0, 4096]),
    st.sampled_from([1, 64, 2**18]),
    st.randoms(use_true_random=False),
)
def test_encoding_many_chunks_gives_the_bytes_of_each_chunk_alone(
    case, write_empty, small, task_bytes, random
):
    """Encoding many chunks (small chunks of numbers gathered a run at a time, other
    chunks one by one; in runs of one chunk, a few, or all), all of a block in
    row-major order or some of them in any order, gives what encoding each chunk
    alone gives, with the CRC-32C of each stored chunk as google_crc32c computes it
    (0 for a chunk left out)."""
    meta, block = case
    codec = ChunkCodec(meta)
    grid = [-(-n // c) for n, c in zip(block.shape, meta.chunks, strict=True)]
    expected = []
    for at in np.ndindex(*grid):
        box = tuple(slice(i * c, (i + 1) * c) for i, c in zip(at, meta.chunks, strict=True))
        one = block[box]
        expected.append(b"" if not write_empty and codec.is_fill(one) else codec.encode(one))
    picked = random.sample(range(len(expected)), random.randint(0, len(expected)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chunk, "SMALL_CHUNK_ELEMENTS", small)
        patch.setattr(chunk, "TASK_BYTES", task_bytes)
        whole = codec.encode_chunks(block, write_empty)
        assert whole.chunks == expected
        assert whole.crcs == [google_crc32c.value(data) if data else 0 for data in expected]
        runs = list(codec.encode_many(block, np.array(picked, dtype=np.int64), write_empty))
        assert [data for run in runs for data in run.chunks] == [expected[k] for k in picked]
        assert [crc for run in runs for crc in run.crcs] == [whole.crcs[k] for k in picked]


@settings(max_examples=60, deadline=None)
@given(blocks(), st.sampled_from([0, 4096]))
def test_decoding_a_small_chunk_gives_what_the_layout_decodes(case, small):
    """A small chunk of numbers decodes through its cached element positions (and any
    chunk with ``SMALL_CHUNK_ELEMENTS`` 0, through the layout's own decode): both give
    the chunk, padding included, with the values that were encoded."""
    meta, block = case
    first = block[(*(slice(0, c) for c in meta.chunks), ...)]  # an array, also 0-d
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chunk, "SMALL_CHUNK_ELEMENTS", small)
        codec = ChunkCodec(meta)
        back = codec.decode(codec.encode(first))
    assert back.shape == meta.chunks
    got = back[(*(slice(0, n) for n in first.shape), ...)]
    if meta.dtype == "string":
        assert got.tolist() == first.tolist()
    else:  # bit for bit: -0.0 and NaN payloads too
        assert got.tobytes() == np.ascontiguousarray(first, dtype=back.dtype).tobytes()


@settings(max_examples=60, deadline=None)
@given(blocks())
def test_chunks_encoded_in_turn_in_one_thread_each_decode_to_their_own_values(case):
    """Every chunk of a block encoded one after another in one thread (whole chunks
    of numbers in row-major order gathered in the thread's one buffer) keeps its
    own bytes: each decodes, bit for bit, to the values numpy casts it to, and
    with no codec the stored bytes of a whole chunk that is not text are those
    values' bytes in the layout's order, every padding element zero bytes, that of a
    chunk cut by the variable's end too (text included: numpy writes the number zero
    into text as the character "0")."""
    meta, block = case
    codec, bare = ChunkCodec(meta), ChunkCodec(replace(meta, codecs=()))
    grid = [-(-n // c) for n, c in zip(block.shape, meta.chunks, strict=True)]
    boxes = [
        tuple(slice(i * c, (i + 1) * c) for i, c in zip(at, meta.chunks, strict=True))
        for at in np.ndindex(*grid)
    ]
    chunks = [block[(*box, ...)] for box in boxes]  # arrays, also 0-d
    stored = [(codec.encode(one), bare.encode(one)) for one in chunks]
    for one, (data, raw) in zip(chunks, stored, strict=True):
        back = codec.decode(data)
        got = back[(*(slice(0, n) for n in one.shape), ...)]
        if meta.dtype == "string":
            assert got.tolist() == one.tolist()
            continue
        expected = np.ascontiguousarray(one, dtype=back.dtype)
        assert got.tobytes() == expected.tobytes()
        # each element at its position in the layout's buffer, the padding zero
        full = np.zeros(meta.chunks, dtype=back.dtype)
        full[tuple(slice(0, n) for n in one.shape)] = expected.reshape(one.shape)
        buffer = np.zeros(codec.buffer_size, dtype=back.dtype)
        buffer[meta.layout.positions(meta.chunks).reshape(-1)] = full.reshape(-1)
        assert raw == buffer.tobytes()


@settings(max_examples=60, deadline=None)
@given(blocks(), st.randoms(use_true_random=False))
def test_a_chunk_is_the_fill_when_every_element_is_its_bytes(case, random):
    """``is_fill`` against the bytes of every element, for each chunk of a block, and
    for that chunk with one element (the first, or any other) changed."""
    meta, block = case
    codec = ChunkCodec(meta)
    grid = [-(-n // c) for n, c in zip(block.shape, meta.chunks, strict=True)]

    def truth(one: np.ndarray) -> bool:
        if meta.dtype == "string":
            return one.size > 0 and all(item == meta.fill for item in one.reshape(-1).tolist())
        items = np.asarray(one, dtype=np.dtype(meta.dtype).newbyteorder("<"))
        return items.size > 0 and items.tobytes() == meta.fill_bytes * items.size

    for at in np.ndindex(*grid):
        box = tuple(slice(i * c, (i + 1) * c) for i, c in zip(at, meta.chunks, strict=True))
        one = np.array(block[box])
        assert codec.is_fill(one) == truth(one)
        if one.size and truth(one):
            where = random.choice([0, random.randrange(one.size)])
            one.reshape(-1)[where] = "x" if meta.dtype in ("U2", "string") else 1
            assert not codec.is_fill(one)
