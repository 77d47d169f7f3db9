// A map of one field in headless Chromium, over a link of 50 ms: this package's
// OpenLayers source, MapLibre protocol and Leaflet layer on a Hurray file, against
// OpenLayers' GeoTIFF source (geotiff.js) on a GDAL COG and OpenLayers' GeoZarr
// source on the to_zarr pyramid of the same field.  Each page is one bundle (esbuild),
// so that no module is fetched once the map starts.  For each page and view, in a
// fresh browser context: the milliseconds from the map's creation to its view
// rendered (OpenLayers' rendercomplete, MapLibre's idle, Leaflet's load), the
// requests to the data, and their waves (a request sent more than half a latency
// after the first of its wave starts a new one); then a pan of half the view's width
// to the east, measured the same way.  Run by benchmarks/js_maps.py, which serves the
// files and passes the settings as JSON: {origin, dir, files: {hurray, cog, zarr},
// views: [{lon, lat, zoom}], range, latency, runs, browser, width, height}.

import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const settings = JSON.parse(process.argv[process.argv.length - 1]);
const [low, high] = settings.range;

/** OpenLayers' style for the peers: the same colours as the layer's viridis, over the same range. */
const VIRIDIS = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"];
const STYLE = { color: ["interpolate", ["linear"], ["band", 1], ...VIRIDIS.flatMap((c, k) => [low + ((high - low) * k) / (VIRIDIS.length - 1), c])] };

/** What every OpenLayers page shares: the view in Web Mercator, rendercomplete as "rendered". */
const OL_MAP = `
import Map from "ol/Map.js";
import View from "ol/View.js";
import WebGLTileLayer from "ol/layer/WebGLTile.js";
import { fromLonLat } from "ol/proj.js";
const q = new URLSearchParams(location.search);
const view = new View({ center: fromLonLat([Number(q.get("lon")), Number(q.get("lat"))]), zoom: Number(q.get("zoom")) });
function start(layer) {
	window.mapStart = performance.now();
	const map = new Map({ target: "map", layers: [layer()], view });
	map.on("rendercomplete", () => window.rendered(performance.now()));
	window.pan = () => view.setCenter([view.getCenter()[0] + view.getResolution() * ${settings.width / 2}, view.getCenter()[1]]);
}
`;

/** Each page's script: `start()` runs at the map's creation. */
const PAGES = {
	"hurray-openlayers": `${OL_MAP}
import { HurraySource } from "../src/map/openlayers.js";
start(() => new WebGLTileLayer({ source: new HurraySource({ url: "${settings.files.hurray}", range: [${low}, ${high}] }) }));`,

	"hurray-maplibre": `
import * as maplibregl from "maplibre-gl";
import { addHurrayProtocol, hurrayUrl } from "../src/map/maplibre.js";
const q = new URLSearchParams(location.search);
addHurrayProtocol(maplibregl);
window.mapStart = performance.now();
// MapLibre's zoom 0 is a world of 512 pixels: the same view is one zoom less
const map = new maplibregl.Map({ container: "map", center: [Number(q.get("lon")), Number(q.get("lat"))], zoom: Number(q.get("zoom")) - 1, fadeDuration: 0,
	style: { version: 8, sources: { t: { type: "raster", url: hurrayUrl("${settings.files.hurray}", { range: [${low}, ${high}] }), tileSize: 256 } },
		layers: [{ id: "t", type: "raster", source: "t", paint: { "raster-resampling": "nearest", "raster-fade-duration": 0 } }] } });
map.on("idle", () => window.rendered(performance.now()));
window.pan = () => map.panBy([${settings.width / 2}, 0], { animate: false });`,

	"hurray-leaflet": `
import * as L from "leaflet/dist/leaflet-src.esm.js";
import { hurrayLayer } from "../src/map/leaflet.js";
const q = new URLSearchParams(location.search);
window.mapStart = performance.now();
const map = L.map("map", { fadeAnimation: false, zoomAnimation: false }).setView([Number(q.get("lat")), Number(q.get("lon"))], Number(q.get("zoom")));
const layer = hurrayLayer(L, { url: "${settings.files.hurray}", range: [${low}, ${high}] }).addTo(map);
layer.on("load", () => layer.layer && window.rendered(performance.now()));
window.pan = () => map.panBy([${settings.width / 2}, 0], { animate: false });`,

	"geotiff-openlayers": `${OL_MAP}
import GeoTIFF from "ol/source/GeoTIFF.js";
start(() => new WebGLTileLayer({ source: new GeoTIFF({ sources: [{ url: "${settings.files.cog}" }], normalize: false, interpolate: false }), style: ${JSON.stringify(STYLE)} }));`,

	"geozarr-openlayers": `${OL_MAP}
import GeoZarr from "ol/source/GeoZarr.js";
start(() => new WebGLTileLayer({ source: new GeoZarr({ url: "${settings.files.zarr}", bands: ["t"] }), style: ${JSON.stringify(STYLE)} }));`,
};

const HTML = (/** @type {string} */ name) => `<!doctype html><html><head><meta charset="utf-8">
<style>html, body { margin: 0; } #map { width: ${settings.width}px; height: ${settings.height}px; }</style>
<script>window.renders = []; window.rendered = (t) => window.renders.push(t); performance.setResourceTimingBufferSize(100000);</script>
</head><body><div id="map"></div><script type="module" src="${name}.js"></script></body></html>`;

