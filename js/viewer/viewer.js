// The viewer: a variable of a Hurray file on a zoomable, pannable map, read straight
// from its URL by Range requests.  The query string names the file (`url`) and,
// optionally, the variable, the colormap and the value range (`variable`,
// `colormap`, `min`, `max`).  A pyramid (docs/spec/overviews.md) is drawn from the
// level whose cells are closest to the screen's pixels without being smaller; the
// visible tiles (the chunks of that level) missing from the view are read in one
// call, so that their chunks come in merged requests.  `<html data-state>` is
// "loading", then "ready" once the first view is drawn whole (or "error");
// `data-level` is the level of the last view drawn whole.

import { openHurray } from "../src/hurray.js";
import { COLORMAPS, lookupTable } from "./colormaps.js";

const params = new URLSearchParams(location.search);
const html = document.documentElement;
const canvas = /** @type {HTMLCanvasElement} */ (document.getElementById("map"));
const context = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
const element = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

/**
 * @typedef {object} Level
 * @property {string} path
 * @property {number} factor level-0 cells per cell along y and x
 * @property {number[]} shape
 * @property {number[]} chunks
 */

/**
 * @typedef {object} Tile
 * @property {ArrayLike<number>} data
 * @property {number} rows
 * @property {number} cols
 * @property {HTMLCanvasElement} image
 */

const view = {
	/** @type {import("../src/reader.js").HurrayFile | null} */
	file: null,
	/** @type {Map<string, {levels: Level[], coords: (string | null)[]}>} */
	choices: new Map(),
	/** @type {Level[]} */
	levels: [],
	/** @type {(ArrayLike<number> | null)[]} level-0 coordinates along y and x */
	coords: [null, null],
	/** @type {string[]} */
	dims: [],
	fill: Number.NaN,
	/** @type {Map<string, Tile>} */
	tiles: new Map(),
	/** @type {Set<string>} */
	loading: new Set(),
	/** @type {[number, number] | null} */
	range: null,
	table: lookupTable(params.get("colormap") ?? "viridis"),
	scale: 1,
	center: [0, 0],
	generation: 0,
};

main().catch(fail);

async function main() {
	const url = params.get("url");
	if (!url) {
		throw new Error("give the file's URL in the query string: ?url=...");
	}
	view.file = await openHurray(new URL(url, location.href).href);
	view.choices = mapVariables(view.file);
	if (view.choices.size === 0) {
		throw new Error("the file holds no variable of two or more dimensions");
	}
	const variables = /** @type {HTMLSelectElement} */ (element("variable"));
	for (const name of view.choices.keys()) {
		variables.add(new Option(name, name));
	}
	const colormaps = /** @type {HTMLSelectElement} */ (element("colormap"));
	for (const name of COLORMAPS) {
		colormaps.add(new Option(name, name));
	}
	colormaps.value = COLORMAPS.includes(params.get("colormap") ?? "") ? /** @type {string} */ (params.get("colormap")) : "viridis";
	const wanted = params.get("variable");
	variables.value = wanted && view.choices.has(wanted) ? wanted : /** @type {string} */ (view.choices.keys().next().value);
	variables.addEventListener("change", () => choose(variables.value).catch(fail));
	colormaps.addEventListener("change", () => {
		view.table = lookupTable(colormaps.value);
		for (const tile of view.tiles.values()) {
			paint(tile);
		}
		drawColorbar();
		draw();
	});
	listen();
	await choose(variables.value);
}

/**
 * The variables a map can show: those of two or more dimensions, each with its
 * levels (one for a file without overviews) and its y and x coordinate variables.
 * @param {import("../src/reader.js").HurrayFile} file
 */
function mapVariables(file) {
	const choices = new Map();
	const record = typeof file.attrs.hurray_overviews === "string" ? JSON.parse(file.attrs.hurray_overviews) : null;
	const factors = record ? [1, ...record.factors] : [1];
	for (const path of file.variables) {
		const v = file.variable(path);
		const group = path.slice(0, path.length - v.name.length);
		if (v.shape.length < 2 || (record && group !== "0/")) {
			continue;
		}
		const paths = record ? factors.map((_, k) => `${k}/${v.name}`) : [path];
		const levels = paths.map((p, k) => {
			const level = file.variable(p);
			return { path: p, factor: factors[k], shape: level.shape, chunks: level.chunks };
		});
		const coords = v.dims.slice(-2).map((dim) => {
			const coord = `${group}${dim}`;
			return file.variables.includes(coord) && file.variable(coord).shape.length === 1 ? coord : null;
		});
		choices.set(record ? v.name : path, { levels, coords });
	}
	return choices;
}

