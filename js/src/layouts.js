// Element layouts inside a chunk (docs/spec/layouts.md, docs/spec/data-model.md):
// the descriptor's validity rules, the buffer size, and where the elements of a box
// of a chunk lie in its buffer, computed for the whole box at once: per axis for the
// row-major and Morton layouts (a position is a sum of one term per axis), and on
// columns of points for Hilbert, as the Python reader does
// (xarray_hurray/layout/hilbert.py), once per chunk shape for small chunks.

import { hilbertKeys } from "./curves.js";
import { HurrayFormatError } from "./errors.js";
import { describeJson } from "./json.js";

/**
 * @typedef {object} Layout
 * @property {"row-major"|"morton"|"hilbert"} name
 * @property {number[]} [bits] Morton: bits per axis
 * @property {number} [order] Hilbert: bits per axis
 * @property {number} bufferSize elements of a chunk's buffer, padding included (at
 *   most 2**31: the metadata refuses larger chunks)
 * @property {(lo: number[], hi: number[], out: Uint32Array) => void} positions the
 *   buffer position of each element of the box `[lo, hi)` of a chunk (chunk
 *   coordinates), in the box's row-major order, written to `out`
 */

/**
 * @param {unknown} value
 * @returns {value is number}
 */
function isInteger(value) {
	return typeof value === "number" && Number.isInteger(value);
}

/**
 * Parse and check the layout descriptor `config` for chunks of shape `chunks`.
 * @param {unknown} config
 * @param {number[]} chunks
 * @returns {Layout}
 */
export function parseLayout(config, chunks) {
	const bad = (/** @type {string} */ why) =>
		new HurrayFormatError(`invalid layout ${describeJson(config)} for chunks [${chunks}]: ${why}`);
	if (typeof config !== "object" || config === null || Array.isArray(config)) {
		throw bad("a layout descriptor is an object");
	}
	const c = /** @type {Record<string, unknown>} */ (config);
	const members = Object.keys(c).sort().join(",");
	const rank = chunks.length;
	const elements = chunks.reduce((a, b) => a * b, 1);
	if (c.name === "row-major") {
		if (members !== "name") {
			throw bad("row-major has no parameters");
		}
		const strides = chunks.map((_, d) => chunks.slice(d + 1).reduce((a, b) => a * b, 1));
		return { name: "row-major", bufferSize: elements, positions: separable((d, x) => x * strides[d]) };
	}
	if (c.name === "morton") {
		if (members !== "morton_bits,name") {
			throw bad("morton has exactly the parameter morton_bits");
		}
		const bits = c.morton_bits;
		if (!Array.isArray(bits) || bits.length !== rank || !bits.every((m) => isInteger(m) && m >= 0)) {
			throw bad("morton_bits needs one non-negative integer per axis");
		}
		if (bits.some((m, d) => chunks[d] > 2 ** m)) {
			throw bad("a chunk side exceeds 2**morton_bits");
		}
		const total = bits.reduce((a, b) => a + b, 0);
		if (total > 64) {
			throw bad("morton_bits add up to more than 64");
		}
		return { name: "morton", bits, bufferSize: 2 ** total, positions: separable(mortonTerm(bits)) };
	}
	if (c.name === "hilbert") {
		if (members !== "hilbert_order,hilbert_rank,name") {
			throw bad("hilbert has exactly the parameters hilbert_rank and hilbert_order");
		}
		const r = c.hilbert_rank;
		const p = c.hilbert_order;
		if (!isInteger(r) || !isInteger(p)) {
			throw bad("hilbert_rank and hilbert_order are integers");
		}
		if (r !== rank || r < 2 || p <= 0 || r * p > 64 || chunks.some((s) => s !== 2 ** p)) {
			throw bad("hilbert needs hilbert_rank >= 2 axes, each of 2**hilbert_order, rank * order <= 64");
		}
		return { name: "hilbert", order: p, bufferSize: 2 ** (r * p), positions: hilbertPositions(p, chunks) };
	}
	throw bad("the name is none of row-major, morton, hilbert");
}

/**
 * The positions of a layout in which an element's position is the sum of one term
 * per axis, `term(d, x)` for coordinate `x` of axis `d`: the terms of the box's
 * coordinates are listed once per axis, then added up row by row.
 * @param {(d: number, x: number) => number} term
 * @returns {Layout["positions"]}
 */
