"""The compiled loops of :mod:`.tiles`; importing this module needs numba.

Kept apart so that ``import xarray_hurray`` never pays numba's import: :mod:`.tiles`
imports it on the first permutation.  It depends on :mod:`.tiles` only through what
the two share (:mod:`.tile_interface`): the loops are an optional accelerator, and
:mod:`.tiles` falls back to the numpy gather wherever they fail.

A tile is an aligned box of the chunk (8 x 8, 4 x 4 x 4, ...) whose elements fill
one run of the buffer in one of a few *patterns*.  The loops move a whole tile at a
time: its rows (the box's runs along the last axis, contiguous in the chunk) are
loaded as short vectors, joined into one vector of the tile, permuted by the tile's
pattern and stored as one run; decoding does the reverse.  Where a box's rows are
short, a step moves a *group* of boxes side by side along the last axis (consecutive
in the tiles' runs), loading or storing their rows together; a few passes of
two-source shuffles, a register at a time (:func:`_passes`), take the boxes apart
from their rows, or put them back, before each is permuted on its own (one
permutation picking each box out of all the step's rows at once was slower: 512
bytes of input for eight 4 x 4 x 4 boxes of bytes).  The permutation is an
LLVM ``shufflevector`` whose mask must be a compile-time constant, so each set of
patterns, element width and group gets its own compiled loops (:func:`kernels`),
described by a string that numba sees as a literal.  LLVM lowers such a shuffle to
the target's vector permutes (one ``vpermb``/``vpermt2w`` per 64 bytes with
AVX-512, a few ``pshufb`` with SSSE3/AVX2, scalar moves elsewhere): whatever the
target, the result is the permutation itself, element for element.  Where the
processor permutes a box by a vector index (:data:`PERMUTES`, :func:`can_look_up`),
the mask is loaded at run time from the tiles' table of masks instead, whatever the
number of patterns, and the loops do not depend on the patterns at all.

``cache=True`` stores the machine code beside this file, keyed by that description
(the closure's constant), so each compiles once per machine.
"""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import numba
import numpy as np
from llvmlite import binding, ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .tile_interface import ALIGNMENT, MAX_LOOKED_UP, PATTERN_BITS, Loop


class Description(NamedTuple):
    """What a set of compiled loops is compiled for (:func:`kernels`)."""

    width: int
    """Element width in bytes."""
    group: int
    """Boxes side by side that a step moves."""
    lookup: bool
    """Whether a box's mask is looked up at run time (:func:`can_look_up`)."""
    stream: bool
    """Whether gather stores its runs past the caches (:data:`.tiles.STREAM_BYTES`)."""
    apart: bool
    """Whether scatter keeps its passes (:func:`_passes`) apart (:func:`_opaque`):
    where numba compiles for a processor with AVX-512 (:func:`can_keep_apart`)."""
    sides: tuple[int, ...]
    """The box's sides."""
    patterns: tuple[tuple[int, ...], ...]
    """Unless looked up, the patterns compiled in (``patterns[p][j]``: the box's
    row-major index of the element at position ``j`` of a run in pattern ``p``);
    looked-up masks come at run time, so such loops serve every set of patterns."""


def describe(
    width: int,
    sides: Sequence[int],
    patterns: np.ndarray,
    group: int,
    lookup: bool,
    stream: bool,
    apart: bool,
) -> str:
    """The text :func:`kernels` compiles from: the fields of a :class:`Description`
    as a Python literal (numba sees the text as a constant, and the loops compile
    once for each).  ``lookup`` and ``apart`` only where the processor has what they
    use (:func:`can_look_up`, :func:`can_keep_apart`)."""
    compiled = () if lookup else tuple(map(tuple, patterns.tolist()))
    described = Description(width, group, lookup, stream, apart, tuple(sides), compiled)
    return repr(tuple(described))


def _parse(text: str) -> Description:
    """The :class:`Description` of a :func:`describe` text."""
    return Description(*ast.literal_eval(text))


