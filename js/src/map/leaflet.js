// A Leaflet layer of a Hurray variable (`leaflet` is a peer dependency: the caller
// passes it in).  Its tiles are the map CRS's (Web Mercator, or Leaflet's EPSG4326),
// resampled by the core; the tiles Leaflet creates in one update are read together,
// and a tile Leaflet drops aborts its part of the requests.
//
//     hurrayLayer(L, { url, variable: "t2m" }).addTo(map);

import { HurrayLayer } from "./layer.js";
import { WEB_MERCATOR_QUAD, WORLD_CRS84_QUAD } from "./tiles.js";

/**
 * A Leaflet GridLayer of one variable: `url` (or an open `layer`) and the layer's options.
 * The Leaflet layer's `ready` is the core layer once open, and `levels` the level of each tile drawn.
 * @param {any} L Leaflet (1.9 ships no types; the layer's methods below run as
 *   Leaflet's GridLayer, which is why `this` and its events are untyped there)
 * @param {import("./layer.js").LayerOptions & {url?: string | URL, layer?: HurrayLayer} & Record<string, unknown>} options
 *   also Leaflet's GridLayer options
 */
export function hurrayLayer(L, options) {
	const HurrayGridLayer = L.GridLayer.extend({
		initialize(/** @type {any} */ settings) {
			L.GridLayer.prototype.initialize.call(this, { tileSize: 256, noWrap: false, ...settings });
			/** @type {Map<string, number>} */
			this.levels = new Map();
			/** @type {Promise<HurrayLayer>} */
			this.ready = settings.layer ? Promise.resolve(settings.layer) : HurrayLayer.open(settings.url, settings);
			this.ready.then(
				(/** @type {HurrayLayer} */ layer) => {
					this.layer = layer;
					layer.addEventListener("change", () => this.redraw());
					this.redraw();
				},
				(/** @type {unknown} */ error) => this.fire("error", { error }),
			);
			this.on("tileunload", (/** @type {any} */ event) => event.tile.hurrayAbort?.abort());
		},

		createTile(/** @type {{x: number, y: number, z: number}} */ coords, /** @type {(error: unknown, tile: HTMLElement) => void} */ done) {
			const canvas = document.createElement("canvas");
			const size = this.getTileSize();
			canvas.width = size.x;
			canvas.height = size.y;
			if (!this.layer) {
				setTimeout(() => done(undefined, canvas)); // drawn again once the layer is open
				return canvas;
			}
			const controller = new AbortController();
			/** @type {any} */ (canvas).hurrayAbort = controller;
			const matrix = this._map.options.crs === L.CRS.EPSG4326 ? WORLD_CRS84_QUAD : WEB_MERCATOR_QUAD;
			const n = matrix === WEB_MERCATOR_QUAD ? 2 ** coords.z : 2 ** (coords.z + 1);
			/** @type {HurrayLayer} */ (this.layer)
				.tile(coords.z, ((coords.x % n) + n) % n, coords.y, { matrix, signal: controller.signal })
				.then((tile) => {
					this.levels.set(`${coords.z}/${coords.x}/${coords.y}`, tile?.level ?? -1);
					if (tile) {
						const g = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
						g.putImageData(new ImageData(tile.pixels, tile.width, tile.height), 0, 0);
					}
					done(undefined, canvas);
				})
				.catch((error) => {
					if (!controller.signal.aborted) {
						done(error, canvas);
					}
				});
			return canvas;
		},
	});
	return new HurrayGridLayer(options);
}
