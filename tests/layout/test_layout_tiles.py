"""The compiled tiled permutation (numba, the ``fast`` extra) against the numpy gather.

The tests hold on any processor numba compiles for: what the loops do everywhere is
asserted everywhere, and the parts that need a processor's features (permutes by
vector index, AVX-512's registers) are asserted where numba compiles with them
(``tile_kernels._host_features``), skipped where it does not.  CI runs this file once
more with ``NUMBA_CPU_NAME=generic``, a portable target with none of them.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from layout_strategies import layouts_with_shapes

from xarray_hurray.layout import (
    HilbertLayout,
    MortonLayout,
    RowMajorLayout,
    tile_interface,
    tiles,
)
from xarray_hurray.layout.descriptors import gather

kernels = pytest.importorskip("xarray_hurray.layout.tile_kernels")  # needs numba


@pytest.fixture(autouse=True, scope="module")
def kernels_loaded():
    """Small chunks use the kernels once a process has loaded them."""
    assert tiles.available()


DTYPES = ["uint8", "bool", "<i2", ">i2", "float32", ">f4", "float64", "complex64", "U1"]


@st.composite
def tiled_layouts(draw):
    """A curve layout and a chunk shape without padding, at least one tile large."""
    if draw(st.booleans()):
        rank = draw(st.integers(2, 4))
        order = draw(st.integers(6 // rank, 12 // rank))
        return HilbertLayout(rank, order), (1 << order,) * rank
    rank = draw(st.integers(1, 3))
    bits = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    if sum(bits) < 6:
        bits = (*bits[:-1], bits[-1] + 6 - sum(bits))
    return MortonLayout(bits), tuple(1 << b for b in bits)


def values(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """Random bytes as ``dtype``: floats with NaN payloads and -0.0 among them."""
    count = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.random.default_rng(seed).integers(0, 256, count, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def aligned(array: np.ndarray) -> bool:
    """Whether ``array`` starts at a cache line, as the loops' outputs do."""
    return array.ctypes.data % tile_interface.ALIGNMENT == 0


def check_compiled_path(layout, shape: tuple[int, ...], dtype: str, seed: int) -> None:
    """A layout's encode and decode of a tiled chunk give the numpy gather's bytes,
    through the loops wherever this processor takes the tiles."""
    array = values(shape, dtype, seed)
    sources, positions = layout.sources(shape), layout.positions(shape)
    tiled = layout._tiles(shape, array.itemsize)
    assert tiled is not None  # runs: boxes in few patterns
    # loops branch among at most MAX_PATTERNS patterns, or look the masks up where
    # the processor permutes by vector index; else the numpy gather serves
    taken = len(tiled.patterns) <= tiles.MAX_PATTERNS or kernels.can_look_up(
        array.itemsize, tiled.patterns
    )
    assert (tiled.kernel(array.itemsize) is not None) == taken
    expected = gather(array.reshape(-1), sources)  # the numpy path
    buffer = layout.encode(array)
    assert buffer.dtype == array.dtype
    assert buffer.tobytes() == expected.tobytes()
    decoded = layout.decode(buffer, shape)
    assert decoded.tobytes() == array.tobytes()
    # the kernels' output starts at a cache line
    assert not taken or (aligned(buffer) and aligned(decoded))
    assert gather(buffer, positions).tobytes() == array.tobytes()


COMPILED_CASES = [
    (HilbertLayout(2, 5), "uint8"),  # 8 x 8 boxes in 4 patterns, four a step
    (HilbertLayout(3, 4), ">i2"),  # 4 x 4 x 4 boxes in 21 patterns, swapped bytes
    (HilbertLayout(3, 4), "float64"),  # NaN payloads and -0.0, a box a step
    (MortonLayout((3, 3, 4)), "bool"),  # unequal bits: one pattern
    (MortonLayout((3, 3, 4)), "U1"),  # 4 bytes
    (MortonLayout((1, 1, 1, 1)), "complex64"),  # a 2 x 2 x 2 x 2 box of 8 bytes
    (MortonLayout((1, 1, 1, 1)), ">f4"),
    (MortonLayout((12,)), "<i2"),  # one axis
    (HilbertLayout(4, 3), "uint8"),  # runs of 256 or of 16 (tile_sizes)
    (HilbertLayout(4, 3), "<i2"),  # 106 patterns: looked up, or the numpy gather
]
"""A tiled chunk of each kind of box, each element width, and the element types
whose bytes a cast would change; :func:`test_compiled_path_gives_the_numpy_bytes`
draws from every tiled layout and type."""


