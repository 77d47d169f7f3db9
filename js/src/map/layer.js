// The core the map adapters share: one variable of a Hurray file as a map layer.
// It knows the variable's grid (grid.js), the selection of its leading dimensions
// (time, bands), its colours (colours.js), and reads for a tile of a tile matrix set
// (tiles.js), or for a chunk of a level in the grid's own CRS, the values it needs,
// every tile asked for in the same task in one `readMany` (requests.js).  Values
// read are kept (the most recent `CACHE_TILES` tiles), so that new colours redraw
// without a request.
//
// It is an EventTarget: "change" when the selection or the colours change (a map
// then redraws its tiles).

import { HurrayValueError } from "../errors.js";
import { HurrayFile, openHurray } from "../reader.js";
import { COLORMAPS, colourise, lookupTable } from "./colours.js";
import { projectionOf, WEB_MERCATOR_PROJECTION } from "./crs.js";
import { gridOf, mapVariables } from "./grid.js";
import { TileRequests } from "./requests.js";
import { planTile, sampleTile, samplerOf, stridesOf, WEB_MERCATOR_QUAD } from "./tiles.js";

/** Tiles whose values are kept. */
const CACHE_TILES = 256;

/** Cells of the coarsest level read whole to find a range of values; past it, its middle chunk. */
const RANGE_CELLS = 2 ** 20;

/**
 * A selection along the leading dimensions: for each, an index (a number, or
 * `{index}`) or a coordinate value (`{value}`: the nearest number or time, the equal
 * text).  Dimensions not named take index 0.
 * @typedef {Record<string, number | {index: number} | {value: number | string | Date}>} Selection
 */

/**
 * @typedef {object} LayerOptions
 * @property {string} [variable] which variable (default: the first a map can show)
 * @property {Selection} [select]
 * @property {string} [colormap] one of COLORMAPS (default "viridis")
 * @property {[number, number]} [range] the values at the colormap's ends (default:
 *   the variable's valid_min/valid_max or valid_range, else the least and greatest
 *   value of its coarsest level at the selection)
 * @property {import("./crs.js").Proj4} [proj4] proj4's default export, for grids in
 *   projected CRSs other than Web Mercator
 * @property {number} [wait] milliseconds a batch of tiles waits for more (default 0)
 * @property {import("../reader.js").OpenOptions} [open] how a URL is opened
 */

/**
 * @typedef {object} TileValues
 * @property {Float32Array} values the pixels' values in the variable's units, rows from
 *   the top (NaN: no value)
 * @property {number} width
 * @property {number} height
 * @property {number} level the level of the pyramid they were read from
 */

/** One variable of a Hurray file, as a map layer. */
export class HurrayLayer extends EventTarget {
	/**
	 * Open `target` (a URL, path, bytes, or an open HurrayFile) as a layer.
	 * @param {string | URL | ArrayBuffer | Uint8Array | HurrayFile} target
	 * @param {LayerOptions} [options]
	 */
	static async open(target, options = {}) {
		const file = target instanceof HurrayFile ? target : await openHurray(target, options.open);
		const names = mapVariables(file);
		const variable = options.variable ?? names[0];
		if (variable === undefined) {
			throw new HurrayValueError(`${file.source.name} holds no variable of two or more dimensions`);
		}
		if (!names.includes(variable)) {
			throw new HurrayValueError(`no variable ${JSON.stringify(variable)} to map; the file has ${JSON.stringify(names)}`);
		}
		const layer = new HurrayLayer(file, await gridOf(file, variable), options);
		if (layer.range === null) {
			layer.range = await layer.findRange();
		}
		return layer;
	}

