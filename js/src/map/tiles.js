// A tile of a tile matrix set, resampled from a grid.  Each pixel of the tile takes
// the value of the grid cell under its centre (nearest neighbour), at one level of
// the pyramid: the coarsest whose cells are no coarser than the tile's pixels, as
// docs/spec/overviews.md has a map client choose it ("Which level serves a map
// tile"): the tile's extent in the grid's CRS, W by H, over its pixels, w by h, gives
// the cell size r = sqrt(W² + H²) / sqrt(w² + h²), and the level is the coarsest whose
// cells are no larger than r along either axis (level 0 where none is).
//
// A pixel centre goes from the tile matrix's CRS to longitude/latitude, then to the
// grid's CRS and through the inverse of the grid's transform to a cell.  A grid in
// longitude/latitude wraps around the earth: a longitude is taken to the turn of the
// grid's own (0-360 grids, and tiles across the antimeridian, read the columns at
// both ends).  A projected grid is mapped exactly at a mesh of points every
// `MESH` pixels and linearly between them (as map libraries reproject rasters).

import { HurrayValueError } from "../errors.js";
import { IDENTITY_PROJECTION, MERCATOR_HALF, WEB_MERCATOR_PROJECTION } from "./crs.js";
import { invert } from "./grid.js";

/**
 * @typedef {object} TileMatrixSet
 * @property {string} id
 * @property {string} crs
 * @property {import("./crs.js").Projection} projection longitude/latitude to the set's CRS and back
 * @property {[number, number]} origin the top left corner of tile 0/0/0 in the CRS
 * @property {number} resolution0 CRS units per pixel at zoom 0
 * @property {number} tileSize pixels along each side of a tile
 */

/** Web Mercator's tiles (OGC WebMercatorQuad, as OpenLayers, MapLibre and Leaflet use by default). */
export const WEB_MERCATOR_QUAD = Object.freeze({
	id: "WebMercatorQuad",
	crs: "EPSG:3857",
	projection: WEB_MERCATOR_PROJECTION,
	origin: /** @type {[number, number]} */ ([-MERCATOR_HALF, MERCATOR_HALF]),
	resolution0: (2 * MERCATOR_HALF) / 256,
	tileSize: 256,
});

/** Longitude/latitude tiles, two at zoom 0 (OGC WorldCRS84Quad, Leaflet's EPSG4326). */
export const WORLD_CRS84_QUAD = Object.freeze({
	id: "WorldCRS84Quad",
	crs: "EPSG:4326",
	projection: IDENTITY_PROJECTION,
	origin: /** @type {[number, number]} */ ([-180, 90]),
	resolution0: 180 / 256,
	tileSize: 256,
});

/** Pixels between the points of the mesh a projected grid is mapped at exactly. */
const MESH = 8;

/**
 * How the pixels of one tile take their cells.
 * @typedef {object} TilePlan
 * @property {number} level
 * @property {number} size pixels along each side
 * @property {Int32Array} rows each pixel's row at that level (-1: outside the grid)
 * @property {Int32Array} cols each pixel's column
 * @property {[number, number][][]} boxes [[row0, row1], [col0, col1]] of the cells to read
 */

/**
 * A grid, ready to be sampled: its transforms inverted, its projection and its wrap.
 * @typedef {object} Sampler
 * @property {import("./grid.js").Grid} grid
 * @property {import("./crs.js").Projection} projection longitude/latitude to the grid's CRS
 * @property {import("./grid.js").Affine} inverse level 0's CRS point to (column, row)
 * @property {number | null} west the western edge of a grid in longitude/latitude
 *   (longitudes are taken to [west, west + 360)); null for other grids
 */

/**
 * @param {import("./grid.js").Grid} grid
 * @param {import("./crs.js").Projection} projection
 * @returns {Sampler}
 */
export function samplerOf(grid, projection) {
	const geographic = grid.crs.kind === "geographic";
	return { grid, projection, inverse: invert(grid.levels[0].transform), west: geographic ? grid.bounds[0] : null };
}

/**
 * Level 0's (column, row) of the point (`lon`, `lat`): NaN where the grid's CRS has none.
 * @param {Sampler} sampler
 * @param {number} lon
 * @param {number} lat
 * @returns {[number, number]}
 */
function cellOf(sampler, lon, lat) {
	let x;
	let y;
	if (sampler.west !== null) {
		x = sampler.west + (((lon - sampler.west) % 360) + 360) % 360;
		y = lat;
	} else {
		try {
			[x, y] = sampler.projection.forward(lon, lat);
		} catch {
			return [Number.NaN, Number.NaN];
		}
	}
	const [a, b, c, d, e, f] = sampler.inverse;
	return [a * x + b * y + c, d * x + e * y + f];
}