@pytest.mark.parametrize(("layout", "dtype"), COMPILED_CASES)
def test_chunks_of_each_kind_give_the_numpy_bytes_through_the_loops(layout, dtype):
    check_compiled_path(layout, layout._default_shape(), dtype, 0)


@pytest.mark.slow
@given(tiled_layouts(), st.sampled_from(DTYPES), st.integers(0, 2**32 - 1))
def test_compiled_path_gives_the_numpy_bytes(layout_shape, dtype, seed):
    check_compiled_path(*layout_shape, dtype, seed)


def check_round_trip(layout, shape: tuple[int, ...], dtype: str) -> None:
    """A chunk of any layout round-trips, with the numpy gather's bytes where it has
    no padding, whether it takes the kernels or not."""
    array = values(shape, dtype, 0)
    buffer = layout.encode(array)
    assert buffer.size == layout.buffer_size(shape)
    if buffer.size == array.size:  # no padding, which the numpy gather does not fill
        assert buffer.tobytes() == gather(array.reshape(-1), layout.sources(shape)).tobytes()
    assert layout.decode(buffer, shape).tobytes() == array.tobytes()


ROUND_TRIP_CASES = [
    (RowMajorLayout(), (3, 5), "float64"),  # no tiles
    (RowMajorLayout(), (), "uint8"),  # rank 0
    (MortonLayout(()), (), ">i2"),
    (MortonLayout((2, 3)), (3, 7), "U1"),  # padding: the numpy gather
    (MortonLayout((1, 2, 2)), (2, 4, 4), "bool"),  # a whole tile of 32
    (MortonLayout((1, 1)), (2, 2), "complex64"),  # smaller than any tile
    (HilbertLayout(2, 4), (16, 16), "float32"),  # tiles, through the kernels
    (HilbertLayout(4, 1), (2, 2, 2, 2), "<i2"),
]
"""Chunks of each kind: without tiles, padded, smaller than a tile, tiled; the
hypothesis test below draws from every layout."""


@pytest.mark.parametrize(("layout", "shape", "dtype"), ROUND_TRIP_CASES)
def test_a_layout_round_trips_whichever_path_it_takes(layout, shape, dtype):
    check_round_trip(layout, shape, dtype)


@pytest.mark.slow
@given(layouts_with_shapes(max_elements=2048), st.sampled_from(DTYPES))
def test_every_layout_round_trips_whichever_path_it_takes(layout_shape, dtype):
    check_round_trip(*layout_shape, dtype)


def brute_sources(tiled: tiles.Tiles, shape: tuple[int, ...]) -> np.ndarray:
    """The element index at each buffer position, read back from the tiles one by one:
    a tile's element ``j`` is the box's element ``patterns[id, j]`` in row-major order,
    counted from the box's first corner ``base``."""
    patterns = tiled.patterns
    out = np.full(tiled.runs.size * patterns.shape[1], -1)
    for word, base in zip(tiled.runs.tolist(), tiled.bases.tolist(), strict=True):
        run, pattern = word >> tile_interface.PATTERN_BITS, word % tile_interface.MAX_LOOKED_UP
        corner = np.unravel_index(base, shape)
        for j, local in enumerate(patterns[pattern]):
            inside = np.unravel_index(local, tiled.sides)
            out[run * len(patterns[pattern]) + j] = np.ravel_multi_index(
                tuple(np.add(corner, inside)), shape
            )
    return out


@given(tiled_layouts(), st.sampled_from([1, 2]))
def test_the_tiles_describe_the_permutation(layout_shape, width):
    layout, shape = layout_shape
    tiled = layout._tiles(shape, width)
    assert np.prod(tiled.sides) == tiled.patterns.shape[1] and len(tiled.sides) == len(shape)
    assert tiled.strides == tuple(int(np.prod(shape[a + 1 :])) for a in range(len(shape) - 1))
    assert np.array_equal(brute_sources(tiled, shape), layout.sources(shape))
    # the tiles in the row-major order of their boxes
    assert np.all(np.diff(tiled.bases) > 0)
    # a word of 4 bytes per tile where it holds the tile's run and pattern
    assert tiled.runs.dtype == np.uint32