	/**
	 * @param {HurrayFile} file
	 * @param {import("./grid.js").Grid} grid
	 * @param {LayerOptions} options
	 */
	constructor(file, grid, options) {
		super();
		this.file = file;
		this.grid = grid;
		this.proj4 = options.proj4;
		this.requests = new TileRequests(file, { wait: options.wait });
		/** @type {number[]} the index along each leading dimension */
		this.indices = selectionOf(grid, options.select ?? {});
		this.colormap = checkColormap(options.colormap ?? "viridis");
		this.table = lookupTable(this.colormap);
		/** @type {[number, number] | null} */
		this.range = options.range ?? validRange(grid.attrs);
		/** @type {Map<string, TileValues | null>} */
		this.cache = new Map();
		/** @type {import("./tiles.js").Sampler | null} */
		this.samplerOf = null;
	}

	/**
	 * A layer of the same variable with another selection or other colours, sharing
	 * this one's file, grid, batches of requests and values read.
	 * @param {{select?: Selection, colormap?: string, range?: [number, number]}} options
	 */
	derive({ select, colormap, range }) {
		const twin = new HurrayLayer(this.file, this.grid, {
			proj4: this.proj4,
			select: { ...this.selection, ...select },
			colormap: colormap ?? this.colormap,
			range: range ?? this.range ?? undefined,
		});
		twin.requests = this.requests;
		twin.cache = this.cache;
		twin.samplerOf = this.samplerOf;
		return twin;
	}

	/** The variables of the file a map can show. */
	get variables() {
		return mapVariables(this.file);
	}

	/** Longitude/latitude to the grid's CRS and back (proj4 for projected CRSs other than Web Mercator). */
	get projection() {
		return projectionOf(this.grid.crs, this.proj4);
	}

	/** The grid, ready to be sampled. */
	get sampler() {
		this.samplerOf ??= samplerOf(this.grid, this.projection);
		return this.samplerOf;
	}

	/**
	 * Select along the leading dimensions (those not named keep their index).
	 * @param {Selection} select
	 */
	select(select) {
		const named = selectionOf(this.grid, select);
		this.indices = this.indices.map((index, k) => (this.grid.leading[k].dim in select ? named[k] : index));
		this.dispatchEvent(new Event("change"));
	}

	/** The selection, as an index per leading dimension. */
	get selection() {
		return Object.fromEntries(this.grid.leading.map((d, k) => [d.dim, this.indices[k]]));
	}

	/**
	 * New colours: a colormap, a range, or both.
	 * @param {{colormap?: string, range?: [number, number]}} colours
	 */
	setColours({ colormap, range }) {
		if (colormap !== undefined) {
			this.colormap = checkColormap(colormap);
			this.table = lookupTable(colormap);
		}
		if (range !== undefined) {
			this.range = checkRange(range);
		}
		this.dispatchEvent(new Event("change"));
	}

	/**
	 * The pixels of `values` in the layer's colours (RGBA, NaN transparent).
	 * @param {ArrayLike<number>} values
	 */
	colourise(values) {
		return colourise(values, this.table, this.range ?? [0, 1]);
	}

	/**
	 * The values of tile `z/x/y` of `matrix` (default Web Mercator's), null where it
	 * holds none of the grid.
	 * @param {number} z
	 * @param {number} x
	 * @param {number} y
	 * @param {{matrix?: import("./tiles.js").TileMatrixSet, signal?: AbortSignal}} [options]
	 * @returns {Promise<TileValues | null>}
	 */
	async tileValues(z, x, y, { matrix = WEB_MERCATOR_QUAD, signal } = {}) {
		const key = `${this.indices}|${matrix.id}/${z}/${x}/${y}`;
		const cached = this.cache.get(key);
		if (cached !== undefined) {
			return cached;
		}
		const plan = planTile(this.sampler, matrix, z, x, y);
		let out = null;
		if (plan !== null) {
			const level = this.grid.levels[plan.level];
			const results = await this.requests.read(level.path, plan.boxes.map((box) => this.fullBox(box)), signal);
			out = { values: sampleTile(plan, results, this.grid), width: plan.size, height: plan.size, level: plan.level };
		}
		this.keep(key, out);
		return out;
	}

