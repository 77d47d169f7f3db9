// Where each chunk of a variable lies in its placement order (docs/spec/layouts.md,
// "Chunk placement order"), which numbers the entries of 1.1 and 1.2 index pages.
// A chunk's position is its row-major index over the axes outside the curve, times
// the chunks of one curve, plus its rank on the curve: the number of grid chunks
// with smaller keys.  The rank is counted level by level, as the Python reader does
// (xarray_hurray/layout/order.py): both curves visit each aligned sub-cube whole, so
// the chunks before a chunk are those of the grid inside the sibling sub-cubes the
// curve visits before its own, each a box cut to the grid.  Its cost grows with the
// chunks asked for and the curve's depth, never with the grid.

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
		const sibling = digits.slice();
		for (let below = this.order - 1; below >= 0; below--) {
			const side = 2 ** below;
			// the siblings' keys: the chunk's digits above this level, the sibling's
			// digit here and zeros below, so that the point decoded is in the sub-cube
			for (let b = 0; b < below; b++) {
				sibling[b] = 0;
			}
			for (let s = 0; s < digits[below]; s++) {
				sibling[below] = s;
				const corner = pointOfDigits(shape, sibling, n);
				let inside = 1;
				for (let d = 0; d < n && inside; d++) {
					const low = corner[d] - (corner[d] % side);
					inside *= Math.min(Math.max(sizes[d] - low, 0), side);
				}
				rank += inside;
			}
			sibling[below] = digits[below];
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