PERMUTES = {
    (256, 1): ("llvm.x86.avx512.vpermi2var.qi.512", ("avx512vbmi",)),
    (64, 1): ("llvm.x86.avx512.permvar.qi.512", ("avx512vbmi",)),
    (64, 2): ("llvm.x86.avx512.vpermi2var.hi.512", ("avx512bw",)),
    (16, 1): ("llvm.x86.ssse3.pshuf.b.128", ("ssse3",)),
    (16, 2): ("llvm.x86.avx512.permvar.hi.256", ("avx512bw", "avx512vl")),
    (16, 4): ("llvm.x86.avx512.permvar.si.512", ("avx512f",)),
    (16, 8): ("llvm.x86.avx512.vpermi2var.q.512", ("avx512f",)),
}
"""Per box of (elements, element width in bytes), x86's permute by a vector index and
the processor features it needs.  A box of up to 64 bytes is one register and one
permute (``vpermb``, ``pshufb``, ``vpermw``, ``vpermd``): element ``j`` of the result
is element ``index[j]`` of the box.  A box of 128 bytes is two registers, and each
half of the result is a two-source permute of both (``vpermi2w``, ``vpermi2q``):
element ``index[j]`` of the two end to end.  A box of 256 bytes is four registers:
each register of the result is a two-source permute of each pair (``vpermi2b``), the
index's top bit picking between the two.  Boxes of 64 elements of 4 or 8 bytes
would need a permute per pair of their 4 or 8 registers and selects among them: no
faster for 4 bytes, slower for 8 (32^3 float64 gathered at 0.52-0.65x of a copy that
way, 0.77-0.80x through the compiled shuffles), so they keep the compiled shuffles."""


@lru_cache(maxsize=1)
def _host_features() -> frozenset[str]:
    """The processor features numba compiles for, when it compiles for this machine's
    own processor (empty when a portable target is asked for)."""
    # numba's settings (NUMBA_CPU_NAME, NUMBA_CPU_FEATURES: a portable target asked
    # for) are set from the environment at import, unknown to type checkers
    config = numba.config
    if getattr(config, "CPU_NAME", None) or getattr(config, "CPU_FEATURES", None):
        return frozenset()
    try:
        features = binding.get_host_cpu_features()
    except RuntimeError:  # llvmlite could not read them on this platform
        return frozenset()
    return frozenset(name for name, present in features.items() if present)


def can_permute(elements: int, width: int) -> bool:
    """Whether this processor permutes a box of ``elements`` elements of ``width``
    bytes by a vector index (:data:`PERMUTES`)."""
    permute = PERMUTES.get((elements, width))
    return permute is not None and set(permute[1]) <= _host_features()


def can_keep_apart() -> bool:
    """Whether scatter's passes can be kept apart (:attr:`Description.apart`): the
    processor numba compiles for has AVX-512's registers of 64 bytes."""
    return "avx512f" in _host_features()


def can_look_up(width: int, patterns: np.ndarray) -> bool:
    """Whether the loops permute a box by a vector index loaded at run time (its
    pattern's row of the masks table) rather than by a shuffle compiled per pattern:
    for the boxes of :data:`PERMUTES`, where the processor has their permute.  Any
    number of patterns can be looked up (the 2 x 2 x 2 x 2 boxes of 4-D Hilbert
    curves turn 106 ways at order 3, 185 at order 4), while a branch per pattern is
    compiled for at most :data:`.tiles.MAX_PATTERNS`.

    It is faster both ways round.  With several patterns, a branch per pattern is
    mispredicted among the 24 patterns of 3-D Hilbert boxes and cost more than half
    the time of their loops.  With one, LLVM merges the constant shuffle with the ones
    that take side-by-side boxes apart into a longer sequence: 64^3 uint8 Morton
    gathered in 15 us through it and 11 us through the looked-up index (a copy: 8 us).
    """
    return can_permute(patterns.shape[1], width)


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


Unit = tuple[int, int]
"""A row of a box in a step: (the box's place among the step's boxes side by side,
the row's place in the box).  Its elements are contiguous in the chunk."""

Arrangement = list[list[Unit]]
"""The units each of a list of vectors holds, in order."""