	/**
	 * Tile `z/x/y` in the layer's colours: RGBA pixels, null where it holds none of the grid.
	 * @param {number} z
	 * @param {number} x
	 * @param {number} y
	 * @param {{matrix?: import("./tiles.js").TileMatrixSet, signal?: AbortSignal}} [options]
	 */
	async tile(z, x, y, options) {
		const found = await this.tileValues(z, x, y, options);
		return found && { pixels: this.colourise(found.values), width: found.width, height: found.height, level: found.level };
	}

	/**
	 * The values of chunk (`row`, `col`) of level `k` along y and x, at the selection,
	 * in the grid's order (its rows and columns as they are stored).
	 * @param {number} k
	 * @param {number} row
	 * @param {number} col
	 * @param {{signal?: AbortSignal}} [options]
	 * @returns {Promise<{values: Float32Array, rows: number, cols: number}>}
	 */
	async chunkValues(k, row, col, { signal } = {}) {
		const key = `${this.indices}|chunk/${k}/${row}/${col}`;
		const cached = this.cache.get(key);
		if (cached) {
			return { values: cached.values, rows: cached.height, cols: cached.width };
		}
		const level = this.grid.levels[k];
		const r0 = row * level.chunkRows;
		const c0 = col * level.chunkCols;
		if (!(row >= 0 && col >= 0 && r0 < level.rows && c0 < level.cols)) {
			throw new HurrayValueError(`level ${k} has no chunk (${row}, ${col})`);
		}
		/** @type {[number, number][][]} */
		const box = [
			[
				[r0, Math.min(r0 + level.chunkRows, level.rows)],
				[c0, Math.min(c0 + level.chunkCols, level.cols)],
			],
		];
		const [result] = await this.requests.read(level.path, box.map((b) => this.fullBox(b)), signal);
		const rows = box[0][0][1] - r0;
		const cols = box[0][1][1] - c0;
		const { strideY, strideX } = stridesOf(result.shape, this.grid);
		const data = /** @type {ArrayLike<number>} */ (result.data);
		const values = new Float32Array(rows * cols);
		const { nodata, scale, offset } = this.grid;
		for (let r = 0; r < rows; r++) {
			for (let c = 0; c < cols; c++) {
				const v = Number(data[r * strideY + c * strideX]);
				values[r * cols + c] = v === nodata || v !== v ? Number.NaN : v * scale + offset;
			}
		}
		this.keep(key, { values, width: cols, height: rows, level: k });
		return { values, rows, cols };
	}

	/**
	 * The box of the variable's dimensions: `[[row0, row1], [col0, col1]]` along y and
	 * x, the selection along the others.
	 * @param {[number, number][]} box
	 * @returns {[number, number][]}
	 */
	fullBox([rows, cols]) {
		const out = this.grid.dims.map(() => /** @type {[number, number]} */ ([0, 1]));
		this.grid.leading.forEach(({ axis }, k) => {
			out[axis] = [this.indices[k], this.indices[k] + 1];
		});
		out[this.grid.yAxis] = rows;
		out[this.grid.xAxis] = cols;
		return out;
	}

	/**
	 * @param {string} key
	 * @param {TileValues | null} values
	 */
	keep(key, values) {
		this.cache.delete(key);
		this.cache.set(key, values);
		if (this.cache.size > CACHE_TILES) {
			this.cache.delete(/** @type {string} */ (this.cache.keys().next().value));
		}
	}

