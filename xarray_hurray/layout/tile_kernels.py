"""The compiled loops of :mod:`.tiles`; importing this module needs numba.

Kept apart so that ``import xarray_hurray`` never pays numba's import: :mod:`.tiles`
imports it on the first permutation.

A tile is an aligned box of the chunk (8 x 8, 4 x 4 x 4, ...) whose elements fill
one run of the buffer in one of a few *patterns*.  The loops move a whole tile at a
time: its rows (the box's runs along the last axis, contiguous in the chunk) are
loaded as short vectors, joined into one vector of the tile, permuted by the tile's
pattern and stored as one run; decoding does the reverse.  Where a box's rows are
short, a step moves a *group* of boxes side by side along the last axis (consecutive
in the tiles' table), loading or storing their rows together; a few passes of
two-source interleaving shuffles take the boxes apart from their rows, or put them
back, before each is permuted on its own (one permutation picking each box out of
all the step's rows at once was slower: 512 bytes of input for eight 4 x 4 x 4
boxes of bytes).  The permutation is an
LLVM ``shufflevector`` whose mask must be a compile-time constant, so each set of
patterns, element width and group gets its own compiled loops (:func:`kernels`),
described by a string that numba sees as a literal.  LLVM lowers such a shuffle to
the target's vector permutes (one ``vpermb``/``vpermt2w`` per 64 bytes with
AVX-512, a few ``pshufb`` with SSSE3/AVX2, scalar moves elsewhere): whatever the
target, the result is the permutation itself, element for element.  Boxes of 64
bytes in several patterns are the exception where the processor permutes bytes by
a vector index (:func:`can_look_up`): their mask is loaded from a table and applied
by ``vpermb``, instead of a branch per pattern.

``cache=True`` stores the machine code beside this file, keyed by that description
(the closure's constant), so each compiles once per machine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numba
import numpy as np
from llvmlite import binding, ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

Loop = Callable[[np.ndarray, np.ndarray, tuple[int, ...], np.ndarray], None]
"""A compiled loop: source units, tile table (runs, bases, pattern ids), strides, out."""


def describe(
    width: int, sides: Sequence[int], patterns: np.ndarray, group: int, lookup: bool
) -> str:
    """The text :func:`kernels` compiles from: element width in bytes, boxes per
    step, whether a box's permutation is looked up (:func:`can_look_up`), tile sides,
    then one line per pattern (``patterns[p, j]``: the tile's row-major index of the
    element at position ``j`` of the tile's run)."""
    lines = [f"{width} {group} {int(lookup)} " + " ".join(map(str, sides))]
    lines += [" ".join(map(str, row)) for row in patterns.tolist()]
    return "\n".join(lines)


def _parse(text: str) -> tuple[int, int, bool, list[int], list[list[int]]]:
    """``(width, group, lookup, sides, patterns)`` of a :func:`describe` text."""
    head, *rows = text.split("\n")
    width, group, lookup, *sides = (int(v) for v in head.split())
    return width, group, bool(lookup), sides, [[int(v) for v in row.split()] for row in rows]


PERMUTE_BYTES = "llvm.x86.avx512.permvar.qi.512"
"""x86's ``vpermb`` on 64 bytes (AVX-512 VBMI): byte ``j`` of the result is byte
``index[j]`` of the source, the index a vector like any other."""


@lru_cache(maxsize=1)
def _host_permutes_bytes() -> bool:
    """Whether numba compiles for this machine's own processor and it has ``vpermb``."""
    # numba's settings (NUMBA_CPU_NAME, NUMBA_CPU_FEATURES: a portable target asked
    # for) are set from the environment at import, unknown to type checkers
    config = numba.config
    if getattr(config, "CPU_NAME", None) or getattr(config, "CPU_FEATURES", None):
        return False
    try:
        features = binding.get_host_cpu_features()
    except RuntimeError:  # llvmlite could not read them on this platform
        return False
    return bool(features.get("avx512vbmi"))


def can_look_up(width: int, patterns: np.ndarray) -> bool:
    """Whether the loops select a box's permutation by loading its mask from a table
    and permuting with ``vpermb`` rather than by a branch per pattern: for several
    patterns of 64 bytes, where the processor has the instruction.  The branch,
    mispredicted among the 24 patterns of 3-D Hilbert boxes, cost more than half the
    time of their loops (docs/benchmarks.md)."""
    return len(patterns) > 1 and width * patterns.shape[1] == 64 and _host_permutes_bytes()


def _row_starts(sides: Sequence[int]) -> list[list[int]]:
    """The tile coordinates (all axes but the last) of each row, in row-major order."""
    leading = sides[:-1]
    return [list(c) for c in np.ndindex(*leading)] if leading else [[]]


def _join(builder: ir.IRBuilder, vectors: list[ir.Value]) -> ir.Value:
    """One vector of ``vectors`` end to end (their count is a power of two)."""
    while len(vectors) > 1:
        count = vectors[0].type.count
        both = ir.Constant(ir.VectorType(ir.IntType(32), 2 * count), list(range(2 * count)))
        vectors = [
            builder.shuffle_vector(vectors[i], vectors[i + 1], both)
            for i in range(0, len(vectors), 2)
        ]
    return vectors[0]


def _interleave(builder: ir.IRBuilder, vectors: list[ir.Value], unit: int) -> ir.Value:
    """The rows of boxes side by side: ``vectors`` (a power of two of them) are boxes
    of rows of ``unit`` elements; the result holds row ``r`` of every box, box after
    box, then row ``r + 1``...  Built by pairs, each pass interleaving the units of
    two neighbours and doubling the unit, so that each shuffle takes two sources."""
    while len(vectors) > 1:
        count = vectors[0].type.count
        mask = [
            half * count + u * unit + k
            for u in range(count // unit)
            for half in (0, 1)
            for k in range(unit)
        ]
        vectors = [
            builder.shuffle_vector(vectors[i], vectors[i + 1], _mask(mask))
            for i in range(0, len(vectors), 2)
        ]
        unit *= 2
    return vectors[0]


def _deinterleave(builder: ir.IRBuilder, rows: list[ir.Value], group: int) -> list[ir.Value]:
    """The inverse of :func:`_interleave`: ``rows`` each hold a row of ``group``
    boxes side by side; the result is the boxes, each its rows end to end.  Built
    by halves, each pass splitting every unit of a vector in two."""
    vectors = [_join(builder, rows)]
    unit = rows[0].type.count
    while len(vectors) < group:
        count, half = vectors[0].type.count, unit // 2
        masks = [
            [u * unit + side * half + k for u in range(count // unit) for k in range(half)]
            for side in (0, 1)
        ]
        vectors = [
            builder.shuffle_vector(vector, ir.Constant(vector.type, None), _mask(mask))
            for vector in vectors
            for mask in masks
        ]
        unit = half
    return vectors


def _mask(indices: Sequence[int]) -> ir.Constant:
    return ir.Constant(ir.VectorType(ir.IntType(32), len(indices)), list(indices))


def _row_addresses(
    context: Any,
    builder: ir.IRBuilder,
    array: ir.Value,
    arraytype: types.Array,
    base: ir.Value,
    strides: ir.Value,
    stridestype: types.BaseTuple,
    sides: list[int],
    group: int,
) -> list[ir.Value]:
    """Pointers to each row of the ``group`` boxes side by side from flat index
    ``base``, typed as vectors of their rows together."""
    data = context.make_array(arraytype)(context, builder, value=array).data
    row = ir.VectorType(data.type.pointee, group * sides[-1]).as_pointer()
    steps = [builder.extract_value(strides, i) for i in range(len(stridestype))]
    addresses = []
    for start in _row_starts(sides):
        offset = base
        for coordinate, step in zip(start, steps, strict=True):
            if coordinate:
                offset = builder.add(offset, builder.mul(step, ir.Constant(step.type, coordinate)))
        addresses.append(builder.bitcast(builder.gep(data, [offset]), row))
    return addresses


def _entry(
    context: Any, builder: ir.IRBuilder, table: ir.Value, tabletype: Any, row: int, index: Any
) -> ir.Value:
    """``table[row, index]``: row 0 the tiles' runs, 1 their bases, 2 their patterns."""
    array = context.make_array(tabletype)(context, builder, value=table)
    # numba's own indexing of an array of any layout (cgutils is unannotated)
    where = cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
        context, builder, tabletype, array, [ir.Constant(index.type, row), index]
    )
    return builder.load(where)


def _looked_up(
    builder: ir.IRBuilder, vector: ir.Value, pattern: ir.Value, masks: list[list[int]]
) -> ir.Value:
    """``vector`` (64 bytes) permuted by ``masks[pattern]`` through ``vpermb``, the
    masks a constant table of the module."""
    byte = ir.IntType(8)
    row = ir.VectorType(byte, 64)
    table_type = ir.ArrayType(row, len(masks))
    module = builder.module
    # one table per set of masks in the module, however many boxes a step moves
    name = "permute_masks_" + hashlib.sha256(repr(masks).encode()).hexdigest()[:16]
    table = module.globals.get(name)
    if table is None:
        table = ir.GlobalVariable(module, table_type, name)
        table.global_constant = True
        table.linkage = "internal"
        table.initializer = ir.Constant(table_type, [ir.Constant(row, m) for m in masks])
    index = builder.load(builder.gep(table, [ir.Constant(pattern.type, 0), pattern]), align=1)
    function = module.globals.get(PERMUTE_BYTES)
    if function is None:
        function = ir.Function(module, ir.FunctionType(row, [row, row]), PERMUTE_BYTES)
    result = builder.call(function, [builder.bitcast(vector, row), index])
    return builder.bitcast(result, vector.type)


def _permuted(
    builder: ir.IRBuilder,
    vector: ir.Value,
    pattern: ir.Value,
    masks: list[list[int]],
    lookup: bool,
) -> ir.Value:
    """``vector`` permuted by ``masks[pattern]`` (the result's element ``j`` is
    ``vector[masks[pattern][j]]``): looked up (:func:`can_look_up`), or through a
    switch when there are several."""
    undefined = ir.Constant(vector.type, None)
    if len(masks) == 1:
        return builder.shuffle_vector(vector, undefined, _mask(masks[0]))
    if lookup:
        return _looked_up(builder, vector, pattern, masks)
    start = builder.block
    done = builder.append_basic_block("done")
    switch = builder.switch(pattern, done)
    results = []
    for p, mask in enumerate(masks):
        block = builder.append_basic_block(f"pattern{p}")
        switch.add_case(p, block)
        builder.position_at_end(block)
        results.append((builder.shuffle_vector(vector, undefined, _mask(mask)), block))
        builder.branch(done)
    builder.position_at_end(done)
    result = ir.VectorType(vector.type.element, len(masks[0]))
    phi = builder.phi(result)
    phi.add_incoming(ir.Constant(result, None), start)  # no such pattern: never taken
    for value, block in results:
        phi.add_incoming(value, block)
    return phi


@intrinsic
def _gather_tiles(
    typingctx: Any, values: Any, table: Any, first: Any, strides: Any, out: Any, text: Any
) -> Any:
    """Tiles ``first`` to ``first + group - 1`` of ``table`` (boxes side by side along
    the last axis) gathered: each box permuted into its run of ``out``."""
    if not isinstance(text, types.StringLiteral):
        return None
    _, group, lookup, sides, patterns = _parse(text.literal_value)
    size = len(patterns[0])
    signature = types.void(values, table, first, strides, out, text)

    def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> Any:
        values_v, table_v, first_v, strides_v, out_v, _ = args
        base = _entry(context, builder, table_v, sig.args[1], 1, first_v)
        rows = _row_addresses(
            context, builder, values_v, sig.args[0], base, strides_v, sig.args[3], sides, group
        )
        boxes = _deinterleave(builder, [builder.load(row, align=1) for row in rows], group)
        data = context.make_array(sig.args[4])(context, builder, value=out_v).data
        for g in range(group):
            index = builder.add(first_v, ir.Constant(first_v.type, g))
            run = _entry(context, builder, table_v, sig.args[1], 0, index)
            pattern = _entry(context, builder, table_v, sig.args[1], 2, index)
            at = builder.mul(run, ir.Constant(run.type, size))
            target = builder.bitcast(
                builder.gep(data, [at]), ir.VectorType(data.type.pointee, size).as_pointer()
            )
            builder.store(_permuted(builder, boxes[g], pattern, patterns, lookup), target, align=1)
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def _scatter_tiles(
    typingctx: Any, buffer: Any, table: Any, first: Any, strides: Any, out: Any, text: Any
) -> Any:
    """The inverse of :func:`_gather_tiles`: the runs of tiles ``first`` to
    ``first + group - 1`` put back as their boxes in ``out``."""
    if not isinstance(text, types.StringLiteral):
        return None
    _, group, lookup, sides, patterns = _parse(text.literal_value)
    inverses = [np.argsort(p).tolist() for p in patterns]
    size, length = len(patterns[0]), sides[-1]
    signature = types.void(buffer, table, first, strides, out, text)

    def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> Any:
        buffer_v, table_v, first_v, strides_v, out_v, _ = args
        data = context.make_array(sig.args[0])(context, builder, value=buffer_v).data
        run_type = ir.VectorType(data.type.pointee, size)
        boxes = []
        for g in range(group):
            index = builder.add(first_v, ir.Constant(first_v.type, g))
            run = _entry(context, builder, table_v, sig.args[1], 0, index)
            pattern = _entry(context, builder, table_v, sig.args[1], 2, index)
            at = builder.mul(run, ir.Constant(run.type, size))
            loaded = builder.load(
                builder.bitcast(builder.gep(data, [at]), run_type.as_pointer()), align=1
            )
            boxes.append(_permuted(builder, loaded, pattern, inverses, lookup))
        joined = _interleave(builder, boxes, length)
        base = _entry(context, builder, table_v, sig.args[1], 1, first_v)
        rows = _row_addresses(
            context, builder, out_v, sig.args[4], base, strides_v, sig.args[3], sides, group
        )
        span = group * length
        for r, row in enumerate(rows):
            part = list(range(r * span, (r + 1) * span))
            builder.store(builder.shuffle_vector(joined, joined, _mask(part)), row, align=1)
        return context.get_dummy_value()

    return signature, codegen


@lru_cache(maxsize=64)
def kernels(text: str) -> tuple[Loop, Loop]:
    """The gather and scatter loops for the tiles :func:`describe` gave ``text``.

    ``gather(values, table, strides, out)`` sets the run ``out[r*T : (r+1)*T]``,
    ``r = table[0, i]``, from the box at ``values[table[1, i]]`` in pattern
    ``table[2, i]``, for every ``i``; ``scatter(buffer, table, strides, out)`` is its
    inverse.  ``strides`` are the chunk's element strides of all axes but the last;
    ``values``, ``buffer`` and ``out`` are unsigned integers of the described width.
    """
    group = _parse(text)[1]

    @numba.njit(nogil=True, cache=True)
    def gather(
        values: np.ndarray, table: np.ndarray, strides: tuple[int, ...], out: np.ndarray
    ) -> None:
        for first in range(0, table.shape[1], group):
            # (numba supplies the intrinsic's typing context: mypy sees one argument short)
            _gather_tiles(values, table, first, strides, out, text)  # type: ignore[call-arg]

    @numba.njit(nogil=True, cache=True)
    def scatter(
        buffer: np.ndarray, table: np.ndarray, strides: tuple[int, ...], out: np.ndarray
    ) -> None:
        for first in range(0, table.shape[1], group):
            _scatter_tiles(buffer, table, first, strides, out, text)  # type: ignore[call-arg]

    return gather, scatter
