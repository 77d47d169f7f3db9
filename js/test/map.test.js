// The map layer in OpenLayers, MapLibre GL and Leaflet (the npm packages), through the
// example pages of js/examples/, in headless Chromium (WebGL through SwiftShader), on
// the two fields of fixtures.py: a global 0.25 degree field in longitude/latitude
// (latitudes from south to north, longitudes 0 to 360, three days, a NaN box, two
// overviews) and a 1 km field in UTM zone 32N (one overview).
//
// At points spread over each view, the map library says which longitude and latitude
// the pixel shows; the test finds the cell there (helpers.js cellValues: proj4 for
// UTM), at the level the rule gives (the coarsest whose cells are no coarser than a
// pixel of the tile, along each axis), and the colour of that cell's value as numpy
// coarsened it, in the gray colormap: the pixel of the screenshot must have it, or the
// page's background where the value is NaN.  The library's own placement of longitudes and latitudes on the
// screen (north up) is thus what the layer's drawing is checked against; points too
// near a cell's edge, where a rounding decides, are left out.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";

import { chromium } from "playwright-core";
import { cellValues, decodePng, fixtures, readLevels, serveFolders } from "./helpers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const BROWSER = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** WebGL in a headless browser without a GPU: SwiftShader, through ANGLE. */
const FLAGS = ["--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--disable-background-networking", "--disable-component-update", "--no-first-run"];

const WIDTH = 512;
const HEIGHT = 384;
const BACKGROUND = [255, 0, 255]; // the example pages' background, where a pixel is transparent
const R = 6378137;
const RANGE = { global: [-40, 80], utm: [-30, 60] };

let server;
let browser;
let map;
/** @type {Record<string, Float32Array[]>} each field's levels, as numpy coarsened them */
const levels = {};

before(async () => {
	const { dir } = fixtures();
	map = JSON.parse(fs.readFileSync(path.join(dir, "map.json"), "utf8"));
	for (const name of Object.keys(map)) {
		levels[name] = readLevels(dir, map[name]);
	}
	server = await serveFolders({ "/": path.join(here, ".."), "/data/": dir });
	browser = await chromium.launch({ executablePath: BROWSER, headless: true, args: FLAGS });
});

after(async () => {
	await browser?.close();
	await server?.close();
});

/** How each library tells the longitude and latitude of a point of its map, and changes a selection. */
const ADAPTERS = {
	openlayers: {
		lonLat: ([x, y]) => {
			const [mx, my] = globalThis.map.getCoordinateFromPixel([x, y]);
			return [mx, my];
		},
		mercator: true,
		mapZoom: (zoom) => zoom,
		// the UTM grid is drawn as its own tiles, which OpenLayers reprojects (to half a
		// pixel) into tiles it then scales to the view: a pixel of tolerance
		reprojects: (field) => (field === "utm" ? 1 : 0),
		select: (time) => globalThis.source.layer.select({ time }),
	},
	maplibre: {
		lonLat: ([x, y]) => {
			const { lng, lat } = globalThis.map.unproject([x, y]);
			return [lng, lat];
		},
		mercator: false,
		// MapLibre's zoom 0 is a world of 512 pixels: its zoom z shows tiles of 256 pixels of zoom z + 1
		mapZoom: (zoom) => zoom - 1,
		reprojects: () => 0,
		select: (time) => {
			const source = globalThis.map.getSource("field");
			const url = new URL(source.url.replace("hurray://", "http://"));
			source.setUrl(globalThis.hurrayUrl(url.searchParams.get("url"), { select: { time }, colormap: "gray", range: url.searchParams.get("range").split(",").map(Number) }));
		},
	},
	leaflet: {
		lonLat: ([x, y]) => {
			const { lng, lat } = globalThis.map.containerPointToLatLng([x, y]);
			return [lng, lat];
		},
		mercator: false,
		mapZoom: (zoom) => zoom,
		reprojects: () => 0,
		select: (time) => globalThis.layer.layer.select({ time }),
	},
};

