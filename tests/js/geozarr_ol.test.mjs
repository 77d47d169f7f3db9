// OpenLayers' GeoZarr source (npm's `ol`) renders the pyramid `to_zarr(..., overviews=2)`
// wrote (tests/interop/test_interop_write.py, into HURRAY_INTEROP_DIR) in headless
// Chromium (Debian's, driven through playwright-core), with nothing but the store's
// own metadata: a map of 1° pixels in EPSG:4326 shows the level of 1° cells, each
// pixel the colormap's colour of its cell's value, and the NaN box transparent.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";
import { chromium } from "playwright-core";

const directory = process.env.HURRAY_INTEROP_DIR;
if (!directory) {
	throw new Error("set HURRAY_INTEROP_DIR to the directory the Python tests wrote");
}
const expected = JSON.parse(fs.readFileSync(path.join(directory, "geozarr.json"), "utf8"));
const here = path.dirname(fileURLToPath(import.meta.url));

/** The browser: $CHROMIUM, else Debian's. */
const BROWSER = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** The colormap: 0 red, 1 blue, linear between (OpenLayers' style expression). */
const STYLE = ["interpolate", ["linear"], ["band", 1], 0, [255, 0, 0, 1], 1, [0, 0, 255, 1]];

// The page: a map of 360 x 180 pixels of 1° over the whole Earth, its pixels read back
// once every tile is drawn.
const PAGE_SCRIPT = `
import Map from "ol/Map.js";
import View from "ol/View.js";
import TileLayer from "ol/layer/WebGLTile.js";
import GeoZarr from "ol/source/GeoZarr.js";

const source = new GeoZarr({ url: new URL("/data/${expected.path}", location.href).href, bands: ["t"] });
const layer = new TileLayer({ source, style: { color: ${JSON.stringify(STYLE)} } });
const map = new Map({
	target: "map",
	layers: [layer],
	view: new View({ projection: "EPSG:4326", center: [0, 0], resolution: 1 }),
});
source.on("change", () => {
	if (source.getState() === "error") document.body.dataset.state = "error: " + source.error_;
});
// a WebGL canvas keeps its pixels only while its frame is drawn: copy them then
const copy = document.createElement("canvas");
copy.width = 360;
copy.height = 180;
const context = copy.getContext("2d", { willReadFrequently: true });
layer.on("postrender", (event) => {
	context.clearRect(0, 0, 360, 180);
	context.drawImage(event.context.canvas, 0, 0, 360, 180);
});
// a frame drawn before the source has read its metadata (a slow machine) holds no
// tiles: the first complete frame once the source is ready is the one to read
const read = () => {
	if (source.getState() !== "ready") return;
	map.un("rendercomplete", read);
	window.pixels = Array.from(context.getImageData(0, 0, 360, 180).data);
	document.body.dataset.state = "ready";
};
map.on("rendercomplete", read);
`;

const PAGE = `<!doctype html><html><head><meta charset="utf-8">
<style>html, body { margin: 0; background: transparent } #map { width: 360px; height: 180px }</style>
</head><body><div id="map"></div><script type="module" src="/page.js"></script></body></html>`;

let server;
let context;
let profile;
let origin;
let bundle;

/** Serve the page, its bundle, and the files of HURRAY_INTEROP_DIR with single Range
 * headers, as an object store does. */
function serve(request, response) {
	const url = new URL(request.url, "http://localhost");
	if (url.pathname === "/") {
		response.writeHead(200, { "Content-Type": "text/html" }).end(PAGE);
		return;
	}
	if (url.pathname === "/page.js") {
		response.writeHead(200, { "Content-Type": "text/javascript" }).end(bundle);
		return;
	}
	const file = path.join(directory, decodeURIComponent(url.pathname.slice("/data/".length)));
	if (!url.pathname.startsWith("/data/") || !file.startsWith(directory) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
		response.writeHead(404).end();
		return;
	}
	const body = fs.readFileSync(file);
	const range = /^bytes=(\d*)-(\d*)$/.exec(request.headers.range ?? "");
	if (!range) {
		response.writeHead(200, { "Content-Length": body.length }).end(body);
		return;
	}
	const start = range[1] === "" ? body.length - Number(range[2]) : Number(range[1]);
	const stop = range[1] === "" || range[2] === "" ? body.length : Math.min(Number(range[2]) + 1, body.length);
	response
		.writeHead(206, { "Content-Range": `bytes ${start}-${stop - 1}/${body.length}`, "Content-Length": stop - start })
		.end(body.subarray(start, stop));
}

before(async () => {
	const built = await esbuild.build({
		stdin: { contents: PAGE_SCRIPT, resolveDir: here, loader: "js" },
		bundle: true,
		format: "esm",
		write: false,
		logLevel: "error",
	});
	bundle = built.outputFiles[0].text;
	server = http.createServer(serve);
	await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
	origin = `http://127.0.0.1:${server.address().port}`;
	profile = fs.mkdtempSync(path.join(os.tmpdir(), "hurray-ol-"));
	context = await chromium.launchPersistentContext(profile, {
		executablePath: BROWSER,
		headless: true,
		args: ["--headless", "--no-sandbox", "--disable-background-networking", "--no-first-run", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"],
		viewport: { width: 360, height: 180 },
		deviceScaleFactor: 1,
	});
});

after(async () => {
	await context?.close();
	server?.close();
	if (profile) fs.rmSync(profile, { recursive: true, force: true });
});

test("OpenLayers' GeoZarr source draws the coarsest level, its NaN box transparent", async () => {
	const page = await context.newPage();
	const errors = [];
	page.on("pageerror", (error) => errors.push(String(error)));
	await page.goto(`${origin}/`);
	await page.waitForFunction(() => document.body.dataset.state, null, { timeout: 60_000 });
	assert.equal(await page.evaluate(() => document.body.dataset.state), "ready", errors.join("\n"));
	const pixels = await page.evaluate(() => window.pixels);
	const [rows, columns] = expected.shape;
	assert.deepEqual([rows, columns], [180, 360]);
	const raw = fs.readFileSync(path.join(directory, expected.level));
	const values = new Float32Array(raw.buffer, raw.byteOffset, rows * columns);
	let checked = 0;
	let transparent = 0;
	// every pixel away from the edges of cells is its cell's colour (the map's pixels
	// are the level's cells: 1° each, the same corner)
	for (let row = 0; row < rows; row++) {
		for (let column = 0; column < columns; column++) {
			const value = values[row * columns + column];
			const [r, g, b, a] = pixels.slice(4 * (row * columns + column), 4 * (row * columns + column) + 4);
			if (Number.isNaN(value)) {
				assert.equal(a, 0, `the NaN cell at row ${row}, column ${column} is drawn`);
				transparent += 1;
				continue;
			}
			const want = [255 * (1 - value), 0, 255 * value, 255];
			const got = [r, g, b, a];
			for (let k = 0; k < 4; k++) {
				assert.ok(
					Math.abs(got[k] - want[k]) <= 3,
					`row ${row}, column ${column}: value ${value} drawn ${got}, not ${want.map(Math.round)}`,
				);
			}
			checked += 1;
		}
	}
	assert.ok(transparent >= 10 * 20 && checked > 60_000, `${transparent} transparent, ${checked} checked`);
	await page.close();
});
