// Where each chunk of a variable lies in its placement order (docs/spec/layouts.md,
// "Chunk placement order"), which numbers the entries of 1.1 and 1.2 index pages.
// A chunk's position is its row-major index over the axes outside the curve, times
// the chunks of one curve, plus its rank on the curve: the number of grid chunks
// with smaller keys.  The rank is counted level by level, as the Python reader does
// (xarray_hurray/layout/order.py): both curves visit each aligned sub-cube whole, so
// the chunks before a chunk are those of the grid inside the sibling sub-cubes the
// curve visits before its own.  Both visit the 2**d children of a sub-cube in the
// Gray code order of their digits, the axes permuted and reflected: the child of
// digit j is the child of digit 0 moved to the other half along the axes flips[m]
// for each bit m of j.  So the children whose digits agree above bit i and take
// every value below it fill a box (both halves along the axes flips[0..i-1], one
// half along the others), and the siblings before a child are at most d such boxes,
// each a product over the axes: d + 1 decoded points and d boxes per level, never
// the 2**d siblings one by one.  Its cost grows with the chunks asked for and the
// curve's rank and depth, never with the grid.

import { keyDigits, pointOfDigits } from "./curves.js";
import { HurrayFormatError } from "./errors.js";

/** Bits per axis of a chunk curve this reader follows: 32-bit words hold them. */
const MAX_ORDER = 30;

export class Placement {
	/**
	 * @param {number[]} grid chunks along each axis
	 * @param {string} curve `hilbert`, `morton` or `row-major`
	 * @param {number[]} axes the axes the curve runs over
	 */
	constructor(grid, curve, axes) {
		this.grid = grid;
		this.curve = curve;
		this.outer = grid.map((_, a) => a).filter((a) => !axes.includes(a));
		this.moving = [...axes].sort((a, b) => a - b).filter((a) => grid[a] > 1);
		// bit_length(g - 1) without floating point doubts
		this.order = Math.max(0, ...this.moving.map((a) => bitLength(grid[a] - 1)));
		if (curve !== "row-major" && this.order > MAX_ORDER) {
			throw new HurrayFormatError(
				`a chunk grid of [${grid}] needs ${this.order} bits per axis on its curve; this reader follows up to ${MAX_ORDER}`,
			);
		}
		this.inner = this.moving.reduce((n, a) => n * grid[a], 1);
	}

	/**
	 * The placement position of the chunk at grid coordinates `coords`.
	 * @param {number[]} coords
	 */
	position(coords) {
		const { grid, curve } = this;
		if (curve === "row-major") {
			return coords.reduce((n, c, a) => n * grid[a] + c, 0);
		}
		const outer = this.outer.reduce((n, a) => n * grid[a] + coords[a], 0);
		const moving = this.moving;
		if (moving.length <= 1) {
			return outer * this.inner + (moving.length ? coords[moving[0]] : 0);
		}
		const n = moving.length;
		const sizes = moving.map((a) => grid[a]);
		const shape = /** @type {"hilbert" | "morton"} */ (curve);
		const digits = keyDigits(shape, moving.map((a) => coords[a]), this.order);
		let rank = 0;
		const probe = digits.slice();
		for (let below = this.order - 1; below >= 0; below--) {
			const side = 2 ** below;
			// a sub-cube inside the grid holds every chunk of the children before
			// the chunk's: the digit (unsigned: a digit of 32 axes fills a word) times
			// a child's chunks, with nothing to decode (and so do the sub-cubes below
			// it, so the probe is not needed again)
			const whole = moving.every(
				(a, k) => coords[a] - (coords[a] % (2 * side)) + 2 * side <= sizes[k],
			);
			if (whole) {
				rank += (digits[below] >>> 0) * 2 ** (n * below);
				continue;
			}
			// the points of this level's digits 0 and 2**m in the chunk's sub-cube:
			// its digits above this level, the probe digit here, zeros below
			for (let b = 0; b < below; b++) {
				probe[b] = 0;
			}
			probe[below] = 0;
			const first = pointOfDigits(shape, probe, n);
			/** @param {number[]} point */
			const half = (point) => point.map((c) => Math.floor(c / side) % 2);
			const firstHalves = half(first);
			/** @type {boolean[][]} flips[m][k]: digit 2**m's child is in the other half along k */
			const flips = [];
			for (let m = 0; m < n; m++) {
				probe[below] = 2 ** m;
				const other = half(pointOfDigits(shape, probe, n));
				flips.push(other.map((h, k) => h !== firstHalves[k]));
			}
			probe[below] = digits[below];
			// grid chunks along each axis in the low and high halves of the sub-cube
			const inLow = [];
			const inHigh = [];
			for (let k = 0; k < n; k++) {
				const corner = first[k] - (first[k] % (2 * side));
				inLow.push(Math.min(Math.max(sizes[k] - corner, 0), side));
				inHigh.push(Math.min(Math.max(sizes[k] - corner - side, 0), side));
			}
			// free[i][k]: the digits varying below bit i move along axis k
			const free = [new Array(n).fill(false)];
			for (let i = 1; i < n; i++) {
				free.push(free[i - 1].map((f, k) => f || flips[i - 1][k]));
			}
			const fixed = firstHalves.map((h) => h === 1);
			for (let i = n - 1; i >= 0; i--) {
				// digits are words of up to 32 bits: >>> reads them unsigned
				if ((digits[below] >>> i) & 1) {
					let inside = 1;
					for (let k = 0; k < n && inside; k++) {
						inside *= free[i][k] ? inLow[k] + inHigh[k] : fixed[k] ? inHigh[k] : inLow[k];
					}
					rank += inside;
					for (let k = 0; k < n; k++) {
						fixed[k] = fixed[k] !== flips[i][k];
					}
				}
			}
		}
		return outer * this.inner + rank;
	}
}

/** @param {number} n a non-negative integer */
function bitLength(n) {
	let bits = 0;
	while (n >= 1) {
		n = Math.floor(n / 2);
		bits++;
	}
	return bits;
}