/** Bundle each page into the served folder (and MapLibre's worker beside them, where it looks for it). */
async function build() {
	const maplibre = path.join(here, "..", "node_modules", "maplibre-gl", "dist");
	for (const name of fs.readdirSync(maplibre).filter((n) => n.endsWith(".mjs") && !n.includes("-dev"))) {
		fs.copyFileSync(path.join(maplibre, name), path.join(settings.dir, name));
	}
	for (const [name, script] of Object.entries(PAGES)) {
		const built = await esbuild.build({
			stdin: { contents: script, resolveDir: here, loader: "js" },
			bundle: true,
			format: "esm",
			write: false,
			logLevel: "error",
		});
		fs.writeFileSync(path.join(settings.dir, `${name}.js`), built.outputFiles[0].text);
		fs.writeFileSync(path.join(settings.dir, `${name}.html`), HTML(name));
	}
}

/**
 * The requests to the data among `sent` from the `from`-th on, and their waves.
 * @param {{at: number}[]} sent when each was sent (this process's clock)
 * @param {number} from
 */
function count(sent, from) {
	const mine = sent.slice(from);
	let waves = 0;
	let start = Number.NEGATIVE_INFINITY;
	for (const { at } of mine) {
		if (at - start > (settings.latency * 1000) / 2) {
			waves++;
			start = at;
		}
	}
	return { requests: mine.length, waves };
}

/**
 * Wait until the page has rendered at least `n` times, no request to the data is
 * pending and nothing has happened for a while; then the time of the view rendered:
 * the first render, after `since`, that follows the end of the last answer from the
 * data (a map may render before its data is in, and again as it comes).
 * @param {import("playwright-core").Page} page
 * @param {number} n
 * @param {{pending: number, events: number}} traffic requests to the data in flight, and events seen
 * @param {number} since on the page's clock
 */
async function rendered(page, n, traffic, since) {
	await page.waitForFunction((n) => window.renders.length >= n, n, { timeout: 120_000 });
	let seen = "";
	for (;;) {
		await page.waitForTimeout(750);
		const now = `${await page.evaluate(() => window.renders.length)}/${traffic.events}`;
		if (now === seen && traffic.pending === 0) {
			break;
		}
		seen = now;
	}
	return page.evaluate(
		({ files, since }) => {
			const answers = performance
				.getEntriesByType("resource")
				.filter((e) => files.some((f) => e.name.startsWith(f)) && e.startTime >= since)
				.map((e) => e.responseEnd);
			const last = Math.max(since, ...answers);
			return window.renders.find((t) => t >= last) ?? window.renders[window.renders.length - 1];
		},
		{ files: Object.values(settings.files), since },
	);
}

/**
 * One page at one view in a fresh context: the view, then the pan.
 * @param {import("playwright-core").Browser} browser
 * @param {string} name
 * @param {{lon: number, lat: number, zoom: number}} view
 */
async function run(browser, name, view) {
	const context = await browser.newContext({ viewport: { width: settings.width, height: settings.height } });
	const page = await context.newPage();
	const sent = [];
	const errors = [];
	const traffic = { pending: 0, events: 0 };
	const isData = (/** @type {string} */ url) => Object.values(settings.files).some((file) => url.startsWith(file));
	page.on("pageerror", (error) => errors.push(error.message));
	page.on("request", (request) => {
		if (isData(request.url())) {
			sent.push({ at: performance.now() });
			traffic.pending++;
			traffic.events++;
		}
	});
	for (const event of ["requestfinished", "requestfailed"]) {
		page.on(event, (request) => {
			if (isData(request.url())) {
				traffic.pending--;
				traffic.events++;
			}
		});
	}
	await page.goto(`${settings.origin}/${name}.html?${new URLSearchParams(view)}`);
	// every request to the data comes after the map's creation (mapStart)
	const start = await page.waitForFunction(() => window.mapStart).then((h) => h.jsonValue());
	const first = { ms: (await rendered(page, 1, traffic, start)) - start, ...count(sent, 0) };
	const before = sent.length;
	const renders = await page.evaluate(() => window.renders.length);
	const panStart = await page.evaluate(() => {
		const t = performance.now();
		window.pan();
		return t;
	});
	const pan = { ms: (await rendered(page, renders + 1, traffic, panStart)) - panStart, ...count(sent, before) };
	await context.close();
	if (errors.length) {
		throw new Error(`${name}: ${errors.join("; ")}`);
	}
	return { view: first, pan };
}

await build();
const browser = await chromium.launch({
	executablePath: settings.browser,
	headless: true,
	args: ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-background-networking", "--no-first-run"],
});
const results = {};
try {
	for (let k = 0; k < settings.runs; k++) {
		for (const name of Object.keys(PAGES)) {
			for (const [v, view] of settings.views.entries()) {
				const result = await run(browser, name, view);
				const key = `${name}|${v}`;
				const best = results[key];
				// each measure's fastest run; requests and waves are the same run to run
				results[key] =
					best === undefined
						? result
						: { view: result.view.ms < best.view.ms ? result.view : best.view, pan: result.pan.ms < best.pan.ms ? result.pan : best.pan };
			}
		}
	}
} finally {
	await browser.close();
}
console.log(JSON.stringify(results));