	/**
	 * The least and greatest value of the coarsest level, over every step of the
	 * leading dimensions where that is at most RANGE_CELLS cells (colours then compare
	 * across time steps), else at the selection (of its middle chunk, for a level
	 * too large to read whole).
	 * @returns {Promise<[number, number]>}
	 */
	async findRange() {
		const k = this.grid.levels.length - 1;
		const level = this.grid.levels[k];
		const box = this.fullBox([
			[0, level.rows],
			[0, level.cols],
		]);
		const steps = this.grid.leading.reduce((n, d) => n * d.size, 1);
		if (steps * level.rows * level.cols <= RANGE_CELLS) {
			this.grid.leading.forEach(({ axis, size }) => {
				box[axis] = [0, size];
			});
		}
		const values =
			level.rows * level.cols <= RANGE_CELLS
				? sampleWhole(await this.file.read(level.path, box), this.grid)
				: (await this.chunkValues(k, Math.floor(level.rows / level.chunkRows / 2), Math.floor(level.cols / level.chunkCols / 2))).values;
		let low = Number.POSITIVE_INFINITY;
		let high = Number.NEGATIVE_INFINITY;
		for (const v of values) {
			if (Number.isFinite(v)) {
				low = Math.min(low, v);
				high = Math.max(high, v);
			}
		}
		if (low > high) {
			return [0, 1];
		}
		return high > low ? [low, high] : [low - 0.5, high + 0.5];
	}

	/** The grid's extent in longitude/latitude: [west, south, east, north] (the whole earth's longitudes where it goes round it or crosses the antimeridian). */
	lonLatBounds() {
		const [xmin, ymin, xmax, ymax] = this.grid.bounds;
		if (this.grid.crs.kind === "geographic") {
			const whole = xmax - xmin >= 360 || xmin < -180 || xmax > 180;
			return [whole ? -180 : xmin, Math.max(-90, ymin), whole ? 180 : xmax, Math.min(90, ymax)];
		}
		const projection = this.projection;
		let [west, south, east, north] = [180, 90, -180, -90];
		const n = 32;
		for (let k = 0; k <= n; k++) {
			for (const [x, y] of [
				[xmin + ((xmax - xmin) * k) / n, ymin],
				[xmin + ((xmax - xmin) * k) / n, ymax],
				[xmin, ymin + ((ymax - ymin) * k) / n],
				[xmax, ymin + ((ymax - ymin) * k) / n],
			]) {
				const [lon, lat] = projection.inverse(x, y);
				if (Number.isFinite(lon) && Number.isFinite(lat)) {
					[west, east, south, north] = [Math.min(west, lon), Math.max(east, lon), Math.min(south, lat), Math.max(north, lat)];
				}
			}
		}
		return [west, south, east, north];
	}

	/**
	 * The zoom of Web Mercator's tiles whose pixels are about level 0's cells, at the
	 * grid's centre: where a map need not zoom further.
	 */
	finestZoom() {
		const [west, south, east, north] = this.lonLatBounds();
		const level = this.grid.levels[0];
		const [x0, y0] = WEB_MERCATOR_PROJECTION.forward(west, south);
		const [x1, y1] = WEB_MERCATOR_PROJECTION.forward(east, north);
		const metresPerCell = Math.min(Math.abs(x1 - x0) / level.cols, Math.abs(y1 - y0) / level.rows);
		return Math.max(0, Math.ceil(Math.log2(WEB_MERCATOR_QUAD.resolution0 / metresPerCell)));
	}

	/**
	 * A TileJSON 3.0 document of the layer's Web Mercator tiles at `template` (a URL
	 * with {z}, {x} and {y}).
	 * @param {string} template
	 */
	tileJSON(template) {
		const [west, south, east, north] = this.lonLatBounds();
		return {
			tilejson: "3.0.0",
			name: this.grid.name,
			description: String(this.grid.attrs.long_name ?? this.grid.name),
			tiles: [template],
			minzoom: 0,
			maxzoom: Math.min(24, this.finestZoom() + 2),
			bounds: [west, Math.max(south, -85.0511287798066), east, Math.min(north, 85.0511287798066)],
			center: [(west + east) / 2, (south + north) / 2, 0],
		};
	}
}

/**
 * The values of a read of the whole level, in the grid's units.
 * @param {import("../reader.js").ReadResult} result
 * @param {import("./grid.js").Grid} grid
 */
function sampleWhole(result, grid) {
	const data = /** @type {ArrayLike<number>} */ (result.data);
	const out = new Float32Array(data.length);
	for (let i = 0; i < data.length; i++) {
		const v = Number(data[i]);
		out[i] = v === grid.nodata || v !== v ? Number.NaN : v * grid.scale + grid.offset;
	}
	return out;
}

