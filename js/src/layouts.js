// Element layouts inside a chunk (docs/spec/layouts.md, docs/spec/data-model.md):
// the descriptor's validity rules, the buffer size, and where each element of a
// chunk lies in its buffer.

import { hilbertIndex } from "./curves.js";
import { HurrayFormatError } from "./errors.js";

/** Elements of a chunk up to which its positions are kept in a table (4 bytes each). */
const TABLE_ELEMENTS = 2 ** 24;

/**
 * @typedef {object} Layout
 * @property {"row-major"|"morton"|"hilbert"} name
 * @property {number[]} [bits] Morton: bits per axis
 * @property {number} [order] Hilbert: bits per axis
 * @property {number} bufferSize elements of a chunk's buffer, padding included
 * @property {(index: number) => number} position buffer position of the element at a
 *   row-major index of the chunk
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
		new HurrayFormatError(`invalid layout ${JSON.stringify(config)} for chunks [${chunks}]: ${why}`);
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
		return { name: "row-major", bufferSize: elements, position: (i) => i };
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
		return { name: "morton", bits, bufferSize: 2 ** total, position: tabulated(chunks, mortonKey(bits)) };
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
		return {
			name: "hilbert",
			order: p,
			bufferSize: 2 ** (r * p),
			position: tabulated(chunks, (point) => hilbertIndex(point, p)),
		};
	}
	throw bad("the name is none of row-major, morton, hilbert");
}

/**
 * The Morton key of a point (layouts.md, "Key"), for keys of at most 31 bits (a
 * chunk's buffer holds fewer than 2**31 elements).
 * @param {number[]} bits
 * @returns {(point: number[]) => number}
 */
function mortonKey(bits) {
	const levels = Math.max(0, ...bits);
	return (point) => {
		let key = 0;
		let k = 0;
		for (let b = 0; b < levels; b++) {
			// within a level, a lower axis takes a more significant bit
			for (let d = bits.length - 1; d >= 0; d--) {
				if (b < bits[d]) {
					key += ((point[d] >>> b) & 1) * 2 ** k;
					k++;
				}
			}
		}
		return key;
	};
}

/**
 * The buffer position of each element of a chunk (by row-major index) under `key`,
 * kept in a table made at first use for chunks of up to TABLE_ELEMENTS elements.
 * @param {number[]} chunks
 * @param {(point: number[]) => number} key
 * @returns {(index: number) => number}
 */
function tabulated(chunks, key) {
	const elements = chunks.reduce((a, b) => a * b, 1);
	const pointOf = (/** @type {number} */ index) => {
		const point = new Array(chunks.length);
		for (let d = chunks.length - 1; d >= 0; d--) {
			point[d] = index % chunks[d];
			index = Math.floor(index / chunks[d]);
		}
		return point;
	};
	if (elements > TABLE_ELEMENTS) {
		return (index) => key(pointOf(index));
	}
	/** @type {Int32Array | null} */
	let table = null;
	return (index) => {
		if (table === null) {
			table = new Int32Array(elements);
			for (let i = 0; i < elements; i++) {
				table[i] = key(pointOf(i));
			}
		}
		return table[index];
	};
}