def _passes(rows: int, group: int, length: int, lanes: int) -> list[Arrangement]:
    """How a step's ``rows`` rows become its ``group`` boxes (rows of ``length``
    elements) through registers of ``lanes`` elements: the registers' arrangements
    before the first pass and after each.

    Before, each register holds a few consecutive rows of the step (each the row of
    every box).  A pass takes each two registers that hold the same boxes, the
    second the rows after the first's, and makes of them two: the first half of
    their boxes, with the rows of both, then the second half.  So each register a
    pass makes is one two-source permute.  The passes end when a register holds one
    box, or all the rows of its boxes.  (Passes over the whole step as one long
    vector, left to LLVM to cut into registers, spilled them to memory where boxes
    are 256 bytes: 32^4 bytes gathered at 0.48-0.56x of a copy that way, 0.52-0.65x
    by registers.)
    """
    per = max(min(lanes // (group * length), rows), 1)  # rows per register
    current = [
        [(g, r) for r in range(s, s + per) for g in range(group)] for s in range(0, rows, per)
    ]
    arrangements = [current]
    # (sorted, the registers of the same boxes are neighbours)
    while (
        len(current) > 1
        and len(_boxes(current[0])) > 1
        and _boxes(current[0]) == _boxes(current[1])
    ):
        after = []
        for a in range(0, len(current), 2):
            units = current[a] + current[a + 1]
            boxes = _boxes(current[a])
            for half in (boxes[: len(boxes) // 2], boxes[len(boxes) // 2 :]):
                after.append(sorted(unit for unit in units if unit[0] in half))
        # the registers of the same boxes next to each other, in the order of their rows
        current = sorted(after)
        arrangements.append(current)
    return arrangements


def _boxes(units: list[Unit]) -> list[int]:
    """The boxes of which ``units`` hold rows, in order."""
    return sorted({box for box, _ in units})


def _chain(rows: int, group: int, length: int, width: int) -> list[Arrangement]:
    """The arrangements from a step's rows (vectors of a row of each box) to its boxes
    (vectors of a box's rows) for elements of ``width`` bytes: the registers'
    arrangements of :func:`_passes` between."""
    by_rows = [[(g, r) for g in range(group)] for r in range(rows)]
    by_boxes = [[(g, r) for r in range(rows)] for g in range(group)]
    return [by_rows, *_passes(rows, group, length, 64 // width), by_boxes]


def _regroup(
    builder: ir.IRBuilder,
    vectors: list[ir.Value],
    chain: list[Arrangement],
    length: int,
    apart: bool,
) -> list[ir.Value]:
    """``vectors``, holding the units of arrangement ``chain[0]``, rearranged into
    vectors holding those of ``chain[-1]`` through each arrangement between;
    ``apart``: the registers between are kept apart (:func:`_opaque`)."""
    for n, (before, after) in enumerate(itertools.pairwise(chain)):
        vectors = [_pick(builder, vectors, before, wanted, length) for wanted in after]
        if apart and 0 < n < len(chain) - 2:
            vectors = [_opaque(builder, vector) for vector in vectors]
    return vectors


def _pick(
    builder: ir.IRBuilder,
    vectors: list[ir.Value],
    arrangement: Arrangement,
    wanted: list[Unit],
    length: int,
) -> ir.Value:
    """The units ``wanted``, in order, from ``vectors`` that hold those of
    ``arrangement`` (units of ``length`` elements): one shuffle of the vectors that
    hold them, joined where they are more than two."""
    where = {
        unit: (v, slot) for v, units in enumerate(arrangement) for slot, unit in enumerate(units)
    }
    sources = sorted({where[unit][0] for unit in wanted})
    size = len(arrangement[sources[0]]) * length  # the vectors' elements (all alike)
    mask = [
        sources.index(where[unit][0]) * size + where[unit][1] * length + k
        for unit in wanted
        for k in range(length)
    ]
    if len(sources) == 2:
        return builder.shuffle_vector(vectors[sources[0]], vectors[sources[1]], _mask(mask))
    joined = _join(builder, [vectors[v] for v in sources])
    return builder.shuffle_vector(joined, ir.Constant(joined.type, None), _mask(mask))


def _opaque(builder: ir.IRBuilder, vector: ir.Value) -> ir.Value:
    """``vector`` as it is, hidden from LLVM's combining of shuffles: each register
    of it passes through an empty assembly statement.

    Left to combine them, LLVM fuses scatter's passes (:func:`_passes`) into one
    shuffle per output register, each built from every box of the step: for eight
    4 x 4 x 4 boxes of bytes, 48 two-source permutes where the passes take 24.
    Kept apart, 64^3 uint8 scattered in 12.5 us instead of 15.7 us (a copy: 8 us).
    The statement names x86's vector registers, 64 bytes wide with AVX-512
    (:attr:`Description.apart`).
    """
    element, count = vector.type.element, vector.type.count
    lanes = min(count, 512 // element.width)  # elements of one 64-byte register
    register = ir.VectorType(element, lanes)
    barrier = ir.FunctionType(register, [register])
    undefined = ir.Constant(vector.type, None)
    parts = [
        builder.shuffle_vector(vector, undefined, _mask(range(r, r + lanes)))
        for r in range(0, count, lanes)
    ]
    # "=v,0": the output in a vector register, the same one as the input
    return _join(builder, [builder.asm(barrier, "", "=v,0", [part], False) for part in parts])


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
    sides: Sequence[int],
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


def _item(
    context: Any, builder: ir.IRBuilder, array: ir.Value, arraytype: Any, index: Any
) -> ir.Value:
    """``array[index]`` (an array of non-negative integers of 4 or 8 bytes) as a
    64-bit integer."""
    data = context.make_array(arraytype)(context, builder, value=array)
    # numba's own indexing of an array of any layout (cgutils is unannotated)
    where = cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
        context, builder, arraytype, data, [index]
    )
    value = builder.load(where)
    return value if value.type.width == 64 else builder.zext(value, ir.IntType(64))


def _tile(
    context: Any, builder: ir.IRBuilder, runs: ir.Value, runstype: Any, index: Any
) -> tuple[ir.Value, ir.Value]:
    """The run and the pattern of tile ``index`` (:attr:`.tiles.Tiles.runs`)."""
    word = _item(context, builder, runs, runstype, index)
    pattern = builder.and_(word, ir.Constant(word.type, MAX_LOOKED_UP - 1))
    return builder.lshr(word, ir.Constant(word.type, PATTERN_BITS)), pattern


def _looked_up(builder: ir.IRBuilder, vector: ir.Value, index_at: ir.Value) -> ir.Value:
    """``vector`` (a box in :data:`PERMUTES`) permuted by as many indices at
    ``index_at`` (elements of its width): element ``j`` of the result is element
    ``index[j]`` of ``vector``."""
    element, count = vector.type.element, vector.type.count
    width = element.width // 8
    lanes = min(count, 64 // width)  # elements in one register
    register = ir.VectorType(element, lanes)
    registers = count // lanes  # 1, 2 or 4
    name = PERMUTES[count, width][0]
    function = builder.module.globals.get(name)
    if function is None:
        arguments = [register] * (2 if registers == 1 else 3)
        function = ir.Function(builder.module, ir.FunctionType(register, arguments), name)

    def indices(at: int) -> ir.Value:
        """The register of indices from the ``at``-th."""
        where = builder.gep(index_at, [ir.Constant(ir.IntType(64), at)])
        return builder.load(builder.bitcast(where, register.as_pointer()), align=1)

    if registers == 1:
        return builder.call(function, [vector, indices(0)])
    # each register of the result picks from every register of the box: from each
    # pair by a two-source permute, then (four registers) from the pair that the
    # index's top bit names: a byte's index of 128 or more is negative
    undefined = ir.Constant(vector.type, None)
    parts = [
        builder.shuffle_vector(vector, undefined, _mask(range(r * lanes, (r + 1) * lanes)))
        for r in range(registers)
    ]
    picked = []
    for at in range(0, count, lanes):
        index = indices(at)
        pairs = [
            builder.call(function, [parts[r], index, parts[r + 1]]) for r in range(0, registers, 2)
        ]
        if len(pairs) == 2:
            high = builder.icmp_signed("<", index, ir.Constant(register, None))
            pairs = [builder.select(high, pairs[1], pairs[0])]
        picked.append(pairs[0])
    return _join(builder, picked)


def _masks_row(
    context: Any,
    builder: ir.IRBuilder,
    masks: ir.Value,
    maskstype: Any,
    pattern: ir.Value,
    size: int,
) -> ir.Value:
    """A pointer to row ``pattern`` of the run-time masks (a C-contiguous table of
    ``size`` columns)."""
    data = context.make_array(maskstype)(context, builder, value=masks).data
    return builder.gep(data, [builder.mul(pattern, ir.Constant(pattern.type, size))])


def _permuted(
    builder: ir.IRBuilder,
    vector: ir.Value,
    pattern: ir.Value,
    masks: Sequence[Sequence[int]],
    looked_up: ir.Value | None,
) -> ir.Value:
    """``vector`` permuted by pattern ``pattern``'s mask (the result's element ``j``
    is ``vector[mask[j]]``): by the mask at ``looked_up`` (:func:`can_look_up`), or by
    one of the compiled ``masks``, through a switch when there are several."""
    if looked_up is not None:
        return _looked_up(builder, vector, looked_up)
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
    result = ir.VectorType(vector.type.element, len(masks[0]))
    phi = builder.phi(result)
    phi.add_incoming(ir.Constant(result, None), start)  # no such pattern: never taken
    for value, block in results:
        phi.add_incoming(value, block)
    return phi


@intrinsic
def _gather_tiles(
    typingctx: Any,
    values: Any,
    runs: Any,
    starts: Any,
    masks: Any,
    step: Any,
    strides: Any,
    out: Any,
    text: Any,
) -> Any:
    """Step ``step``'s tiles (``group`` boxes side by side along the last axis, from
    ``starts[step]``) gathered: each box permuted into its run of ``out``."""
    if not isinstance(text, types.StringLiteral):
        return None
    width, group, lookup, stream, _, sides, patterns = _parse(text.literal_value)
    size = math.prod(sides)
    # runs start at multiples of their bytes from an aligned output (kernels())
    align = min(ALIGNMENT, size * width & -(size * width))
    signature = types.void(values, runs, starts, masks, step, strides, out, text)

    def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> Any:
        values_v, runs_v, starts_v, masks_v, step_v, strides_v, out_v, _ = args
        base = _item(context, builder, starts_v, sig.args[2], step_v)
        rows = _row_addresses(
            context, builder, values_v, sig.args[0], base, strides_v, sig.args[5], sides, group
        )
        loaded = [builder.load(row, align=1) for row in rows]
        chain = _chain(len(rows), group, sides[-1], width)
        boxes = _regroup(builder, loaded, chain, sides[-1], False)
        data = context.make_array(sig.args[6])(context, builder, value=out_v).data
        first = builder.mul(step_v, ir.Constant(step_v.type, group))
        for g in range(group):
            index = builder.add(first, ir.Constant(first.type, g))
            run, pattern = _tile(context, builder, runs_v, sig.args[1], index)
            at = builder.mul(run, ir.Constant(run.type, size))
            target = builder.bitcast(
                builder.gep(data, [at]), ir.VectorType(data.type.pointee, size).as_pointer()
            )
            row = (
                _masks_row(context, builder, masks_v, sig.args[3], pattern, size)
                if lookup
                else None
            )
            permuted = _permuted(builder, boxes[g], pattern, patterns, row)
            store = builder.store(permuted, target, align=align)
            if stream:  # a whole line at once, past the caches (no read for ownership)
                store.set_metadata("nontemporal", builder.module.add_metadata([_ONE]))
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def _scatter_tiles(
    typingctx: Any,
    buffer: Any,
    runs: Any,
    starts: Any,
    masks: Any,
    step: Any,
    strides: Any,
    out: Any,
    text: Any,
) -> Any:
    """The inverse of :func:`_gather_tiles`: the runs of step ``step``'s tiles put
    back as their boxes in ``out``."""
    if not isinstance(text, types.StringLiteral):
        return None
    width, group, lookup, _, apart, sides, patterns = _parse(text.literal_value)
    inverses = [np.argsort(p).tolist() for p in patterns]
    size, length = math.prod(sides), sides[-1]
    signature = types.void(buffer, runs, starts, masks, step, strides, out, text)

    def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> Any:
        buffer_v, runs_v, starts_v, masks_v, step_v, strides_v, out_v, _ = args
        data = context.make_array(sig.args[0])(context, builder, value=buffer_v).data
        run_type = ir.VectorType(data.type.pointee, size)
        first = builder.mul(step_v, ir.Constant(step_v.type, group))
        boxes = []
        for g in range(group):
            index = builder.add(first, ir.Constant(first.type, g))
            run, pattern = _tile(context, builder, runs_v, sig.args[1], index)
            at = builder.mul(run, ir.Constant(run.type, size))
            loaded = builder.load(
                builder.bitcast(builder.gep(data, [at]), run_type.as_pointer()), align=1
            )
            row = (
                _masks_row(context, builder, masks_v, sig.args[3], pattern, size)
                if lookup
                else None
            )
            boxes.append(_permuted(builder, loaded, pattern, inverses, row))
        chain = _chain(size // length, group, length, width)[::-1]
        parts = _regroup(builder, boxes, chain, length, apart)
        base = _item(context, builder, starts_v, sig.args[2], step_v)
        rows = _row_addresses(
            context, builder, out_v, sig.args[6], base, strides_v, sig.args[5], sides, group
        )
        for part, row in zip(parts, rows, strict=True):
            builder.store(part, row, align=1)
        return context.get_dummy_value()

    return signature, codegen


_ONE = ir.Constant(ir.IntType(32), 1)


@intrinsic
def _drain(typingctx: Any) -> Any:
    """A full memory fence.  Streaming stores (:attr:`Description.stream`) are
    weakly ordered, and another thread may read the output as soon as gather
    returns: the fence makes them visible first."""

    def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> Any:
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@lru_cache(maxsize=64)
def kernels(text: str) -> tuple[Loop, Loop]:
    """The gather and scatter loops for the tiles :func:`describe` gave ``text``.

    ``gather(values, runs, starts, masks, strides, space)`` fills the output, ``out``:
    for every tile ``i``, of run ``r`` and pattern ``p`` (:attr:`.tiles.Tiles.runs`),
    the run ``out[r*T : (r+1)*T]`` from its box, the ``i % group``-th side by side
    from ``values[starts[i // group]]``.  ``scatter(buffer, runs, starts, masks,
    strides, space)`` is its inverse.  ``out`` lies in ``space``, bytes of at least
    :data:`ALIGNMENT` - 1 more than it needs, from the returned offset, the first at
    a multiple of :data:`ALIGNMENT` in memory.

    ``masks`` are the looked-up masks, a row of ``T`` per pattern (the patterns for
    gather, their inverses for scatter), unsigned integers of the width and
    C-contiguous; loops that do not look up ignore them.  ``strides`` are the chunk's
    element strides of all axes but the last; ``values`` and ``buffer`` are unsigned
    integers of the described width.
    """
    described = _parse(text)
    width, stream = described.width, described.stream
    unit = np.dtype(f"u{width}").type

    @numba.njit(nogil=True, cache=True)
    def gather(
        values: np.ndarray,
        runs: np.ndarray,
        starts: np.ndarray,
        masks: np.ndarray,
        strides: tuple[int, ...],
        space: np.ndarray,
    ) -> int:
        start = -space.ctypes.data % ALIGNMENT
        out = space[start : start + values.size * width].view(unit)
        for step in range(starts.size):
            # (numba supplies the intrinsic's typing context: mypy sees one argument short)
            _gather_tiles(values, runs, starts, masks, step, strides, out, text)  # type: ignore[call-arg]
        if stream:
            _drain()  # type: ignore[call-arg]
        return start

    @numba.njit(nogil=True, cache=True)
    def scatter(
        buffer: np.ndarray,
        runs: np.ndarray,
        starts: np.ndarray,
        masks: np.ndarray,
        strides: tuple[int, ...],
        space: np.ndarray,
    ) -> int:
        start = -space.ctypes.data % ALIGNMENT
        out = space[start : start + buffer.size * width].view(unit)
        for step in range(starts.size):
            _scatter_tiles(buffer, runs, starts, masks, step, strides, out, text)  # type: ignore[call-arg]
        return start

    return gather, scatter
