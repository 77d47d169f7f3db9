"""The compiled loops of :mod:`.tiles`; importing this module needs numba.

Kept apart so that ``import xarray_hurray`` never pays numba's import: :mod:`.tiles`
imports it on the first permutation.

A tile is an aligned box of the chunk (8 x 8, 4 x 4 x 4, ...) whose elements fill
one run of the buffer in one of a few *patterns*.  The loops move a whole tile at
a time: its rows (the box's runs along the last axis, contiguous in the chunk) are
loaded as short vectors, joined into one vector of the tile, permuted by the
tile's pattern and stored as one run; decoding does the reverse.  The permutation
is an LLVM ``shufflevector`` whose mask must be a compile-time constant, so each
set of patterns gets its own compiled loops (:func:`kernels`), with the patterns
in their description, a string that numba sees as a literal.  LLVM lowers such a
shuffle to the target's vector permutes (one ``vpermb``/``vpermt2w`` per 64 bytes
with AVX-512, a few ``pshufb`` with SSSE3/AVX2, scalar moves elsewhere): whatever
the target, the result is the permutation itself, element for element.

``cache=True`` stores the machine code beside this file, keyed by the patterns
(the closure's constant), so each pattern set compiles once per machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

Loop = Callable[[np.ndarray, np.ndarray, tuple[int, ...], np.ndarray], None]
"""A compiled loop: source units, tile table (runs, bases, pattern ids), strides, out."""


def describe(width: int, sides: Sequence[int], patterns: np.ndarray) -> str:
    """The text :func:`kernels` compiles from: element width in bytes, tile sides,
    then one line of pattern per pattern (``patterns[p, j]``: the tile's row-major
    index of the element at position ``j`` of the tile's run)."""
    lines = [f"{width} " + " ".join(map(str, sides))]
    lines += [" ".join(map(str, row)) for row in patterns.tolist()]
    return "\n".join(lines)


def _parse(text: str) -> tuple[int, list[int], list[list[int]]]:
    """``(width, sides, patterns)`` of a :func:`describe` text."""
    head, *rows = text.split("\n")
    width, *sides = (int(v) for v in head.split())
    return width, sides, [[int(v) for v in row.split()] for row in rows]


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
) -> list[ir.Value]:
    """Pointers to each row of the tile at flat index ``base``, typed as row vectors."""
    data = context.make_array(arraytype)(context, builder, value=array).data
    row = ir.VectorType(data.type.pointee, sides[-1]).as_pointer()
    steps = [builder.extract_value(strides, i) for i in range(len(stridestype))]
    addresses = []
    for start in _row_starts(sides):
        offset = base
        for coordinate, step in zip(start, steps, strict=True):
            if coordinate:
                offset = builder.add(offset, builder.mul(step, ir.Constant(step.type, coordinate)))
        addresses.append(builder.bitcast(builder.gep(data, [offset]), row))
    return addresses


def _permuted(
    builder: ir.IRBuilder, vector: ir.Value, pattern: ir.Value, masks: list[list[int]]
) -> ir.Value:
    """``vector`` permuted by ``masks[pattern]`` (the result's element ``j`` is
    ``vector[masks[pattern][j]]``), through a switch when there are several."""
    undefined = ir.Constant(vector.type, None)
    if len(masks) == 1:
        return builder.shuffle_vector(vector, undefined, _mask(masks[0]))
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
    phi = builder.phi(vector.type)
    phi.add_incoming(undefined, start)  # no pattern of that number: never taken
    for value, block in results:
        phi.add_incoming(value, block)
    return phi


@intrinsic
def _gather_tile(
    typingctx: Any,
    values: Any,
    base: Any,
    strides: Any,
    out: Any,
    at: Any,
    pattern: Any,
    text: Any,
) -> Any:
    """``out[at + j] = tile[patterns[pattern][j]]``: the tile at ``values[base]`` (its
    rows ``strides`` apart) moved to its run at ``out[at]``."""
    if not isinstance(text, types.StringLiteral):
        return None
    _, sides, patterns = _parse(text.literal_value)
    signature = types.void(values, base, strides, out, at, pattern, text)

    def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> Any:
        values_v, base_v, strides_v, out_v, at_v, pattern_v, _ = args
        rows = _row_addresses(
            context, builder, values_v, sig.args[0], base_v, strides_v, sig.args[2], sides
        )
        tile = _join(builder, [builder.load(row, align=1) for row in rows])
        data = context.make_array(sig.args[3])(context, builder, value=out_v).data
        target = builder.bitcast(builder.gep(data, [at_v]), tile.type.as_pointer())
        builder.store(_permuted(builder, tile, pattern_v, patterns), target, align=1)
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def _scatter_tile(
    typingctx: Any,
    buffer: Any,
    at: Any,
    strides: Any,
    out: Any,
    base: Any,
    pattern: Any,
    text: Any,
) -> Any:
    """The inverse of :func:`_gather_tile`: the run at ``buffer[at]`` put back as the
    tile at ``out[base]``."""
    if not isinstance(text, types.StringLiteral):
        return None
    _, sides, patterns = _parse(text.literal_value)
    inverses = [np.argsort(p).tolist() for p in patterns]
    signature = types.void(buffer, at, strides, out, base, pattern, text)

    def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> Any:
        buffer_v, at_v, strides_v, out_v, base_v, pattern_v, _ = args
        data = context.make_array(sig.args[0])(context, builder, value=buffer_v).data
        size = len(inverses[0])
        run_type = ir.VectorType(data.type.pointee, size)
        run = builder.load(
            builder.bitcast(builder.gep(data, [at_v]), run_type.as_pointer()), align=1
        )
        rows = _row_addresses(
            context, builder, out_v, sig.args[3], base_v, strides_v, sig.args[2], sides
        )
        length = sides[-1]
        tile = _permuted(builder, run, pattern_v, inverses)
        for r, row in enumerate(rows):
            part = _mask(range(r * length, (r + 1) * length))
            builder.store(builder.shuffle_vector(tile, tile, part), row, align=1)
        return context.get_dummy_value()

    return signature, codegen


@lru_cache(maxsize=64)
def kernels(text: str) -> tuple[Loop, Loop]:
    """The gather and scatter loops for the tiles :func:`describe` gave ``text``.

    ``gather(values, table, strides, out)`` sets the run ``out[r*T : (r+1)*T]``,
    ``r = table[0, i]``, from the tile at ``values[table[1, i]]`` in pattern
    ``table[2, i]``, for every ``i``; ``scatter(buffer, table, strides, out)`` is its
    inverse.  ``strides`` are the chunk's element strides of all axes but the last;
    ``values``, ``buffer`` and ``out`` are unsigned integers of the described width.
    """
    size = int(np.prod(_parse(text)[1]))

    @numba.njit(nogil=True, cache=True)
    def gather(
        values: np.ndarray, table: np.ndarray, strides: tuple[int, ...], out: np.ndarray
    ) -> None:
        runs, bases, ids = table[0], table[1], table[2]
        for i in range(runs.size):
            # (numba supplies the intrinsic's typing context: mypy sees one argument short)
            _gather_tile(values, bases[i], strides, out, runs[i] * size, ids[i], text)  # type: ignore[call-arg]

    @numba.njit(nogil=True, cache=True)
    def scatter(
        buffer: np.ndarray, table: np.ndarray, strides: tuple[int, ...], out: np.ndarray
    ) -> None:
        runs, bases, ids = table[0], table[1], table[2]
        for i in range(runs.size):
            _scatter_tile(buffer, runs[i] * size, strides, out, bases[i], ids[i], text)  # type: ignore[call-arg]

    return gather, scatter