/** @param {string} name */
async function choose(name) {
	const file = /** @type {import("../src/reader.js").HurrayFile} */ (view.file);
	const choice = /** @type {{levels: Level[], coords: (string | null)[]}} */ (view.choices.get(name));
	const first = file.variable(choice.levels[0].path);
	view.generation++;
	view.levels = choice.levels;
	view.dims = first.dims.slice(-2);
	const fill = first.attrs._FillValue ?? first.attrs.missing_value;
	view.fill = typeof fill === "number" ? fill : Number.NaN;
	view.tiles = new Map();
	view.loading = new Set();
	const low = Number(params.get("min"));
	const high = Number(params.get("max"));
	view.range = params.has("min") && params.has("max") && high > low ? [low, high] : null;
	view.coords = await Promise.all(choice.coords.map(async (c) => (c ? (await file.read(c)).data : null)));
	const [ny, nx] = first.shape.slice(-2);
	view.scale = Math.min(canvas.clientWidth / nx, canvas.clientHeight / ny);
	view.center = [ny / 2, nx / 2];
	update();
}

/** The level drawn at the current scale: the coarsest whose cells are no smaller than a pixel. */
function currentLevel() {
	let k = 0;
	view.levels.forEach((level, j) => {
		if (level.factor * view.scale <= 1) {
			k = j;
		}
	});
	return k;
}

/**
 * The tiles of level `k` the view shows, as [row, column] of its chunk grid.
 * @param {number} k
 */
function visibleTiles(k) {
	const { factor, shape, chunks } = view.levels[k];
	const [ny, nx] = shape.slice(-2);
	const [cy, cx] = chunks.slice(-2);
	const w = canvas.width;
	const h = canvas.height;
	const span = (/** @type {number} */ center, /** @type {number} */ size, /** @type {number} */ n, /** @type {number} */ c) => {
		const lo = Math.max(0, Math.floor((center - size / 2 / view.scale) / factor / c));
		const hi = Math.min(Math.ceil(n / c), Math.ceil((center + size / 2 / view.scale) / factor / c));
		return [lo, hi];
	};
	const [r0, r1] = span(view.center[0], h, ny, cy);
	const [c0, c1] = span(view.center[1], w, nx, cx);
	const out = [];
	for (let r = r0; r < r1; r++) {
		for (let c = c0; c < c1; c++) {
			out.push([r, c]);
		}
	}
	return out;
}

/** Draw what is there, and read the tiles of the current level that are missing. */
function update() {
	resize();
	draw();
	const k = currentLevel();
	const level = view.levels[k];
	const missing = visibleTiles(k).filter(([r, c]) => !view.tiles.has(key(k, r, c)) && !view.loading.has(key(k, r, c)));
	if (missing.length === 0) {
		return;
	}
	const [cy, cx] = level.chunks.slice(-2);
	const [ny, nx] = level.shape.slice(-2);
	const lead = level.shape.slice(0, -2).map(() => /** @type {[number, number]} */ ([0, 1]));
	const boxes = missing.map(([r, c]) => [...lead, [r * cy, Math.min((r + 1) * cy, ny)], [c * cx, Math.min((c + 1) * cx, nx)]]);
	missing.forEach(([r, c]) => view.loading.add(key(k, r, c)));
	const generation = view.generation;
	const file = /** @type {import("../src/reader.js").HurrayFile} */ (view.file);
	file
		.readMany(level.path, /** @type {[number, number][][]} */ (boxes))
		.then((results) => {
			if (generation !== view.generation) {
				return;
			}
			if (view.range === null) {
				view.range = valueRange(results.map((r) => /** @type {ArrayLike<number>} */ (r.data)));
				drawColorbar();
			}
			results.forEach((result, j) => {
				const [r, c] = missing[j];
				const shape = result.shape.slice(-2);
				const tile = { data: /** @type {ArrayLike<number>} */ (result.data), rows: shape[0], cols: shape[1], image: document.createElement("canvas") };
				paint(tile);
				view.tiles.set(key(k, r, c), tile);
				view.loading.delete(key(k, r, c));
			});
			update();
		})
		.catch(fail);
}

