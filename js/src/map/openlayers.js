// An OpenLayers source of a Hurray variable (`ol` is a peer dependency: this module
// imports it, the package does not bundle it).  Use it with a WebGLTile layer:
//
//     new WebGLTileLayer({ source: new HurraySource({ url, variable: "t2m" }) })
//
// Where OpenLayers knows the grid's CRS (EPSG:4326, EPSG:3857, or any CRS proj4
// defines once registered: give `proj4` and it is), the source's tiles are the
// chunks of the pyramid's levels in that CRS and OpenLayers reprojects them to the
// view on the GPU: a tile is then one chunk, read whole, and no pixel is resampled
// here.  Where it does not (rotated grids, cells that are not square, longitudes
// past 180), the source's tiles are Web Mercator's, resampled by the core.

import { get as getProjection } from "ol/proj.js";
import { register } from "ol/proj/proj4.js";
import DataTileSource from "ol/source/DataTile.js";
import TileGrid from "ol/tilegrid/TileGrid.js";

import { HurrayLayer } from "./layer.js";
import { WEB_MERCATOR_QUAD } from "./tiles.js";

/**
 * @typedef {import("./layer.js").LayerOptions & {url?: string | URL, layer?: HurrayLayer, native?: boolean, transition?: number}} HurraySourceOptions
 *   `url` (or an open `layer`); `native: false` always serves Web Mercator's tiles
 */

/**
 * A DataTile source of one variable of a Hurray file.
 *
 * Its `ready` is the promise of its layer, public since this source was first
 * published.  OpenLayers 10 later gave Source a protected method ready(), which only
 * its own GeoZarr source calls, on itself; here the property hides that method.
 */
// @ts-expect-error `ready`: a property in place of the base class's protected method
export class HurraySource extends DataTileSource {
	/** @param {HurraySourceOptions} options */
	constructor(options) {
		super({
			state: "loading",
			// no projection, and so no default tile grid, until the file is open (configure
			// sets both); OpenLayers takes null here (its get(null) is null), its type does not
			// @ts-expect-error null is not among the declared ProjectionLike
			projection: null,
			tileGrid: undefined,
			bandCount: 4,
			hasAlpha: true,
			wrapX: true,
			interpolate: false,
			transition: options.transition,
		});
		/** @type {HurrayLayer | null} the core, once open */
		this.layer = null;
		/** @type {Map<string, number>} levels of the tiles loaded, by "z/x/y" (for pages that show which level they draw) */
		this.levels = new Map();
		/** @type {Promise<HurrayLayer>} */
		const ready = (options.layer ? Promise.resolve(options.layer) : HurrayLayer.open(/** @type {string | URL} */ (options.url), options)).then(
			(layer) => {
				this.configure(layer, options);
				return layer;
			},
		);
		/** The promise of the layer (see the class's comment on its name). */
		this.ready = ready;
		ready.catch((/** @type {Error} */ error) => {
			this.error = error;
			this.setState("error");
			this.viewRejector?.(error);
		});
	}

	/**
	 * Take the layer's grid as tiles, and be ready.
	 * @param {HurrayLayer} layer
	 * @param {HurraySourceOptions} options
	 */
	configure(layer, options) {
		this.layer = layer;
		const projection = options.native === false ? null : olProjection(layer, options.proj4);
		const grid = projection ? nativeGrid(layer) : null;
		let generation = 0;
		layer.addEventListener("change", () => this.setKey(String(++generation)));
		if (projection && grid) {
			this.projection = projection;
			this.tileGrid = grid;
			this.setLoader((z, x, y, { signal }) => this.loadChunk(z, x, y, signal));
		} else {
			const top = Math.min(24, layer.finestZoom() + 1);
			this.projection = getProjection("EPSG:3857");
			this.tileGrid = new TileGrid({
				extent: [-WEB_MERCATOR_QUAD.origin[1], -WEB_MERCATOR_QUAD.origin[1], WEB_MERCATOR_QUAD.origin[1], WEB_MERCATOR_QUAD.origin[1]],
				origin: WEB_MERCATOR_QUAD.origin,
				resolutions: Array.from({ length: top + 1 }, (_, z) => WEB_MERCATOR_QUAD.resolution0 / 2 ** z),
				tileSize: WEB_MERCATOR_QUAD.tileSize,
			});
			this.setLoader((z, x, y, { signal }) => this.loadTile(z, x, y, signal));
		}
		this.setState("ready");
		// both set above, the grid with its extent
		const shown = /** @type {import("ol/proj/Projection.js").default} */ (this.projection);
		const extent = /** @type {import("ol/extent.js").Extent} */ (/** @type {import("ol/tilegrid/TileGrid.js").default} */ (this.tileGrid).getExtent());
		this.viewResolver?.({ projection: shown, extent, center: [(extent[0] + extent[2]) / 2, (extent[1] + extent[3]) / 2], zoom: 0, showFullExtent: true });
	}