@given(tiled_layouts())
def test_a_step_moves_boxes_side_by_side(layout_shape):
    layout, shape = layout_shape
    for width in (1, 2, 4, 8):
        tiled = layout._tiles(shape, width)
        group = tiled.group(width)
        row = tiled.sides[-1] * width
        # rows of ROW_BYTES where the chunk's rows are long enough, else whole rows
        assert group == 1 or len(shape) > 1
        assert group * row <= max(tiles.ROW_BYTES, row) and group * tiled.sides[-1] <= shape[-1]
        if len(shape) > 1 and row < tiles.ROW_BYTES and group * tiled.sides[-1] < shape[-1]:
            assert group * row == tiles.ROW_BYTES
        # the boxes of a step are consecutive in the tiles, next to each other
        bases = tiled.bases.reshape(-1, group)
        assert np.all(np.diff(bases, axis=1) == tiled.sides[-1])
        kernel = tiled.kernel(width)
        assert kernel is None or np.array_equal(kernel.starts, bases[:, 0])


def test_the_loops_read_tile_words_of_eight_bytes_too():
    # words of 8 bytes are for chunks of more than 2**23 tiles, too large for a test:
    # the loops are given this chunk's words widened
    layout, shape = HilbertLayout(3, 6), (64, 64, 64)
    tiled = layout._tiles(shape, 1)
    kernel = tiled.kernel(1)
    wide = tiled.runs.astype(np.uint64)
    array = values(shape, "u1", 4).reshape(-1)
    space = np.empty(array.nbytes + tile_interface.ALIGNMENT - 1, dtype=np.uint8)
    start = kernel.gather(array, wide, kernel.starts, kernel.masks, tiled.strides, space)
    buffer = space[start : start + array.nbytes].copy()
    assert buffer.tobytes() == gather(array, layout.sources(shape)).tobytes()
    start = kernel.scatter(buffer, wide, kernel.starts, kernel.inverses, tiled.strides, space)
    assert space[start : start + array.nbytes].tobytes() == array.tobytes()


def test_a_tile_word_holds_the_last_run_and_any_pattern():
    for count in (1, 2**23, 2**23 + 1, 2**40):
        word = tiles.word_for(count)
        last = (count - 1) << tile_interface.PATTERN_BITS | (tile_interface.MAX_LOOKED_UP - 1)
        assert last <= np.iinfo(word).max
        assert word == np.uint32 or (last >> 32) > 0  # 8 bytes only where 4 do not hold


CURVE_TILES = [
    (MortonLayout((4, 4)), (8, 8), 1),
    (MortonLayout((1, 2, 6)), (2, 4, 8), 1),
    (MortonLayout((12,)), (64,), 1),  # one axis: the identity, copied
    (HilbertLayout(2, 4), (8, 8), 3),
    (HilbertLayout(2, 10), (8, 8), 4),
    (HilbertLayout(3, 3), (4, 4, 4), 7),
    (HilbertLayout(3, 5), (4, 4, 4), 24),
    (HilbertLayout(4, 2), (2, 2, 4, 4), 4),
]
"""Curves and the tiles of their default chunk, whatever the elements' width."""

WIDE_TILES = [
    # more than MAX_PATTERNS: loops that look the masks up, where there are any
    (HilbertLayout(4, 3), (2, 2, 2, 2), 106),
    (HilbertLayout(4, 4), (2, 2, 2, 2), 185),
]
"""4-D Hilbert curves, whose runs of 64 are not boxes, with elements of 2 bytes or more."""


@pytest.mark.parametrize(
    ("layout", "sides", "patterns", "width"),
    [(*case, width) for case in CURVE_TILES for width in (1, 2, 4, 8)]
    + [(*case, width) for case in WIDE_TILES for width in (2, 4, 8)],
)
def test_the_tiles_of_curves(layout, sides, patterns, width):
    tiled = layout._tiles(layout._default_shape(), width)
    assert tiled.sides == sides and len(tiled.patterns) == patterns


@pytest.mark.parametrize(
    ("layout", "lines", "boxes"), [(HilbertLayout(4, 3), 15, 106), (HilbertLayout(4, 4), 106, 185)]
)
def test_bytes_of_4d_hilbert_chunks_tile_in_runs_of_four_lines(layout, lines, boxes):
    # runs of 256 (4 x 4 x 4 x 4 boxes in `lines` patterns) where the processor
    # permutes 256 bytes by vector index; without that permute, their patterns are
    # too many to compile in: runs of 16 (2 x 2 x 2 x 2 boxes in `boxes` patterns)
    shape = layout._default_shape()
    tiled = tiles.tiles_for(layout.sources(shape), shape, 1)
    if kernels.can_permute(tiles.LINES, 1):
        assert tiled.sides == (4, 4, 4, 4) and len(tiled.patterns) == lines
    else:
        assert tiled.sides == (2, 2, 2, 2) and len(tiled.patterns) == boxes