/**
 * Open an example page on a field and view; the page once it has drawn.
 * @param {string} adapter
 * @param {string} field
 * @param {{lon: number, lat: number, zoom: number}} view the zoom of the tiles shown
 */
async function openPage(adapter, field, view) {
	const page = await browser.newPage({ viewport: { width: WIDTH, height: HEIGHT } });
	const problems = [];
	page.on("pageerror", (error) => problems.push(error.message));
	const [low, high] = RANGE[field];
	// the view's centre on a corner of the tiles' pixels: each pixel of the page one of a tile
	const pixel = (2 * Math.PI * R) / 2 ** view.zoom / 256;
	const snap = (/** @type {number} */ v) => Math.round(v / pixel) * pixel;
	const x = snap((view.lon * Math.PI * R) / 180);
	const y = snap(R * Math.log(Math.tan(Math.PI / 4 + (view.lat * Math.PI) / 360)));
	const lon = (x / R) * (180 / Math.PI);
	const lat = (2 * Math.atan(Math.exp(y / R)) - Math.PI / 2) * (180 / Math.PI);
	const query = new URLSearchParams({ url: `/data/${map[field].file}`, colormap: "gray", min: low, max: high, lon, lat, zoom: ADAPTERS[adapter].mapZoom(view.zoom) });
	await page.goto(server.url(`examples/${adapter}.html?${query}`));
	await waitReady(page);
	assert.deepEqual(problems, []);
	return page;
}

/** @param {import("playwright-core").Page} page */
async function waitReady(page) {
	await page.waitForSelector("html[data-state=ready], html[data-state=error]", { timeout: 60_000 });
	assert.equal(await page.getAttribute("html", "data-error"), null);
}

/**
 * The colour the layer must show at each point of a grid over the page, and the
 * colour it shows; points too near a cell's edge left out.
 * @param {import("playwright-core").Page} page
 * @param {string} adapter
 * @param {string} field
 * @param {number} zoom the zoom of the tiles shown
 * @param {number} time
 */
async function compare(page, adapter, field, zoom, time) {
	const points = [];
	for (let j = 0; j < 15; j++) {
		for (let i = 0; i < 21; i++) {
			points.push([Math.round(60 + (i * (WIDTH - 120)) / 20) + 0.5, Math.round(60 + (j * (HEIGHT - 120)) / 14) + 0.5]);
		}
	}
	const { lonLat, mercator, reprojects } = ADAPTERS[adapter];
	const places = await page.evaluate(`${JSON.stringify(points)}.map(${lonLat.toString()})`);
	const lonLats = mercator ? places.map(([x, y]) => [(x / R) * (180 / Math.PI), (2 * Math.atan(Math.exp(y / R)) - Math.PI / 2) * (180 / Math.PI)]) : places;
	const shot = decodePng(await page.screenshot());
	const checked = [];
	points.forEach(([x, y], k) => {
		const [lon, lat] = lonLats[k];
		const want = expected(field, lon, lat, zoom, time, reprojects(field));
		if (want === null) {
			return;
		}
		const p = 4 * (Math.floor(y) * shot.width + Math.floor(x));
		checked.push({ point: [x, y], lon, lat, level: want.level, want: want.rgbs, got: Array.from(shot.rgba.subarray(p, p + 3)) });
	});
	return checked;
}

/**
 * The colours the cell at (`lon`, `lat`) may have on the map (see cellValues): the
 * gray of each value over the field's range, the page's background for NaN.
 * @param {string} field
 * @param {number} lon
 * @param {number} lat
 * @param {number} zoom
 * @param {number} time
 * @param {number} tolerance
 */
