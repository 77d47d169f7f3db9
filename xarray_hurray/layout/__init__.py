"""The element layouts of the Hurray format: pure numpy, no xarray or zarr.

- :func:`hilbert_encode` / :func:`hilbert_decode`: Skilling's Hilbert index.
- :func:`morton_encode` / :func:`morton_decode`: Morton codes with per-dimension bits.
- :class:`RowMajorLayout`, :class:`MortonLayout`, :class:`HilbertLayout`: descriptors
  that validate chunk shapes, permute chunks to and from their buffers and turn a
  box into runs of buffer positions.
- :func:`default_layout`: the layout a writer uses when none is asked for.
- :func:`chunk_placement`: where the chunks of a grid go along a curve;
  :func:`placement_positions`: where some of them go, and :func:`placement_chunks`:
  which go at some places, without the whole order.
- :class:`KernelFallbackWarning`: numba installed but failing, so the numpy
  permutation serves (:mod:`.tiles`).
"""

from ..errors import KernelFallbackWarning, LayoutError
from .descriptors import (
    LAYOUT_NAMES,
    PERMUTATION_CACHE,
    HilbertLayout,
    Layout,
    MortonLayout,
    RowMajorLayout,
    default_layout,
    layout_for_shape,
    layout_from_config,
)
from .hilbert import hilbert_decode, hilbert_encode
from .morton import morton_decode, morton_encode
from .order import chunk_placement, placement_chunks, placement_positions
from .ranges import merge_runs

__all__ = [
    "LAYOUT_NAMES",
    "PERMUTATION_CACHE",
    "HilbertLayout",
    "KernelFallbackWarning",
    "Layout",
    "LayoutError",
    "MortonLayout",
    "RowMajorLayout",
    "chunk_placement",
    "default_layout",
    "hilbert_decode",
    "hilbert_encode",
    "layout_for_shape",
    "layout_from_config",
    "merge_runs",
    "morton_decode",
    "morton_encode",
    "placement_chunks",
    "placement_positions",
]