/**
 * The indices a selection gives, one per leading dimension (0 where not named).
 * @param {import("./grid.js").Grid} grid
 * @param {Selection} select
 */
export function selectionOf(grid, select) {
	const unknown = Object.keys(select).filter((dim) => !grid.leading.some((d) => d.dim === dim));
	if (unknown.length) {
		throw new HurrayValueError(`no dimension ${unknown.join(", ")} to select along; ${grid.name} has ${grid.leading.map((d) => d.dim).join(", ") || "none"}`);
	}
	return grid.leading.map((d) => {
		const wanted = select[d.dim];
		if (wanted === undefined) {
			return 0;
		}
		if (typeof wanted === "number" || "index" in wanted) {
			const index = typeof wanted === "number" ? wanted : wanted.index;
			if (!Number.isInteger(index) || index < 0 || index >= d.size) {
				throw new HurrayValueError(`index ${index} is outside ${d.dim}, which has ${d.size}`);
			}
			return index;
		}
		return indexOfValue(d, wanted.value);
	});
}

/**
 * The index of the coordinate value nearest to `value` (times and numbers), or equal to it (text).
 * @param {import("./grid.js").Leading} d
 * @param {number | string | Date} value
 */
function indexOfValue(d, value) {
	const values = d.values;
	if (values === undefined) {
		throw new HurrayValueError(`${d.dim} has no coordinate to select a value of: select an index`);
	}
	const isTime = values[0] instanceof Date;
	const target = isTime ? (value instanceof Date ? value.getTime() : Date.parse(String(value))) : typeof values[0] === "number" ? Number(value) : value;
	if (typeof values[0] === "string") {
		const k = values.indexOf(String(value));
		if (k < 0) {
			throw new HurrayValueError(`${d.dim} has no value ${JSON.stringify(value)}`);
		}
		return k;
	}
	if (!Number.isFinite(target)) {
		throw new HurrayValueError(`${JSON.stringify(value)} is not a ${isTime ? "time" : "number"} of ${d.dim}`);
	}
	let best = 0;
	values.forEach((v, k) => {
		const n = v instanceof Date ? v.getTime() : Number(v);
		const b = values[best];
		if (Math.abs(n - Number(target)) < Math.abs((b instanceof Date ? b.getTime() : Number(b)) - Number(target))) {
			best = k;
		}
	});
	return best;
}

/**
 * The valid range the attributes give (CF valid_min/valid_max or valid_range), or null.
 * @param {Record<string, unknown>} attrs
 * @returns {[number, number] | null}
 */
function validRange(attrs) {
	const range = Array.isArray(attrs.valid_range) || ArrayBuffer.isView(attrs.valid_range) ? Array.from(/** @type {ArrayLike<number>} */ (attrs.valid_range), Number) : null;
	const low = range ? range[0] : attrs.valid_min;
	const high = range ? range[1] : attrs.valid_max;
	if (typeof low === "number" && typeof high === "number" && high > low) {
		const scale = typeof attrs.scale_factor === "number" ? attrs.scale_factor : 1;
		const offset = typeof attrs.add_offset === "number" ? attrs.add_offset : 0;
		return [low * scale + offset, high * scale + offset];
	}
	return null;
}

/** @param {string} name */
function checkColormap(name) {
	if (!COLORMAPS.includes(name)) {
		throw new HurrayValueError(`no colormap ${JSON.stringify(name)}; there are ${COLORMAPS.join(", ")}`);
	}
	return name;
}

/** @param {[number, number]} range */
function checkRange(range) {
	if (!(Array.isArray(range) && range.length === 2 && Number.isFinite(range[0]) && Number.isFinite(range[1]) && range[1] > range[0])) {
		throw new HurrayValueError(`a range is [low, high] with low < high, got ${JSON.stringify(range)}`);
	}
	return range;
}