function expected(field, lon, lat, zoom, time, tolerance) {
	const found = cellValues(map[field], levels[field], lon, lat, zoom, time, tolerance);
	if (found === null) {
		return null;
	}
	const [low, high] = RANGE[field];
	const rgbs = found.values.map((v) => {
		const g = Math.min(255, Math.max(0, Math.round(((v - low) * 255) / (high - low))));
		return Number.isNaN(v) ? BACKGROUND : [g, g, g];
	});
	return { level: found.level, rgbs };
}

/**
 * Assert that every checked point has its colour (within 2 of each channel), and that
 * enough points were checked.
 * @param {Awaited<ReturnType<typeof compare>>} checked
 * @param {{least: number, missing?: boolean, levels?: number[]}} expect
 */
function assertColours(checked, { least, missing = false, levels: wanted }) {
	const wrong = checked.filter(({ want, got }) => !want.some((rgb) => rgb.every((v, c) => Math.abs(v - got[c]) <= 2)));
	assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} of ${checked.length} points have another colour: ${JSON.stringify(wrong.slice(0, 5))}`);
	assert.ok(checked.length >= least, `only ${checked.length} points checked`);
	if (missing) {
		assert.ok(
			checked.some(({ want }) => want.every((rgb) => rgb === BACKGROUND)),
			"no point of the view falls in the NaN box",
		);
	}
	if (wanted) {
		assert.deepEqual([...new Set(checked.map(({ level }) => level))].sort(), wanted);
	}
}

for (const adapter of Object.keys(ADAPTERS)) {
	test(`${adapter}: the global field across the antimeridian, its NaN box transparent, north up; another day`, async () => {
		const view = { lon: 175, lat: 12, zoom: 3 };
		const page = await openPage(adapter, "global", view);
		const first = await compare(page, adapter, "global", view.zoom, 0);
		assertColours(first, { least: 60, missing: true, levels: [0] });
		// east and west of the antimeridian both drawn
		assert.ok(first.some(({ lon }) => lon > 180 || lon < -180 + 1e-9 || (lon < 0 && lon > -180)));
		assert.ok(first.some(({ lon }) => lon > 0 && lon < 180));
		// north up: at one longitude, the value grows to the north (lat / 3), and so does the gray
		const column = first.filter(({ point, want }) => point[0] === first[0].point[0] && want[0] !== BACKGROUND);
		assert.ok(column.length >= 3 && column[0].got[0] > column[column.length - 1].got[0]);
		await page.evaluate(() => {
			document.documentElement.dataset.state = "loading";
		});
		await page.evaluate(`(${ADAPTERS[adapter].select.toString()})(2)`);
		await waitReady(page);
		const third = await compare(page, adapter, "global", view.zoom, 2);
		assertColours(third, { least: 60, missing: true });
		// the day changed the pixels: each point drawn on both days 40 K warmer, lighter but where the gray is already white
		const before = new Map(first.map(({ point, got }) => [String(point), got[0]]));
		const both = third.filter(({ point, want }) => want[0] !== BACKGROUND && before.has(String(point)));
		assert.ok(both.length >= 20 && both.every(({ point, got }) => got[0] > /** @type {number} */ (before.get(String(point))) || got[0] === 255));
		await page.close();
	});

	test(`${adapter}: the global field whole, from its coarser levels, across the 0-360 grid's seam`, async () => {
		const view = { lon: 0, lat: 0, zoom: 1 };
		const page = await openPage(adapter, "global", view);
		assertColours(await compare(page, adapter, "global", view.zoom, 0), { least: 60 });
		await page.close();
	});

	for (const [zoom, level] of [
		[7, 0],
		[5, 1],
	]) {
		test(`${adapter}: the UTM 32N field at zoom ${zoom}, level ${level}`, async () => {
			const view = { lon: 9.5, lat: 47.5, zoom };
			const page = await openPage(adapter, "utm", view);
			assertColours(await compare(page, adapter, "utm", zoom, 0), { least: zoom === 7 ? 60 : 30, missing: zoom === 7, levels: [level] });
			await page.close();
		});
	}
}