/**
 * @param {number} k
 * @param {number} r
 * @param {number} c
 */
function key(k, r, c) {
	return `${k}/${r}/${c}`;
}

/**
 * The least and greatest value shown: NaN and the fill value left out.
 * @param {ArrayLike<number>[]} arrays
 * @returns {[number, number]}
 */
function valueRange(arrays) {
	let low = Number.POSITIVE_INFINITY;
	let high = Number.NEGATIVE_INFINITY;
	for (const data of arrays) {
		for (let i = 0; i < data.length; i++) {
			const v = Number(data[i]);
			if (v === v && v !== view.fill && Number.isFinite(v)) {
				low = v < low ? v : low;
				high = v > high ? v : high;
			}
		}
	}
	if (low > high) {
		return [0, 1];
	}
	return high > low ? [low, high] : [low - 0.5, high + 0.5];
}

/** @param {Tile} tile */
function paint(tile) {
	const [low, high] = view.range ?? [0, 1];
	tile.image.width = tile.cols;
	tile.image.height = tile.rows;
	const g = /** @type {CanvasRenderingContext2D} */ (tile.image.getContext("2d"));
	const image = g.createImageData(tile.cols, tile.rows);
	const pixels = image.data;
	const table = view.table;
	const step = 255 / (high - low);
	for (let i = 0; i < tile.rows * tile.cols; i++) {
		const v = Number(tile.data[i]);
		if (v !== v || v === view.fill) {
			continue; // transparent: no value here
		}
		const k = 4 * Math.min(255, Math.max(0, Math.round((v - low) * step)));
		pixels[4 * i] = table[k];
		pixels[4 * i + 1] = table[k + 1];
		pixels[4 * i + 2] = table[k + 2];
		pixels[4 * i + 3] = 255;
	}
	g.putImageData(image, 0, 0);
}

/** Draw the cached tiles of every level from the coarsest to the current one. */
function draw() {
	const k = currentLevel();
	context.setTransform(1, 0, 0, 1, 0, 0);
	context.clearRect(0, 0, canvas.width, canvas.height);
	context.imageSmoothingEnabled = false;
	let whole = true;
	for (let j = view.levels.length - 1; j >= k; j--) {
		const { factor, chunks } = view.levels[j];
		const [cy, cx] = chunks.slice(-2);
		for (const [r, c] of visibleTiles(j)) {
			const tile = view.tiles.get(key(j, r, c));
			if (tile === undefined) {
				whole &&= j !== k;
				continue;
			}
			const [x, y] = toScreen(r * cy * factor, c * cx * factor);
			const size = view.scale * factor;
			context.drawImage(tile.image, x, y, tile.cols * size, tile.rows * size);
		}
	}
	element("level").textContent = view.levels.length > 1 ? `level ${k} of ${view.levels.length - 1}` : "";
	if (whole && view.range !== null) {
		html.dataset.level = String(k);
		if (html.dataset.state !== "ready") {
			// when the first view was drawn, in milliseconds since the page began to load
			html.dataset.readyMs = String(Math.round(performance.now()));
			html.dataset.state = "ready";
		}
	}
}

/**
 * Screen position of the level-0 cell corner (`row`, `col`).
 * @param {number} row
 * @param {number} col
 * @returns {[number, number]}
 */
function toScreen(row, col) {
	return [canvas.width / 2 + (col - view.center[1]) * view.scale, canvas.height / 2 + (row - view.center[0]) * view.scale];
}

function drawColorbar() {
	const bar = /** @type {HTMLCanvasElement} */ (element("colorbar"));
	const g = /** @type {CanvasRenderingContext2D} */ (bar.getContext("2d"));
	const image = g.createImageData(256, bar.height);
	for (let y = 0; y < bar.height; y++) {
		image.data.set(view.table, y * 256 * 4);
	}
	g.putImageData(image, 0, 0);
	const [low, high] = view.range ?? [0, 1];
	element("min").textContent = format(low);
	element("max").textContent = format(high);
}