@pytest.mark.parametrize(
    ("rows", "group", "length", "lanes"),
    [
        (8, 4, 8, 64),  # 8 x 8 bytes: a box a register
        (16, 8, 4, 64),  # 4 x 4 x 4 bytes: a box a register
        (64, 8, 4, 64),  # 4 x 4 x 4 x 4 bytes: four registers a box
        (8, 16, 2, 64),  # 2 x 2 x 2 x 2 bytes: four boxes a register
        (16, 2, 4, 16),  # 4 x 4 x 4 of 4 bytes: a box in four registers
        (4, 1, 8, 8),  # one box a step: no pass
        (2, 4, 2, 32),  # fewer rows than a register holds
    ],
)
def test_each_pass_makes_a_register_of_two(rows, group, length, lanes):
    arrangements = kernels._passes(rows, group, length, lanes)
    every = sorted((g, r) for g in range(group) for r in range(rows))
    for arrangement in arrangements:  # each unit once, each register full
        assert sorted(unit for register in arrangement for unit in register) == every
        assert {len(register) for register in arrangement} == {len(arrangements[0][0])}
        assert len(arrangement[0]) * length <= lanes
    for before, after in itertools.pairwise(arrangements):
        holder = {unit: n for n, register in enumerate(before) for unit in register}
        assert all(len({holder[unit] for unit in register}) == 2 for register in after)
    # at the end, a register holds one box, or every row of its boxes
    for register in arrangements[-1]:
        boxes = {g for g, _ in register}
        assert len(register) == len(boxes) * rows or register == sorted(register)


VARIANTS = {
    # (lookup, stream, apart), True where the processor has what it needs
    "as-compiled-here": (True, False, True),
    "streaming": (True, True, True),
    "compiled-masks-plain-scatter": (False, False, False),
}
"""The ways loops are compiled: the masks looked up (where the processor permutes a
box by vector index) or compiled in, gather's stores past the caches or not, and
scatter's passes kept apart (with AVX-512) or not.  The first is what
:meth:`.tiles.Tiles.kernel` compiles on this processor; the last is what it
compiles where the processor has none of these features."""


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(
    ("layout", "width"),
    [
        (layout, width)
        for layout in (HilbertLayout(2, 5), HilbertLayout(3, 4), MortonLayout((3, 3, 4)))
        for width in (1, 2)
    ]
    # a box of 16 elements: one register of 1, 2 and 4 bytes, or two of 8
    + [(MortonLayout((1, 1, 1, 1)), width) for width in (1, 2, 4, 8)]
    # a box of 256 bytes, four registers, where the processor permutes them
    + [(HilbertLayout(4, 3), 1)],
)
def test_every_way_of_compiling_the_loops_gives_the_numpy_bytes(layout, width, variant):
    # each way is compiled and checked here, on a chunk small enough for a test
    shape = layout._default_shape()
    tiled = layout._tiles(shape, width)
    lookup, stream, apart = VARIANTS[variant]
    lookup = lookup and kernels.can_look_up(width, tiled.patterns)
    apart = apart and kernels.can_keep_apart()
    if variant != "compiled-masks-plain-scatter" and not (lookup or apart or stream):
        pytest.skip("on this processor, the same loops as compiled-masks-plain-scatter")
    kernel = tiled.kernel(width)  # the masks as the loops take them
    if kernel is None:
        assert not kernels.can_look_up(width, tiled.patterns)
        assert len(tiled.patterns) > tiles.MAX_PATTERNS
        pytest.skip("too many patterns to compile in: the numpy gather (tested below)")
    group = tiled.group(width)
    text = kernels.describe(width, tiled.sides, tiled.patterns, group, lookup, stream, apart)
    gather_loop, scatter_loop = kernels.kernels(text)
    array = values(shape, f"u{width}", 3).reshape(-1)
    space = np.empty(array.nbytes + tile_interface.ALIGNMENT - 1, dtype=np.uint8)
    start = gather_loop(array, tiled.runs, kernel.starts, kernel.masks, tiled.strides, space)
    buffer = space[start : start + array.nbytes].view(array.dtype)
    assert buffer.tobytes() == gather(array, layout.sources(shape)).tobytes()
    if stream:  # scatter ignores it: compiled and checked in the other variants
        return
    back = np.empty_like(space)
    start = scatter_loop(
        buffer.copy(), tiled.runs, kernel.starts, kernel.inverses, tiled.strides, back
    )
    assert back[start : start + array.nbytes].tobytes() == array.tobytes()


def test_a_large_chunk_streams_its_gather():
    layout, shape = MortonLayout((11, 11)), (2048, 2048)  # 4 MiB of bytes
    assert math.prod(shape) == tiles.STREAM_BYTES
    array = values(shape, "u1", 5)
    buffer = layout.encode(array)
    assert buffer.tobytes() == gather(array.reshape(-1), layout.sources(shape)).tobytes()
    assert layout.decode(buffer, shape).tobytes() == array.tobytes()


