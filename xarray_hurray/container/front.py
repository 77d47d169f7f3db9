"""Which variables a new file stores at its front, right after the head, and which a
reader holds once read: the variables every open reads.

Opening a dataset through xarray reads its index coordinates (the 1-D variables
named after their dimension) whole, to build its indexes, and often reads them more
than once; CF bounds and other small variables (a grid mapping, a scalar) are read
whole whenever they are read.  A writer that stores their chunks first, before any
other chunk, puts them inside or just after the first
:data:`~.format.HEAD_SIZE` bytes, which a reader reads at open: the open then needs
no request of its own for them, or one request for all of them where they run past
the head.  Chunk placement is the writer's freedom (readers must not depend on where
chunks lie), so this order is no part of the format.
"""

from __future__ import annotations

import math

from .elements import STRING, parse_element_type
from .metadata import DatasetMeta, VariableMeta

SMALL_BYTES = 64 * 2**10
"""Decoded bytes up to which any variable goes to the front."""

HELD_BYTES = 64 * 2**20
"""Decoded bytes up to which an index coordinate or a bounds variable is held by a
reader once read (a larger one is read again when asked for again)."""

STRING_BYTES = 16
"""Bytes counted per element of a ``string`` variable, whose size is unknown before
it is read."""


def decoded_bytes(var: VariableMeta) -> int:
    """Bytes the values of ``var`` take decoded (``string`` elements estimated)."""
    itemsize = STRING_BYTES if var.dtype == STRING else parse_element_type(var.dtype).itemsize
    return math.prod(var.shape) * itemsize


def is_index_coordinate(var: VariableMeta) -> bool:
    """Whether ``var`` is a dimension coordinate: 1-D and named after its dimension."""
    return var.dims == (var.name,)


def bounds_names(group: DatasetMeta) -> set[str]:
    """The names of the variables of ``group`` that a variable of it names as its CF
    ``bounds``."""
    names = {var.attrs.get("bounds") for var in group.variables}
    return {name for name in names if isinstance(name, str)}


def front_variables(metadata: DatasetMeta) -> list[tuple[str, VariableMeta]]:
    """The variables of ``metadata`` a new file stores first (in variable number
    order; :func:`placement_order` gives the order they are stored in): index
    coordinates and bounds variables (any size), and every variable of at most
    :data:`SMALL_BYTES` decoded, in any group."""
    return [
        (path, var)
        for path, var, opened in _kinds(metadata)
        if opened or decoded_bytes(var) <= SMALL_BYTES
    ]


def held_variables(metadata: DatasetMeta) -> set[str]:
    """The paths of the variables a reader holds once read whole: the index
    coordinates and bounds variables (what an open through xarray reads) of at most
    :data:`HELD_BYTES` decoded."""
    return {
        path
        for path, var, opened in _kinds(metadata)
        if opened and decoded_bytes(var) <= HELD_BYTES
    }


def _kinds(metadata: DatasetMeta) -> list[tuple[str, VariableMeta, bool]]:
    """Every variable of ``metadata`` with its path, in variable number order, and
    whether it is an index coordinate or a bounds variable."""
    found = []
    for path, group in metadata.walk():
        bounds = bounds_names(group)
        for var in group.variables:
            opened = is_index_coordinate(var) or var.name in bounds
            found.append((f"{path}/{var.name}" if path else var.name, var, opened))
    return found


def placement_order(metadata: DatasetMeta) -> list[tuple[str, VariableMeta]]:
    """Every variable of ``metadata`` in the order a new file places its chunks: the
    :func:`front_variables`, index coordinates and bounds variables first (what every
    open through xarray reads), then the other small ones, then all others, each in
    variable number order."""
    kinds = _kinds(metadata)
    small = {path for path, _ in front_variables(metadata)}
    opened = [(path, var) for path, var, index in kinds if index]
    rest = [(path, var) for path, var, index in kinds if not index]
    return (
        opened
        + [(path, var) for path, var in rest if path in small]
        + [(path, var) for path, var in rest if path not in small]
    )
