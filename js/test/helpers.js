// What the tests share: the files the Python writer makes for this run (made once,
// by fixtures.py, into a temporary folder) and a local HTTP server of Range requests
// that counts what it answers.

import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { fileURLToPath } from "node:url";

import proj4 from "proj4";

const here = path.dirname(fileURLToPath(import.meta.url));

/** The Python interpreter that writes the fixtures: $PYTHON, else python3. */
export const PYTHON = process.env.PYTHON ?? "python3";

let made = null;

/**
 * The folder of this run's fixtures and its manifest: $HURRAY_JS_FIXTURES where set
 * (made there before the run: `python test/fixtures.py DIR`, so that the test files,
 * each run in a process of its own, share one), else made at the first call.
 * @returns {{dir: string, manifest: any}}
 */
export function fixtures() {
	const given = process.env.HURRAY_JS_FIXTURES;
	if (made === null && given) {
		made = { dir: given, manifest: JSON.parse(fs.readFileSync(path.join(given, "manifest.json"), "utf8")) };
	}
	if (made === null) {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hurray-js-"));
		execFileSync(PYTHON, [path.join(here, "fixtures.py"), dir], { stdio: ["ignore", "ignore", "inherit"] });
		process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
		made = { dir, manifest: JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")) };
	}
	return made;
}

/** Content types of the files the pages load. */
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css", ".json": "application/json", ".png": "image/png" };

/**
 * What the server does with a Range request for bytes [start, stop) of the file at
 * `name` (its URL path without the leading "/"; the `count`-th Range request it gets,
 * from 0): answer `status` with no body instead, wait `delay` milliseconds first, and
 * send `headers` with the answer.
 * @typedef {(request: {name: string, start: number, stop: number, count: number}) =>
 *   {status?: number, delay?: number, headers?: Record<string, string>} | undefined} Intercept
 */

/**
 * Serve the files of `dir` on 127.0.0.1 with single Range requests, counting them.
 * @param {string} dir
 */
export function rangeServer(dir) {
	return serveFolders({ "/": dir });
}

/**
 * Serve folders on 127.0.0.1, each under its URL prefix ("/" and "/data/", say), with
 * single Range requests; the ranges asked for are logged, and the requests whose
 * client went away before the answer counted (`dropped`).  `intercept`, when set,
 * chooses what an answer to a Range request is (see Intercept).  A file is read again
 * for every request: a test may replace it.
 * @param {Record<string, string>} folders URL prefix to folder
 * @param {{delay?: number}} [options] milliseconds before each answer to a Range request
 * @returns {Promise<{url: (name: string) => string, log: {start: number, stop: number}[], dropped: () => number, intercept: Intercept | null, close: () => Promise<void>}>}
 */
export async function serveFolders(folders, { delay = 0 } = {}) {
	const log = [];
	let dropped = 0;
	const prefixes = Object.keys(folders).sort((a, b) => b.length - a.length);
	const server = http.createServer((request, response) => {
		const route = decodeURIComponent(new URL(request.url, "http://x").pathname);
		const prefix = prefixes.find((p) => route.startsWith(p));
		const root = prefix === undefined ? null : path.resolve(folders[prefix]);
		const file = root === null ? null : path.join(root, route.slice(prefix.length));
		if (file === null || !file.startsWith(root) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
			response.writeHead(404).end();
			return;
		}
		const data = fs.readFileSync(file);
		const type = TYPES[path.extname(file)] ?? "application/octet-stream";
		const match = /^bytes=(\d+)-(\d+)$/.exec(request.headers.range ?? "");
		if (match === null) {
			response.writeHead(200, { "Content-Length": data.length, "Content-Type": type }).end(data);
			return;
		}
		const start = Number(match[1]);
		const stop = Math.min(Number(match[2]) + 1, data.length);
		const chosen = served.intercept?.({ name: route.slice(1), start, stop, count: log.length }) ?? {};
		log.push({ start, stop });
		const answer = () => {
			if (response.destroyed || request.destroyed) {
				dropped++;
			} else if (chosen.status) {
				response.writeHead(chosen.status).end();
			} else if (start >= data.length) {
				response.writeHead(416, { "Content-Range": `bytes */${data.length}` }).end();
			} else {
				response
					.writeHead(206, {
						"Content-Range": `bytes ${start}-${stop - 1}/${data.length}`,
						"Content-Length": stop - start,
						"Content-Type": type,
						...chosen.headers,
					})
					.end(data.subarray(start, stop));
			}
		};
		const wait = delay + (chosen.delay ?? 0);
		if (wait > 0) {
			setTimeout(answer, wait);
		} else {
			answer();
		}
	});
	await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address();
	const served = {
		url: (/** @type {string} */ name) => `http://127.0.0.1:${port}/${name}`,
		log,
		dropped: () => dropped,
		/** @type {Intercept | null} */
		intercept: null,
		close: () =>
			/** @type {Promise<void>} */ (
				new Promise((resolve) => {
					server.closeAllConnections?.();
					server.close(() => resolve());
				})
			),
	};
	return served;
}

/**
 * The pixels of a PNG of 8-bit RGB or RGBA, not interlaced (as a browser's screenshot
 * is), as RGBA bytes.
 * @param {Buffer} png
 * @returns {{width: number, height: number, rgba: Uint8Array}}
 */
export function decodePng(png) {
	let at = 8;
	let width = 0;
	let height = 0;
	let channels = 0;
	const data = [];
	while (at < png.length) {
		const length = png.readUInt32BE(at);
		const type = png.toString("latin1", at + 4, at + 8);
		const body = png.subarray(at + 8, at + 8 + length);
		if (type === "IHDR") {
			width = body.readUInt32BE(0);
			height = body.readUInt32BE(4);
			const [depth, colour, , , interlace] = body.subarray(8, 13);
			channels = { 2: 3, 6: 4 }[colour] ?? 0;
			if (depth !== 8 || channels === 0 || interlace !== 0) {
				throw new Error(`a PNG of depth ${depth}, colour type ${colour}, interlace ${interlace}: not decoded here`);
			}
		} else if (type === "IDAT") {
			data.push(body);
		}
		at += 12 + length;
	}
	const raw = zlib.inflateSync(Buffer.concat(data));
	const stride = width * channels;
	const rows = new Uint8Array(height * stride);
	for (let y = 0; y < height; y++) {
		const filter = raw[y * (stride + 1)];
		const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
		const out = rows.subarray(y * stride, (y + 1) * stride);
		const up = y > 0 ? rows.subarray((y - 1) * stride, y * stride) : new Uint8Array(stride);
		for (let i = 0; i < stride; i++) {
			const a = i >= channels ? out[i - channels] : 0;
			const b = up[i];
			const c = i >= channels ? up[i - channels] : 0;
			const p = a + b - c;
			const predictor = [0, a, b, (a + b) >> 1, Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c][filter];
			out[i] = (line[i] + predictor) & 255;
		}
	}
	const rgba = new Uint8Array(width * height * 4);
	for (let k = 0; k < width * height; k++) {
		rgba.set(rows.subarray(k * channels, k * channels + 3), 4 * k);
		rgba[4 * k + 3] = channels === 4 ? rows[k * channels + 3] : 255;
	}
	return { width, height, rgba };
}

/**
 * The levels of a field of map.json (fixtures.py), as numpy coarsened them.
 * @param {string} dir
 * @param {{levels: {bin: string}[]}} field
 */
export function readLevels(dir, field) {
	return field.levels.map((level) => {
		const bytes = fs.readFileSync(path.join(dir, level.bin));
		return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
	});
}

const R = 6378137;
const UTM_32N = "+proj=utm +zone=32 +datum=WGS84 +units=m +no_defs";

/** The level and cell size of each tile cellValues has met. */
const tileLevels = new Map();

/**
 * What a map must show at (`lon`, `lat`) of a field of map.json, on day `time`, in a
 * Web Mercator tile of zoom `zoom`: the level the rule of docs/spec/overviews.md gives
 * for that tile (the coarsest whose cells are no larger than the tile's extent in the
 * field's CRS over its pixels, diagonal over diagonal) and the value of its cell
 * under the point (of every cell within `tolerance` pixels, for a map that
 * reprojects to that tolerance; NaN outside the grid).  Null where the point lies
 * too near a cell's edge for rounding not to decide it, or the level's cells too near
 * the tile's cell size.
 * @param {any} field
 * @param {Float32Array[]} levels
 * @param {number} lon
 * @param {number} lat
 * @param {number} zoom
 * @param {number} time
 * @param {number} [tolerance]
 * @returns {{level: number, values: number[]} | null}
 */
export function cellValues(field, levels, lon, lat, zoom, time, tolerance = 0) {
	const span = (2 * Math.PI * R) / 2 ** zoom;
	const toLonLat = (/** @type {number} */ mx, /** @type {number} */ my) => [(mx / R) * (180 / Math.PI), (2 * Math.atan(Math.exp(my / R)) - Math.PI / 2) * (180 / Math.PI)];
	const my = R * Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360));
	const left = -Math.PI * R + Math.floor((((lon + 180) % 360) + 360) % 360 / 360 * 2 ** zoom) * span;
	const top = Math.PI * R - Math.floor((Math.PI * R - my) / span) * span;
	const geographic = field.south !== undefined;
	const toField = (/** @type {number} */ lo, /** @type {number} */ la) => (geographic ? [lo, la] : proj4(UTM_32N, [lo, la]));
	const key = `${field.file}/${zoom}/${left}/${top}`;
	let tile = tileLevels.get(key);
	if (tile === undefined) {
		// the tile's extent in the field's CRS, by brute force: the bounds of every pixel
		// corner on its outline (a projection maps the outline of a square to the
		// outline of its image, so no point inside reaches further); the rule samples
		// each edge at 16 points, which a tile whose levels are this close to its cell
		// size cannot tell apart (`close` below)
		const outline = [];
		for (let p = 0; p <= 256; p++) {
			outline.push([p, 0], [p, 256], [0, p], [256, p]);
		}
		const corners = outline.map(([i, j]) => toField(...toLonLat(left + (i / 256) * span, top - (j / 256) * span)));
		const xs = corners.map(([x]) => x);
		const ys = corners.map(([, y]) => y);
		const size = Math.hypot(Math.max(...xs) - Math.min(...xs), Math.max(...ys) - Math.min(...ys)) / Math.hypot(256, 256);
		let k = 0;
		field.levels.forEach((level, j) => {
			if (level.factor * field.cell <= size * (1 + 1e-9)) {
				k = j;
			}
		});
		const close = Math.min(...field.levels.map((level) => Math.abs(Math.log((level.factor * field.cell) / size)))) < 0.05;
		tile = { k, size, close };
		tileLevels.set(key, tile);
	}
	const { k, size, close } = tile;
	if (close) {
		return null;
	}
	const [x, y] = toField(lon, lat);
	const col = geographic ? ((((x - field.west) % 360) + 360) % 360) / field.cell : (x - field.west) / field.cell;
	const row = geographic ? (y - field.south) / field.cell : (field.north - y) / field.cell;
	const cellsPerPixel = size / field.cell;
	const { factor, shape } = field.levels[k];
	const [rows, cols] = shape.slice(-2);
	const c = col / factor;
	const r = row / factor;
	const reach = (tolerance * cellsPerPixel) / factor; // the tolerance in cells of the level
	const edge = Math.min(c - Math.floor(c), Math.ceil(c) - c, r - Math.floor(r), Math.ceil(r) - r);
	if (reach === 0 && edge < 0.2) {
		return null;
	}
	const values = [];
	for (let i = Math.floor(r - reach); i <= Math.floor(r + reach); i++) {
		for (let j = Math.floor(c - reach); j <= Math.floor(c + reach); j++) {
			const inside = i >= 0 && i < rows && j >= 0 && j < cols;
			values.push(inside ? levels[k][time * rows * cols + i * cols + j] : Number.NaN);
		}
	}
	return { level: k, values };
}
