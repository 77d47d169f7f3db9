// A MapLibre GL protocol for Hurray variables (`maplibre-gl` is a peer dependency:
// the caller passes it in).  `addHurrayProtocol(maplibregl)` registers "hurray";
// a raster source whose `url` is `hurrayUrl(fileUrl, options)` then gets a TileJSON
// made from the file's bounds and its Web Mercator tiles from the core, as bitmaps
// (nothing encoded as PNG).  The tiles a frame asks for are read together; a tile
// MapLibre cancels aborts its part of the requests.
//
//     addHurrayProtocol(maplibregl, { proj4 });
//     map.addSource("t2m", { type: "raster", url: hurrayUrl(fileUrl, { variable: "t2m" }), tileSize: 256 });
//     map.addLayer({ id: "t2m", type: "raster", source: "t2m", paint: { "raster-resampling": "nearest" } });

import { HurrayValueError } from "../errors.js";
import { openHurray } from "../reader.js";
import { HurrayLayer } from "./layer.js";

/**
 * The URL of the TileJSON of a variable of the file at `fileUrl`, for the "hurray" protocol.
 * @param {string | URL} fileUrl resolved against the page
 * @param {{variable?: string, select?: import("./layer.js").Selection, colormap?: string, range?: [number, number]}} [options]
 */
export function hurrayUrl(fileUrl, options = {}) {
	const base = typeof location === "undefined" ? undefined : location.href;
	const query = new URLSearchParams({ url: new URL(String(fileUrl), base).href });
	if (options.variable !== undefined) query.set("variable", options.variable);
	if (options.select !== undefined) query.set("select", JSON.stringify(options.select));
	if (options.colormap !== undefined) query.set("colormap", options.colormap);
	if (options.range !== undefined) query.set("range", options.range.join(","));
	return `hurray://tilejson?${query}`;
}

/**
 * Register the "hurray" protocol with MapLibre.
 * @param {{addProtocol: (name: string, load: (params: {url: string}, abort: AbortController) => Promise<{data: unknown}>) => void}} maplibregl
 * @param {{proj4?: import("./crs.js").Proj4, open?: import("../reader.js").OpenOptions, wait?: number}} [options]
 *   `wait`: milliseconds a batch of tiles waits for more (default 20: MapLibre asks
 *   for the tiles of a view over a frame or two)
 * @returns {{layerOf: (url: string) => Promise<HurrayLayer>}} the layer a TileJSON or tile URL names
 */
export function addHurrayProtocol(maplibregl, options = {}) {
	/** @type {Map<string, Promise<import("../reader.js").HurrayFile>>} */
	const files = new Map();
	/** @type {Map<string, Promise<HurrayLayer>>} the first layer of each variable, whose derived layers share its reads */
	const bases = new Map();
	/** @type {Map<string, Promise<HurrayLayer>>} */
	const layers = new Map();
	const layerOf = (/** @type {string} */ url) => {
		const query = new URL(url.replace(/^hurray:\/\/[^?]*/, "http://x/")).searchParams;
		const key = [...query].filter(([name]) => !["z", "x", "y"].includes(name)).map(([n, v]) => `${n}=${v}`).join("&");
		let found = layers.get(key);
		if (found === undefined) {
			const fileUrl = query.get("url");
			if (!fileUrl) {
				throw new HurrayValueError(`${url} names no file (url=...)`);
			}
			let file = files.get(fileUrl);
			if (file === undefined) {
				file = openHurray(fileUrl, options.open);
				files.set(fileUrl, file);
			}
			const variable = query.get("variable") ?? undefined;
			const range = /** @type {[number, number] | undefined} */ (query.get("range")?.split(",").map(Number));
			const select = query.has("select") ? JSON.parse(/** @type {string} */ (query.get("select"))) : undefined;
			const colormap = query.get("colormap") ?? undefined;
			const baseKey = `${fileUrl}|${variable}`;
			let base = bases.get(baseKey);
			if (base === undefined) {
				// the first URL of a variable opens it with its settings (a range given, none to find)
				base = file.then((f) => HurrayLayer.open(f, { variable, proj4: options.proj4, wait: options.wait ?? 20, range, select, colormap }));
				bases.set(baseKey, base);
			}
			found = base.then((b) => b.derive({ select, colormap, range }));
			found.catch(() => layers.delete(key));
			layers.set(key, found);
		}
		return found;
	};
	maplibregl.addProtocol("hurray", async (params, abort) => {
		const layer = await layerOf(params.url);
		if (params.url.startsWith("hurray://tilejson")) {
			return { data: layer.tileJSON(`${params.url.replace("hurray://tilejson", "hurray://tile")}&z={z}&x={x}&y={y}`) };
		}
		const query = new URL(params.url.replace(/^hurray:\/\/[^?]*/, "http://x/")).searchParams;
		const [z, x, y] = ["z", "x", "y"].map((name) => Number(query.get(name)));
		const tile = await layer.tile(z, x, y, { signal: abort.signal });
		const size = tile?.width ?? 256;
		const pixels = tile?.pixels ?? new Uint8ClampedArray(4 * size * size);
		return { data: await createImageBitmap(new ImageData(pixels, size, size)) };
	});
	return { layerOf };
}