	/**
	 * A Web Mercator tile, resampled by the core.
	 * @param {number} z
	 * @param {number} x
	 * @param {number} y
	 * @param {AbortSignal} signal
	 */
	async loadTile(z, x, y, signal) {
		const layer = /** @type {HurrayLayer} */ (this.layer);
		const n = 2 ** z;
		const tile = await layer.tile(z, ((x % n) + n) % n, y, { signal });
		this.levels.set(`${z}/${x}/${y}`, tile?.level ?? -1);
		return tile ? tile.pixels : new Uint8Array(4 * WEB_MERCATOR_QUAD.tileSize ** 2);
	}

	/**
	 * A chunk of a level as a tile of the native grid: north up, east right, padded
	 * to the tile's size where the chunk is cut by the grid's edge.
	 * @param {number} z
	 * @param {number} x
	 * @param {number} y
	 * @param {AbortSignal} signal
	 */
	async loadChunk(z, x, y, signal) {
		const layer = /** @type {HurrayLayer} */ (this.layer);
		const k = layer.grid.levels.length - 1 - z;
		const level = layer.grid.levels[k];
		const [a, , , , e] = level.transform;
		const chunksY = Math.ceil(level.rows / level.chunkRows);
		const chunksX = Math.ceil(level.cols / level.chunkCols);
		// the tile grid runs north to south and west to east; the chunk grid as stored
		const row = e < 0 ? y : chunksY - 1 - y;
		const col = a > 0 ? x : chunksX - 1 - x;
		this.levels.set(`${z}/${x}/${y}`, k);
		const { values, rows, cols } = await layer.chunkValues(k, row, col, { signal });
		const width = level.chunkCols;
		const height = level.chunkRows;
		const placed = new Float32Array(width * height).fill(Number.NaN);
		for (let r = 0; r < rows; r++) {
			// the tile's row of this row of the chunk: from the top, where the rows run
			// south to north from the bottom of the (padded) chunk
			const tr = e < 0 ? r : height - 1 - r;
			for (let c = 0; c < cols; c++) {
				placed[tr * width + (a > 0 ? c : width - 1 - c)] = values[r * cols + c];
			}
		}
		return layer.colourise(placed);
	}
}

/**
 * The OpenLayers projection of the layer's grid, where OpenLayers knows it (after
 * registering proj4's definition of it, where proj4 is given) and the grid can be
 * its tiles as stored; else null.
 * @param {HurrayLayer} layer
 * @param {import("./crs.js").Proj4 | undefined} proj4
 */
function olProjection(layer, proj4) {
	const { crs, bounds } = layer.grid;
	if (crs.kind === "none" || crs.code === undefined) {
		return null;
	}
	if (crs.kind === "geographic" && (bounds[0] < -180 - 1e-9 || bounds[2] > 180 + 1e-9)) {
		return null; // longitudes past 180: the core wraps them
	}
	let projection = getProjection(crs.code);
	if (projection === null && proj4 !== undefined && crs.definition !== undefined) {
		proj4.defs(crs.code, crs.definition);
		// the same function, as OpenLayers types it from proj4's own declarations
		register(/** @type {Parameters<typeof register>[0]} */ (/** @type {unknown} */ (proj4)));
		projection = getProjection(crs.code);
	}
	return projection;
}

/**
 * The tile grid of the layer's chunks: one zoom level per level of the pyramid
 * (zoom 0 the coarsest), tiles the chunks; null where the grid is rotated or its cells
 * are not square.
 * @param {HurrayLayer} layer
 */
function nativeGrid(layer) {
	const levels = [...layer.grid.levels].reverse();
	const square = levels.every(({ transform: [a, b, , d, e] }) => b === 0 && d === 0 && Math.abs(Math.abs(a) - Math.abs(e)) <= 1e-9 * Math.abs(a));
	if (!square) {
		return null;
	}
	return new TileGrid({
		extent: layer.grid.bounds,
		resolutions: levels.map(({ transform }) => Math.abs(transform[0])),
		tileSizes: levels.map((level) => [level.chunkCols, level.chunkRows]),
		origins: levels.map((level) => {
			const [a, , c, , e, f] = level.transform;
			// the chunk grid's north-west corner, the chunks cut by the edges taken whole
			const spanX = a * Math.ceil(level.cols / level.chunkCols) * level.chunkCols;
			const spanY = e * Math.ceil(level.rows / level.chunkRows) * level.chunkRows;
			return [a > 0 ? c : c + spanX, e < 0 ? f : f + spanY];
		}),
	});
}
