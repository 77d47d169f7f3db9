// Chunk placement positions against the whole order, enumerated: every chunk of the
// grid sorted by its key on the curve (the oracle), for grids of every shape up to a
// few thousand chunks; and the cost of one position on curves of many axes, whose
// values are the Python reader's (xarray_hurray.layout.placement_positions).

import assert from "node:assert/strict";
import { test } from "node:test";

import { keyDigits } from "../src/curves.js";
import { Placement } from "../src/placement.js";

/** Every point of a grid of `sizes`, row-major. */
function gridPoints(sizes) {
	let points = [[]];
	for (const n of sizes) {
		points = points.flatMap((p) => Array.from({ length: n }, (_, i) => [...p, i]));
	}
	return points;
}

/**
 * The placement position of every chunk (row-major), from the whole order: the chunks
 * sorted by the axes outside the curve (row-major), then by their key.
 */
function enumerated(grid, curve, axes) {
	const moving = [...axes].sort((a, b) => a - b).filter((a) => grid[a] > 1);
	const outer = grid.map((_, a) => a).filter((a) => !axes.includes(a));
	const order = Math.max(0, ...moving.map((a) => (grid[a] - 1).toString(2).length));
	const chunks = gridPoints(grid).map((point, id) => {
		const outerIndex = outer.reduce((n, a) => n * grid[a] + point[a], 0);
		const digits =
			moving.length && order
				? keyDigits(curve, moving.map((a) => point[a]), order).map((d) => d >>> 0)
				: [];
		return { id, outerIndex, digits };
	});
	chunks.sort((x, y) => {
		if (x.outerIndex !== y.outerIndex) {
			return x.outerIndex - y.outerIndex;
		}
		for (let b = x.digits.length - 1; b >= 0; b--) {
			if (x.digits[b] !== y.digits[b]) {
				return x.digits[b] - y.digits[b];
			}
		}
		return 0;
	});
	const positions = new Array(chunks.length);
	chunks.forEach((c, place) => {
		positions[c.id] = place;
	});
	return positions;
}

/** A seeded generator of integers in [0, n) (xorshift32), so that failures repeat. */
function generator(seed) {
	let state = seed >>> 0 || 1;
	return (n) => {
		state ^= state << 13;
		state >>>= 0;
		state ^= state >>> 17;
		state ^= state << 5;
		state >>>= 0;
		return state % n;
	};
}

for (const curve of ["hilbert", "morton"]) {
	test(`${curve}: every chunk of 300 grids is where the whole order puts it`, () => {
		const next = generator(curve === "hilbert" ? 43 : 44);
		for (let trial = 0; trial < 300; trial++) {
			const rank = 1 + next(6);
			const grid = Array.from({ length: rank }, () => 1 + next(rank <= 3 ? 12 : 4));
			const axes = grid.map((_, a) => a).filter(() => next(4) > 0);
			const expected = enumerated(grid, curve, axes);
			const placement = new Placement(grid, curve, axes);
			gridPoints(grid).forEach((point, id) => {
				assert.equal(
					placement.position(point),
					expected[id],
					`grid [${grid}] axes [${axes}] chunk [${point}]`,
				);
			});
		}
	});
}

// [grid, curve, chunk, its position as the Python reader places it]
const MANY_AXES = [
	[[...Array(19).fill(2), 3], "hilbert", [...Array(19).fill(1), 2], 1398101],
	[[...Array(19).fill(2), 3], "morton", [...Array(19).fill(1), 2], 1572863],
	[[...Array(21).fill(2), 3], "hilbert", [...Array(21).fill(1), 2], 5592405],
	[[...Array(21).fill(2), 3], "hilbert", [...Array(21).fill(0), 1], 4194303],
	[Array(32).fill(2), "hilbert", [...Array(31).fill(1), 1], 2863311530],
	[Array(32).fill(2), "morton", [...Array(31).fill(1), 1], 4294967295],
	[Array(32).fill(2), "hilbert", [...Array(31).fill(0), 1], 1],
	[Array(32).fill(2), "hilbert", [1, ...Array(31).fill(0)], 4294967295],
];

for (const [grid, curve, chunk, position] of MANY_AXES) {
	test(`${curve} over ${grid.length} axes: chunk [${chunk}] is placed at once`, () => {
		const started = performance.now();
		const placement = new Placement(grid, curve, grid.map((_, a) => a));
		assert.equal(placement.position(chunk), position);
		// counting the 2**d siblings one by one took 0.2 s at 20 axes and 1.3 s at 22
		assert.ok(performance.now() - started < 100, `${performance.now() - started} ms`);
	});
}