/** @param {number} v */
function format(v) {
	return Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : String(Number(v.toPrecision(5)));
}

function resize() {
	if (canvas.width !== canvas.clientWidth || canvas.height !== canvas.clientHeight) {
		canvas.width = canvas.clientWidth;
		canvas.height = canvas.clientHeight;
	}
}

/**
 * Zoom by `factor` around the screen point (`x`, `y`), which keeps its cell.
 * @param {number} factor
 * @param {number} x
 * @param {number} y
 */
function zoom(factor, x, y) {
	const [ny, nx] = view.levels[0].shape.slice(-2);
	const fit = Math.min(canvas.width / nx, canvas.height / ny);
	const scale = Math.min(64, Math.max(fit / 4, view.scale * factor));
	const row = view.center[0] + (y - canvas.height / 2) / view.scale;
	const col = view.center[1] + (x - canvas.width / 2) / view.scale;
	view.scale = scale;
	view.center = [row - (y - canvas.height / 2) / scale, col - (x - canvas.width / 2) / scale];
	update();
}

function listen() {
	/** @type {[number, number] | null} */
	let dragged = null;
	canvas.addEventListener("pointerdown", (event) => {
		dragged = [event.clientX, event.clientY];
		canvas.setPointerCapture(event.pointerId);
		canvas.classList.add("dragging");
	});
	canvas.addEventListener("pointerup", () => {
		dragged = null;
		canvas.classList.remove("dragging");
	});
	canvas.addEventListener("pointermove", (event) => {
		if (dragged !== null) {
			view.center = [view.center[0] - (event.clientY - dragged[1]) / view.scale, view.center[1] - (event.clientX - dragged[0]) / view.scale];
			dragged = [event.clientX, event.clientY];
			update();
		}
		showCursor(event.offsetX, event.offsetY);
	});
	canvas.addEventListener(
		"wheel",
		(event) => {
			event.preventDefault();
			zoom(Math.exp(-event.deltaY * 0.002), event.offsetX, event.offsetY);
		},
		{ passive: false },
	);
	element("zoom-in").addEventListener("click", () => zoom(2, canvas.width / 2, canvas.height / 2));
	element("zoom-out").addEventListener("click", () => zoom(0.5, canvas.width / 2, canvas.height / 2));
	addEventListener("resize", update);
}

/**
 * The coordinates and the value under the screen point (`x`, `y`).
 * @param {number} x
 * @param {number} y
 */
function showCursor(x, y) {
	const row = Math.floor(view.center[0] + (y - canvas.height / 2) / view.scale);
	const col = Math.floor(view.center[1] + (x - canvas.width / 2) / view.scale);
	const [ny, nx] = view.levels[0].shape.slice(-2);
	const out = element("cursor");
	if (row < 0 || col < 0 || row >= ny || col >= nx) {
		out.textContent = "";
		return;
	}
	const where = [row, col].map((i, a) => `${view.dims[a]} = ${view.coords[a] ? format(Number(view.coords[a]?.[i])) : i}`);
	let value = "no value loaded";
	for (let k = currentLevel(); k < view.levels.length; k++) {
		const { factor, chunks } = view.levels[k];
		const [cy, cx] = chunks.slice(-2);
		const [r, c] = [Math.floor(row / factor), Math.floor(col / factor)];
		const tile = view.tiles.get(key(k, Math.floor(r / cy), Math.floor(c / cx)));
		if (tile) {
			const v = Number(tile.data[(r % cy) * tile.cols + (c % cx)]);
			value = v !== v || v === view.fill ? "missing" : format(v);
			value += view.levels.length > 1 ? ` (level ${k})` : "";
			break;
		}
	}
	out.textContent = `${where.join(", ")}: ${value}`;
}

/** @param {unknown} error */
function fail(error) {
	const message = element("message");
	message.hidden = false;
	message.textContent = String(error instanceof Error ? error.message : error);
	html.dataset.error = message.textContent;
	html.dataset.state = "error";
	console.error(error);
}