/**
 * Which cells the pixels of tile `z/x/y` of `matrix` take; null where the tile
 * holds none of the grid.
 * @param {Sampler} sampler
 * @param {TileMatrixSet} matrix
 * @param {number} z
 * @param {number} x
 * @param {number} y
 * @returns {TilePlan | null}
 */
export function planTile(sampler, matrix, z, x, y) {
	if (!(Number.isInteger(z) && Number.isInteger(x) && Number.isInteger(y) && z >= 0 && z <= 30)) {
		throw new HurrayValueError(`no tile ${z}/${x}/${y}`);
	}
	const size = matrix.tileSize;
	const resolution = matrix.resolution0 / 2 ** z;
	const left = matrix.origin[0] + x * size * resolution;
	const top = matrix.origin[1] - y * size * resolution;
	/** Level 0's (column, row) at pixel position (u, v) of the tile (0 to size, from its top left corner). */
	const at = (/** @type {number} */ u, /** @type {number} */ v) => {
		const [lon, lat] = matrix.projection.inverse(left + u * resolution, top - v * resolution);
		return cellOf(sampler, lon, lat);
	};
	const level = chooseLevel(sampler.grid.levels, cellSize(sampler, matrix, left, top, resolution * size, size));
	const { fx, fy, rows: nRows, cols: nCols } = sampler.grid.levels[level];
	const rows = new Int32Array(size * size);
	const cols = new Int32Array(size * size);
	const place = (/** @type {number} */ p, /** @type {number} */ col, /** @type {number} */ row) => {
		const c = Math.floor(col / fx);
		const r = Math.floor(row / fy);
		const inside = r >= 0 && r < nRows && c >= 0 && c < nCols;
		rows[p] = inside ? r : -1;
		cols[p] = inside ? c : -1;
	};
	if (sampler.west !== null) {
		// longitude/latitude: each pixel centre mapped exactly
		for (let j = 0; j < size; j++) {
			for (let i = 0; i < size; i++) {
				const [col, row] = at(i + 0.5, j + 0.5);
				place(j * size + i, col, row);
			}
		}
	} else {
		meshMap(at, size, place);
	}
	const boxes = boxesOf(rows, cols, nCols);
	return boxes.length ? { level, size, rows, cols, boxes } : null;
}

/**
 * The cell size of a tile (docs/spec/overviews.md): the diagonal of its extent in the
 * grid's CRS (its edges transformed, 16 points each) over the diagonal of its pixels.
 * @param {Sampler} sampler
 * @param {TileMatrixSet} matrix
 * @param {number} left
 * @param {number} top
 * @param {number} span the tile's width and height in the matrix's CRS
 * @param {number} size its pixels along each side
 */
function cellSize(sampler, matrix, left, top, span, size) {
	let [xmin, ymin, xmax, ymax] = [Infinity, Infinity, -Infinity, -Infinity];
	for (let t = 0; t <= 16; t++) {
		for (const [u, v] of [
			[t / 16, 0],
			[t / 16, 1],
			[0, t / 16],
			[1, t / 16],
		]) {
			const [lon, lat] = matrix.projection.inverse(left + u * span, top - v * span);
			let x = lon;
			let y = lat;
			if (sampler.west === null) {
				try {
					[x, y] = sampler.projection.forward(lon, lat);
				} catch {
					continue;
				}
			}
			if (Number.isFinite(x) && Number.isFinite(y)) {
				[xmin, ymin, xmax, ymax] = [Math.min(xmin, x), Math.min(ymin, y), Math.max(xmax, x), Math.max(ymax, y)];
			}
		}
	}
	return Math.hypot(xmax - xmin, ymax - ymin) / Math.hypot(size, size);
}

/**
 * The coarsest level whose cells, along each axis, are no larger than `r` (within a
 * relative 1e-9); level 0 where none is, or `r` is not known.
 * @param {{transform: import("./grid.js").Affine}[]} levels
 * @param {number} r
 */
export function chooseLevel(levels, r) {
	let chosen = 0;
	levels.forEach(({ transform: [a, b, , d, e] }, k) => {
		if (Math.hypot(a, d) <= r * (1 + 1e-9) && Math.hypot(b, e) <= r * (1 + 1e-9)) {
			chosen = k;
		}
	});
	return chosen;
}

/**
 * Map every pixel centre of a `size` square through `at`, exactly at a mesh of points
 * `MESH` pixels apart and bilinearly between them; a mesh cell with a point outside
 * the projection is mapped pixel by pixel.
 * @param {(u: number, v: number) => [number, number]} at
 * @param {number} size
 * @param {(p: number, col: number, row: number) => void} place
 */
