"""Hypothesis strategies for layouts, chunk shapes and boxes."""

import numpy as np
from hypothesis import strategies as st

from xarray_hurray.layout import HilbertLayout, MortonLayout, RowMajorLayout


@st.composite
def layouts_with_shapes(draw, max_elements: int = 4096):
    """A layout and a chunk shape it accepts."""
    kind = draw(st.sampled_from(["hilbert", "morton", "row-major"]))
    if kind == "hilbert":
        rank = draw(st.integers(2, 4))
        order = draw(st.integers(1, max(1, int(np.log2(max_elements)) // rank)))
        return HilbertLayout(rank, order), (1 << order,) * rank
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(1, 12), min_size=rank, max_size=rank)))
    if kind == "row-major":
        return RowMajorLayout(), shape
    extra = draw(st.lists(st.integers(0, 1), min_size=rank, max_size=rank))
    bits = tuple(max(n - 1, 0).bit_length() + e for n, e in zip(shape, extra, strict=True))
    return MortonLayout(bits), shape


@st.composite
def boxes(draw, shape):
    """A box ``(lo, hi)`` inside ``shape``, possibly empty."""
    lo, hi = [], []
    for n in shape:
        a = draw(st.integers(0, n))
        b = draw(st.integers(0, n))
        lo.append(min(a, b))
        hi.append(max(a, b))
    return tuple(lo), tuple(hi)