def test_a_permutation_without_curve_tiles_keeps_the_numpy_gather():
    scrambled = np.random.default_rng(0).permutation(1 << 16)
    assert tiles.tiles_for(scrambled, (256, 256), 1) is None
    assert tiles.tiles_for(np.arange(100), (10, 10), 1) is None  # not a whole number of tiles
    # boxes that wrap around a row end: runs of 8 from a chunk 12 wide
    assert tiles.tiles_for(np.arange(96), (8, 12), 1) is None
    padded = MortonLayout((3, 3))
    assert padded._tiles((5, 8), 1) is None  # padding: numpy path


@pytest.mark.parametrize("width", [1, 2, 4, 8])
def test_tiles_in_too_many_patterns_to_branch_on_keep_the_numpy_gather(width):
    # a 4-D Hilbert curve turns its 2 x 2 x 2 x 2 boxes 106 ways at order 3: loops
    # that look the masks up take them; on a processor without such permutes (as
    # when numba is told to compile for a portable target) the numpy gather stays
    layout, shape = HilbertLayout(4, 3), (8, 8, 8, 8)
    sources = layout.sources(shape)
    tiled = tiles._box_tiles(sources, shape, 16)  # runs of 16, whatever the width
    assert tiled.sides == (2, 2, 2, 2) and len(tiled.patterns) > tiles.MAX_PATTERNS
    array = values(shape, f"u{width}", 1)
    if kernels.can_look_up(width, tiled.patterns):
        assert tiled.kernel(width) is not None
        buffer = tiles.gather(array, tiled)
        assert buffer.tobytes() == gather(array.reshape(-1), sources).tobytes()
        assert tiles.scatter(buffer, tiled).tobytes() == array.tobytes()
    else:
        assert tiled.kernel(width) is None
        assert tiles.gather(array, tiled) is None and tiles.scatter(array, tiled) is None


@pytest.mark.parametrize(
    ("layout", "shape", "index"),
    [
        (MortonLayout((12,)), (1 << 12,), np.s_[::-2]),
        (MortonLayout((10,)), (1 << 10,), np.s_[::3]),
        (HilbertLayout(2, 6), (64, 64), np.s_[:, ::-2]),
        (MortonLayout((6, 6)), (64, 64), np.s_[::2, ::2]),
    ],
)
def test_strided_arrays_are_permuted_as_numpy_does(layout, shape, index):
    # the loops read elements at their flat index from the data's start: arrays
    # that are views with other strides (a reversed 1-D array stays one after
    # reshape(-1)) are made contiguous first
    whole = values(tuple(3 * s for s in shape), "u2", 4)
    array = whole[index][tuple(slice(0, s) for s in shape)]
    assert array.shape == shape and not array.flags.c_contiguous
    expected = gather(np.ascontiguousarray(array).reshape(-1), layout.sources(shape))
    assert layout.encode(array).tobytes() == expected.tobytes()
    strided_buffer = np.repeat(expected, 2)[::2]
    assert layout.decode(strided_buffer, shape).tobytes() == array.tobytes()


def test_the_kernels_reject_types_they_cannot_move():
    layout, shape = HilbertLayout(2, 3), (8, 8)
    tiled = layout._tiles(shape, 8)
    strings = np.array([str(i) for i in range(64)], dtype=object)
    assert tiles.gather(strings, tiled) is None
    assert layout.encode(strings.reshape(shape)).tolist() == strings[layout.sources(shape)].tolist()


@pytest.mark.slow
def test_only_a_large_chunk_loads_numba():
    # a fresh process: small chunks keep the numpy gather and never import numba; the
    # first chunk of MIN_ELEMENTS loads the kernels, which then serve small chunks too
    script = textwrap.dedent(
        """
        import sys
        import numpy as np
        from xarray_hurray.layout import HilbertLayout, tiles

        small, large = HilbertLayout(2, 7), HilbertLayout(2, 9)
        array = np.arange(128 * 128, dtype="f4").reshape(128, 128)
        assert small.decode(small.encode(array), array.shape).tobytes() == array.tobytes()
        assert "numba" not in sys.modules and small._tiles(array.shape, 4) is None
        assert 512 * 512 >= tiles.MIN_ELEMENTS
        large.encode(np.zeros((512, 512), dtype="f4"))
        assert "numba" in sys.modules and small._tiles(array.shape, 4) is not None
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