function meshMap(at, size, place) {
	const n = Math.ceil(size / MESH) + 1;
	const meshCols = new Float64Array(n * n);
	const meshRows = new Float64Array(n * n);
	for (let b = 0; b < n; b++) {
		for (let a = 0; a < n; a++) {
			[meshCols[b * n + a], meshRows[b * n + a]] = at(Math.min(a * MESH, size), Math.min(b * MESH, size));
		}
	}
	for (let j = 0; j < size; j++) {
		const v = (j + 0.5) / MESH;
		const b = Math.min(Math.floor(v), n - 2);
		const fv = v - b;
		for (let i = 0; i < size; i++) {
			const u = (i + 0.5) / MESH;
			const a = Math.min(Math.floor(u), n - 2);
			const fu = u - a;
			const k = b * n + a;
			const col = bilinear(meshCols, k, n, fu, fv);
			const row = bilinear(meshRows, k, n, fu, fv);
			if (Number.isFinite(col) && Number.isFinite(row)) {
				place(j * size + i, col, row);
			} else {
				const [c, r] = at(i + 0.5, j + 0.5);
				place(j * size + i, c, r);
			}
		}
	}
}

/**
 * @param {Float64Array} mesh
 * @param {number} k the mesh point at the top left
 * @param {number} n mesh points along a side
 * @param {number} fu
 * @param {number} fv
 */
function bilinear(mesh, k, n, fu, fv) {
	const top = mesh[k] + fu * (mesh[k + 1] - mesh[k]);
	const bottom = mesh[k + n] + fu * (mesh[k + n + 1] - mesh[k + n]);
	return top + fv * (bottom - top);
}

/** Columns between two runs of used ones that are read through rather than split into two boxes. */
const RUN_GAP = 32;

/**
 * The boxes of cells the pixels take: their rows' span, and their columns' runs (a
 * tile across a longitude/latitude grid's seam takes columns at both ends).
 * @param {Int32Array} rows
 * @param {Int32Array} cols
 * @param {number} nCols
 * @returns {[number, number][][]}
 */
function boxesOf(rows, cols, nCols) {
	let r0 = Number.POSITIVE_INFINITY;
	let r1 = -1;
	const used = new Uint8Array(nCols);
	for (let p = 0; p < rows.length; p++) {
		const r = rows[p];
		if (r >= 0) {
			r0 = r < r0 ? r : r0;
			r1 = r > r1 ? r : r1;
			used[cols[p]] = 1;
		}
	}
	if (r1 < 0) {
		return [];
	}
	/** @type {[number, number][][]} */
	const boxes = [];
	let start = -1;
	let last = -RUN_GAP - 1;
	for (let c = 0; c <= nCols; c++) {
		if (c < nCols && used[c]) {
			if (start < 0 || c - last > RUN_GAP) {
				if (start >= 0) {
					boxes.push([[r0, r1 + 1], [start, last + 1]]);
				}
				start = c;
			}
			last = c;
		}
	}
	if (start >= 0) {
		boxes.push([[r0, r1 + 1], [start, last + 1]]);
	}
	return boxes;
}

/**
 * The values of a tile's pixels from its boxes' values, in the grid's units (scale
 * and offset applied; nodata and cells outside the grid NaN).
 * @param {TilePlan} plan
 * @param {{data: ArrayLike<unknown>, shape: number[]}[]} results one per box, each
 *   of the variable's dimensions (those before y and x of length 1)
 * @param {import("./grid.js").Grid} grid
 * @returns {Float32Array}
 */
export function sampleTile(plan, results, grid) {
	const out = new Float32Array(plan.rows.length).fill(Number.NaN);
	const views = plan.boxes.map(([[r0], [c0, c1]], k) => {
		const { strideY, strideX } = stridesOf(results[k].shape, grid);
		return { r0, c0, c1, strideY, strideX, data: /** @type {ArrayLike<number>} */ (results[k].data) };
	});
	const { nodata, scale, offset } = grid;
	for (let p = 0; p < out.length; p++) {
		const r = plan.rows[p];
		if (r < 0) {
			continue;
		}
		const c = plan.cols[p];
		const view = views.length === 1 ? views[0] : views.find((w) => c >= w.c0 && c < w.c1);
		if (view === undefined) {
			continue;
		}
		const v = Number(view.data[(r - view.r0) * view.strideY + (c - view.c0) * view.strideX]);
		out[p] = v === nodata || v !== v ? Number.NaN : v * scale + offset;
	}
	return out;
}

/**
 * The strides of the y and x axes in a result of `shape` (row-major).
 * @param {number[]} shape
 * @param {import("./grid.js").Grid} grid
 */
export function stridesOf(shape, grid) {
	const stride = (/** @type {number} */ axis) => shape.slice(axis + 1).reduce((n, m) => n * m, 1);
	return { strideY: stride(grid.yAxis), strideX: stride(grid.xAxis) };
}
