"""The compiled tiled permutation (numba, the ``fast`` extra) against the numpy gather."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from layout_strategies import layouts_with_shapes

from xarray_hurray.layout import HilbertLayout, MortonLayout, tiles
from xarray_hurray.layout.descriptors import gather

pytest.importorskip("numba")


@pytest.fixture(autouse=True, scope="module")
def kernels_loaded():
    """Small chunks use the kernels once a process has loaded them."""
    assert tiles.available()


DTYPES = ["uint8", "bool", "<i2", ">i2", "float32", ">f4", "float64", "complex64", "U1"]


@st.composite
def tiled_layouts(draw):
    """A curve layout and a chunk shape without padding, at least one tile large."""
    if draw(st.booleans()):
        rank = draw(st.integers(2, 3))
        order = draw(st.integers(6 // rank, 12 // rank))
        return HilbertLayout(rank, order), (1 << order,) * rank
    rank = draw(st.integers(1, 3))
    bits = tuple(draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank)))
    if sum(bits) < 6:
        bits = (*bits[:-1], bits[-1] + 6 - sum(bits))
    return MortonLayout(bits), tuple(1 << b for b in bits)


def values(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    count = int(np.prod(shape))
    return np.arange(1, count + 1).reshape(shape).astype(dtype)


@given(tiled_layouts(), st.sampled_from(DTYPES))
def test_compiled_path_gives_the_numpy_bytes(layout_shape, dtype):
    layout, shape = layout_shape
    array = values(shape, dtype)
    sources, positions = layout.sources(shape), layout.positions(shape)
    packed = layout._tiles(shape, array.dtype.itemsize)
    assert packed.size  # curve tiles fall into few patterns
    expected = gather(array.reshape(-1), sources)  # the numpy path
    buffer = layout.encode(array)
    assert buffer.dtype == array.dtype
    assert buffer.tobytes() == expected.tobytes()
    assert layout.decode(buffer, shape).tobytes() == array.tobytes()
    assert gather(buffer, positions).tobytes() == array.tobytes()


@given(layouts_with_shapes(max_elements=2048), st.sampled_from(DTYPES))
def test_every_layout_round_trips_whichever_path_it_takes(layout_shape, dtype):
    layout, shape = layout_shape
    array = values(shape, dtype)
    buffer = layout.encode(array)
    assert buffer.size == layout.buffer_size(shape)
    np.testing.assert_array_equal(layout.decode(buffer, shape), array)


def brute_run_unit(sources: np.ndarray) -> int:
    """The widest aligned group of buffer positions holding consecutive sources."""
    best = 1
    for unit in (2, 4, 8):
        if sources.size % unit == 0 and all(
            sources[k] % unit == 0
            and list(sources[k : k + unit]) == list(range(sources[k], sources[k] + unit))
            for k in range(0, sources.size, unit)
        ):
            best = unit
    return best


@given(tiled_layouts())
def test_the_run_unit_is_the_widest_group_of_consecutive_elements(layout_shape):
    layout, shape = layout_shape
    sources = layout.sources(shape)
    assert tiles.run_unit(sources) == brute_run_unit(sources)


def test_morton_moves_pairs_and_hilbert_single_elements():
    assert tiles.run_unit(MortonLayout((4, 4)).sources((16, 16))) == 2
    assert tiles.run_unit(HilbertLayout(2, 4).sources((16, 16))) == 1
    assert tiles.run_unit(np.arange(64)) == 8  # the identity: groups of 8
    # pairs of uint8 move as uint16, pairs of float64 one by one (16 bytes is too wide)
    morton = MortonLayout((4, 4))
    assert int(morton._tiles((16, 16), 1)[0]) == 2
    assert int(morton._tiles((16, 16), 8)[0]) == 1


def test_a_permutation_without_curve_tiles_keeps_the_numpy_gather():
    scrambled = np.random.default_rng(0).permutation(1 << 16)
    assert tiles.tiles_for(scrambled) is None
    assert tiles.tiles_for(np.arange(100)) is None  # not a whole number of tiles
    padded = MortonLayout((3, 3))
    assert padded._tiles((5, 8), 4).size == 0  # padding: numpy path


def test_the_kernels_reject_types_they_cannot_move():
    layout, shape = HilbertLayout(2, 3), (8, 8)
    packed = layout._tiles(shape, 8)
    strings = np.array([str(i) for i in range(64)], dtype=object)
    assert tiles.gather(strings, packed) is None
    assert layout.encode(strings.reshape(shape)).tolist() == strings[layout.sources(shape)].tolist()


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
        assert "numba" not in sys.modules and small._tiles(array.shape, 4).size == 0
        assert 512 * 512 >= tiles.MIN_ELEMENTS
        large.encode(np.zeros((512, 512), dtype="f4"))
        assert "numba" in sys.modules and small._tiles(array.shape, 4).size
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