function separable(term) {
	return (lo, hi, out) => {
		const rank = lo.length;
		const terms = lo.map((l, d) => Uint32Array.from({ length: hi[d] - l }, (_, k) => term(d, l + k)));
		const last = terms[rank - 1];
		const run = last.length;
		// the coordinates (relative to lo) of the row being written, and the sum of the
		// terms of its axes before the last
		const x = new Array(rank).fill(0);
		let at = 0;
		for (;;) {
			let base = 0;
			for (let d = 0; d < rank - 1; d++) base += terms[d][x[d]];
			for (let k = 0; k < run; k++) out[at + k] = base + last[k];
			at += run;
			let d = rank - 2;
			while (d >= 0 && ++x[d] === terms[d].length) {
				x[d] = 0;
				d--;
			}
			if (d < 0) break;
		}
	};
}

/**
 * The Morton key's term of each axis (layouts.md, "Key"): the bits of the
 * coordinate spread to their places in the key.  Keys have at most 31 bits (a
 * chunk's buffer holds at most 2**31 elements).
 * @param {number[]} bits
 * @returns {(d: number, x: number) => number}
 */
function mortonTerm(bits) {
	const levels = Math.max(0, ...bits);
	// place[d][b]: the key bit that bit b of axis d goes to; within a level, a lower
	// axis takes a more significant bit
	const place = bits.map(() => /** @type {number[]} */ ([]));
	let k = 0;
	for (let b = 0; b < levels; b++) {
		for (let d = bits.length - 1; d >= 0; d--) {
			if (b < bits[d]) {
				place[d][b] = k++;
			}
		}
	}
	return (d, x) => place[d].reduce((key, at, b) => key + ((x >>> b) & 1) * 2 ** at, 0);
}

/** Points of a box whose Hilbert keys are computed at once: the columns' length. */
const COLUMN = 2 ** 16;

/**
 * Elements of a chunk up to which its Hilbert positions are computed once, for the
 * whole chunk, and kept (4 bytes each): a read of many small chunks computes them
 * once; a read of a tile of a large chunk computes the tile's alone.
 */
const TABLE_ELEMENTS = 2 ** 20;

/**
 * The positions of the Hilbert layout of order `order` for chunks of shape `chunks`:
 * from a table of the whole chunk's, made at the first read, for chunks of up to
 * TABLE_ELEMENTS elements; else those of the box alone, computed as `boxKeys` does.
 * @param {number} order
 * @param {number[]} chunks
 * @returns {Layout["positions"]}
 */
function hilbertPositions(order, chunks) {
	const elements = chunks.reduce((a, b) => a * b, 1);
	if (elements > TABLE_ELEMENTS) {
		return (lo, hi, out) => boxKeys(order, lo, hi, out);
	}
	/** @type {Uint32Array | null} */
	let table = null;
	// the row-major index of each element of a box, then its position from the table
	const strides = chunks.map((_, d) => chunks.slice(d + 1).reduce((a, b) => a * b, 1));
	const rowMajor = separable((d, x) => x * strides[d]);
	return (lo, hi, out) => {
		if (table === null) {
			table = new Uint32Array(elements);
			boxKeys(order, new Array(chunks.length).fill(0), chunks, table);
		}
		rowMajor(lo, hi, out);
		for (let k = 0; k < out.length; k++) out[k] = table[out[k]];
	};
}

/**
 * The Hilbert keys (buffer positions) of the box `[lo, hi)` of a chunk, in the box's
 * row-major order, written to `out`: the points are made into columns of
 * coordinates, whole runs along the last axis of up to COLUMN points at a time, and
 * keyed together.
 * @param {number} order
 * @param {number[]} lo
 * @param {number[]} hi
 * @param {Uint32Array} out
 */
function boxKeys(order, lo, hi, out) {
	const rank = lo.length;
	const last = rank - 1;
	const run = hi[last] - lo[last];
	const count = lo.reduce((n, l, d) => n * (hi[d] - l), 1);
	// whole runs along the last axis at a time: at least one, and COLUMN points
	const rows = Math.max(1, Math.floor(COLUMN / run));
	const columns = lo.map(() => new Uint32Array(Math.min(count, rows * run)));
	// the last axis's coordinates are the same in every run
	const along = Uint32Array.from({ length: run }, (_, k) => lo[last] + k);
	const x = lo.slice(); // the first point of the next run, in the box's row-major order
	for (let start = 0; start < count; ) {
		let n = 0;
		for (let r = 0; r < rows && start + n < count; r++) {
			for (let d = 0; d < last; d++) columns[d].fill(x[d], n, n + run);
			columns[last].set(along, n);
			n += run;
			let d = last - 1;
			while (d >= 0 && ++x[d] === hi[d]) {
				x[d] = lo[d];
				d--;
			}
		}
		hilbertKeys(
			columns.map((c) => c.subarray(0, n)),
			order,
			out.subarray(start, start + n),
		);
		start += n;
	}
}
