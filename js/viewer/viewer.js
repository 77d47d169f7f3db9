// The viewer: a variable of a Hurray file as a map in its own CRS, north up, read
// straight from its URL by Range requests through the map layer's core
// (src/map/layer.js).  The view is the CRS point at the page's centre and the CRS
// units per pixel; it draws the chunks of the coarsest level whose cells are no
// coarser than a pixel (the chunks of coarser levels beneath while they load), every
// chunk missing from the view asked for in one task, so that their requests merge.
//
// The query string holds the file (`url`) and the state, which the page keeps there
// as it changes: `variable`, `select` (dim:index,...), `colormap`, `min` and `max`,
// and `view` (x,y,units per pixel).  `<html data-state>` is "loading", then "ready"
// once the first view is drawn whole (or "error"); `data-level` is the level of the
// last view drawn whole.

import { openHurray } from "../src/hurray.js";
import { COLORMAPS, lookupTable } from "../src/map/colours.js";
import { boundsOf, invert } from "../src/map/grid.js";
import { HurrayLayer } from "../src/map/layer.js";
import { chooseLevel } from "../src/map/tiles.js";

const params = new URLSearchParams(location.search);
const html = document.documentElement;
const canvas = /** @type {HTMLCanvasElement} */ (document.getElementById("map"));
const context = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
const element = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

/**
 * @typedef {object} Chunk
 * @property {Float32Array} values
 * @property {number} rows
 * @property {number} cols
 * @property {HTMLCanvasElement} image
 */

const view = {
	/** @type {HurrayLayer | null} */
	layer: null,
	/** @type {import("../src/map/crs.js").Projection | null} longitude/latitude to the CRS, where known */
	projection: null,
	/**
	 * @type {import("../src/map/grid.js").Affine[]} each level's cells in the frame the
	 *   page draws: the CRS; for a grid without one, its level-0 cells, in the directions
	 *   of its coordinates (their units may differ along y and x)
	 */
	transforms: [],
	/** @type {[number, number, number, number]} the grid's extent in that frame */
	bounds: [0, 0, 1, 1],
	/** @type {Map<string, Chunk>} chunks drawn, by selection, level and place */
	chunks: new Map(),
	/** @type {Set<string>} */
	loading: new Set(),
	/** the CRS point at the centre of the page */
	center: [0, 0],
	/** CRS units per pixel */
	resolution: 1,
	generation: 0,
	/** @type {ReturnType<typeof setTimeout> | null} */
	saving: null,
};

main().catch(fail);

async function main() {
	const url = params.get("url");
	if (!url) {
		throw new Error("give the file's URL in the query string: ?url=...");
	}
	const file = await openHurray(new URL(url, location.href).href);
	const colormaps = /** @type {HTMLSelectElement} */ (element("colormap"));
	for (const name of COLORMAPS) {
		colormaps.add(new Option(name, name));
	}
	colormaps.value = COLORMAPS.includes(params.get("colormap") ?? "") ? /** @type {string} */ (params.get("colormap")) : "viridis";
	const low = Number(params.get("min"));
	const high = Number(params.get("max"));
	const range = params.has("min") && params.has("max") && high > low ? /** @type {[number, number]} */ ([low, high]) : undefined;
	const layer = await HurrayLayer.open(file, { variable: params.get("variable") ?? undefined, select: selectionParam(), colormap: colormaps.value, range });
	const variables = /** @type {HTMLSelectElement} */ (element("variable"));
	for (const name of layer.variables) {
		variables.add(new Option(name, name));
	}
	variables.value = layer.grid.name;
	variables.addEventListener("change", () => {
		HurrayLayer.open(file, { colormap: colormaps.value, variable: variables.value })
			.then((next) => show(next, null))
			.catch(fail);
	});
	colormaps.addEventListener("change", () => {
		/** @type {HurrayLayer} */ (view.layer).setColours({ colormap: colormaps.value });
	});
	listen();
	show(layer, viewParam());
}

/**
 * Show `layer`, at `place` (a view of the URL) or the whole grid.
 * @param {HurrayLayer} layer
 * @param {{center: number[], resolution: number} | null} place
 */
function show(layer, place) {
	view.layer = layer;
	view.generation++;
	view.chunks = new Map();
	view.loading = new Set();
	try {
		view.projection = layer.grid.crs.kind === "none" ? null : layer.projection;
	} catch {
		view.projection = null; // a CRS only proj4 knows: no longitudes and latitudes here
	}
	layer.addEventListener("change", () => {
		paintAll();
		drawColorbar();
		update();
	});
	resize();
	const grid = layer.grid;
	const [a0, , , , e0] = grid.levels[0].transform;
	view.transforms = grid.levels.map(({ transform, fx, fy }) => (grid.crs.kind === "none" ? [Math.sign(a0) * fx, 0, 0, 0, Math.sign(e0) * fy, 0] : transform));
	view.bounds = boundsOf(view.transforms[0], grid.levels[0].rows, grid.levels[0].cols);
	const [xmin, ymin, xmax, ymax] = view.bounds;
	view.center = place?.center ?? [(xmin + xmax) / 2, (ymin + ymax) / 2];
	view.resolution = place?.resolution ?? Math.max((xmax - xmin) / canvas.width, (ymax - ymin) / canvas.height);
	showDims(layer);
	showMetadata(layer);
	drawColorbar();
	update();
}

/** The selection of the URL (`select=time:2,band:0`). */
function selectionParam() {
	return Object.fromEntries(
		(params.get("select") ?? "")
			.split(",")
			.filter(Boolean)
			.map((pair) => pair.split(":"))
			.map(([dim, index]) => [dim, Number(index)]),
	);
}

/** The view of the URL (`view=x,y,units per pixel`), or null. */
function viewParam() {
	const numbers = (params.get("view") ?? "").split(",").map(Number);
	return numbers.length === 3 && numbers.every(Number.isFinite) && numbers[2] > 0 ? { center: numbers.slice(0, 2), resolution: numbers[2] } : null;
}

/** Keep the state in the URL (once it has stayed for a moment). */
function save() {
	if (view.saving !== null) {
		clearTimeout(view.saving);
	}
	view.saving = setTimeout(() => {
		view.saving = null;
		const layer = /** @type {HurrayLayer} */ (view.layer);
		params.set("variable", layer.grid.name);
		params.set("colormap", layer.colormap);
		const selection = Object.entries(layer.selection);
		if (selection.length) {
			params.set("select", selection.map(([dim, index]) => `${dim}:${index}`).join(","));
		} else {
			params.delete("select");
		}
		if (layer.range) {
			params.set("min", String(layer.range[0]));
			params.set("max", String(layer.range[1]));
		}
		params.set("view", [...view.center, view.resolution].map((v) => Number(v.toPrecision(10))).join(","));
		history.replaceState(null, "", `?${params}`);
	}, 250);
}

/**
 * A selector for each leading dimension (time, bands), showing its coordinate's values.
 * @param {HurrayLayer} layer
 */
function showDims(layer) {
	const holder = element("dims");
	holder.replaceChildren();
	for (const [k, d] of layer.grid.leading.entries()) {
		const select = document.createElement("select");
		select.id = `dim-${d.dim}`;
		for (let i = 0; i < d.size; i++) {
			select.add(new Option(d.values ? label(d.values[i]) : String(i), String(i)));
		}
		select.value = String(layer.indices[k]);
		select.addEventListener("change", () => layer.select({ [d.dim]: Number(select.value) }));
		const wrap = document.createElement("label");
		wrap.append(`${d.dim} `, select);
		holder.append(wrap);
	}
}

/**
 * A coordinate value as the page shows it.
 * @param {number | string | Date} value
 */
function label(value) {
	if (value instanceof Date) {
		const text = value.toISOString();
		return text.endsWith("T00:00:00.000Z") ? text.slice(0, 10) : text.replace(".000Z", "Z").replace("T", " ");
	}
	return typeof value === "number" ? format(value) : value;
}

/**
 * The file's and the variable's metadata, in the panel.
 * @param {HurrayLayer} layer
 */
function showMetadata(layer) {
	const panel = element("metadata");
	const { grid, file } = layer;
	const level = grid.levels[0];
	const rows = (/** @type {[string, unknown][]} */ pairs) => {
		const table = document.createElement("table");
		for (const [name, value] of pairs) {
			const row = table.insertRow();
			row.insertCell().textContent = name;
			// numbers as they are (JSON has no NaN), typed arrays as lists
			row.insertCell().textContent =
				typeof value === "string" || typeof value === "number" ? String(value) : JSON.stringify(value, (_, v) => (ArrayBuffer.isView(v) ? Array.from(/** @type {ArrayLike<number | bigint>} */ (/** @type {unknown} */ (v))) : v));
		}
		return table;
	};
	const heading = (/** @type {string} */ text) => Object.assign(document.createElement("h2"), { textContent: text });
	panel.replaceChildren(
		heading(grid.name),
		rows([
			["dimensions", grid.dims.map((d, k) => `${d}: ${file.variable(level.path).shape[k]}`).join(", ")],
			["type", file.variable(level.path).dtype],
			["chunks", file.variable(level.path).chunks.join(" x ")],
			["levels", grid.levels.map((l) => `${l.rows} x ${l.cols}`).join(", ")],
			["CRS", grid.crs.name],
			...(grid.crs.wkt ? /** @type {[string, unknown][]} */ ([["WKT", grid.crs.wkt]]) : []),
			["bounds", grid.bounds.map((v) => format(v)).join(", ")],
		]),
		heading("attributes"),
		rows(Object.entries(grid.attrs)),
		heading("the file's attributes"),
		rows(Object.entries(file.attrs)),
	);
}

/** The level whose chunks the view draws: the coarsest whose cells are no coarser than a pixel. */
function currentLevel() {
	return chooseLevel(view.transforms.map((transform) => ({ transform })), view.resolution);
}

/**
 * The chunks of level `k` the page shows, as [row, col] of its chunk grid.
 * @param {number} k
 */
function visibleChunks(k) {
	const level = /** @type {HurrayLayer} */ (view.layer).grid.levels[k];
	const [a, b, c, d, e, f] = invert(view.transforms[k]);
	let [cmin, rmin, cmax, rmax] = [Infinity, Infinity, -Infinity, -Infinity];
	for (const [sx, sy] of [
		[0, 0],
		[canvas.width, 0],
		[0, canvas.height],
		[canvas.width, canvas.height],
	]) {
		const [x, y] = toCrs(sx, sy);
		const col = a * x + b * y + c;
		const row = d * x + e * y + f;
		[cmin, cmax, rmin, rmax] = [Math.min(cmin, col), Math.max(cmax, col), Math.min(rmin, row), Math.max(rmax, row)];
	}
	const out = [];
	const r0 = Math.max(0, Math.floor(rmin / level.chunkRows));
	const r1 = Math.min(Math.ceil(level.rows / level.chunkRows), Math.ceil(rmax / level.chunkRows));
	const c0 = Math.max(0, Math.floor(cmin / level.chunkCols));
	const c1 = Math.min(Math.ceil(level.cols / level.chunkCols), Math.ceil(cmax / level.chunkCols));
	for (let r = r0; r < r1; r++) {
		for (let col = c0; col < c1; col++) {
			out.push([r, col]);
		}
	}
	return out;
}

/**
 * @param {number} k
 * @param {number} r
 * @param {number} c
 */
function key(k, r, c) {
	return `${/** @type {HurrayLayer} */ (view.layer).indices}|${k}/${r}/${c}`;
}

/** Draw what is there, and read the chunks of the current level that are missing. */
function update() {
	resize();
	draw();
	save();
	const layer = /** @type {HurrayLayer} */ (view.layer);
	const k = currentLevel();
	const missing = visibleChunks(k).filter(([r, c]) => !view.chunks.has(key(k, r, c)) && !view.loading.has(key(k, r, c)));
	const generation = view.generation;
	for (const [r, c] of missing) {
		const name = key(k, r, c);
		view.loading.add(name);
		// asked for in one task: the core reads them in one readMany
		layer
			.chunkValues(k, r, c)
			.then(({ values, rows, cols }) => {
				if (generation !== view.generation) {
					return;
				}
				const chunk = { values, rows, cols, image: document.createElement("canvas") };
				paint(chunk);
				view.chunks.set(name, chunk);
				view.loading.delete(name);
				draw();
				if (view.loading.size === 0) {
					update();
				}
			})
			.catch(fail);
	}
}

/** @param {Chunk} chunk */
function paint(chunk) {
	chunk.image.width = chunk.cols;
	chunk.image.height = chunk.rows;
	const pixels = /** @type {HurrayLayer} */ (view.layer).colourise(chunk.values);
	/** @type {CanvasRenderingContext2D} */ (chunk.image.getContext("2d")).putImageData(new ImageData(pixels, chunk.cols, chunk.rows), 0, 0);
}

function paintAll() {
	const layer = /** @type {HurrayLayer} */ (view.layer);
	const prefix = `${layer.indices}|`;
	for (const [name, chunk] of view.chunks) {
		if (name.startsWith(prefix)) {
			paint(chunk);
		}
	}
	/** @type {HTMLSelectElement} */ (element("colormap")).value = layer.colormap;
}

/** Draw the chunks held of every level from the coarsest to the current one, and the graticule. */
function draw() {
	const layer = /** @type {HurrayLayer} */ (view.layer);
	const k = currentLevel();
	context.setTransform(1, 0, 0, 1, 0, 0);
	context.clearRect(0, 0, canvas.width, canvas.height);
	context.imageSmoothingEnabled = false;
	let whole = true;
	for (let j = layer.grid.levels.length - 1; j >= k; j--) {
		const level = layer.grid.levels[j];
		const [a, b, c, d, e, f] = view.transforms[j];
		for (const [r, col] of visibleChunks(j)) {
			const chunk = view.chunks.get(key(j, r, col));
			if (chunk === undefined) {
				whole &&= j !== k;
				continue;
			}
			// the chunk's pixel (u, v) is the cell (r0 + v, c0 + u): the level's transform, then the view's
			const r0 = r * level.chunkRows;
			const c0 = col * level.chunkCols;
			const [ox, oy] = toScreen(a * c0 + b * r0 + c, d * c0 + e * r0 + f);
			const s = 1 / view.resolution;
			context.setTransform(a * s, -d * s, b * s, -e * s, ox, oy);
			context.drawImage(chunk.image, 0, 0);
		}
	}
	context.setTransform(1, 0, 0, 1, 0, 0);
	if (layer.grid.crs.kind !== "none") {
		drawGraticule();
	}
	element("level").textContent = layer.grid.levels.length > 1 ? `level ${k} of ${layer.grid.levels.length - 1}` : "";
	if (whole) {
		html.dataset.level = String(k);
		if (html.dataset.state !== "ready") {
			// when the first view was drawn, in milliseconds since the page began to load
			html.dataset.readyMs = String(Math.round(performance.now()));
			html.dataset.state = "ready";
		}
	}
}

/**
 * The screen point of CRS point (`x`, `y`): north up.
 * @param {number} x
 * @param {number} y
 * @returns {[number, number]}
 */
function toScreen(x, y) {
	return [canvas.width / 2 + (x - view.center[0]) / view.resolution, canvas.height / 2 - (y - view.center[1]) / view.resolution];
}

/**
 * The CRS point of screen point (`sx`, `sy`).
 * @param {number} sx
 * @param {number} sy
 * @returns {[number, number]}
 */
function toCrs(sx, sy) {
	return [view.center[0] + (sx - canvas.width / 2) * view.resolution, view.center[1] - (sy - canvas.height / 2) * view.resolution];
}

/** Steps between graticule lines, in degrees. */
const STEPS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 45, 90];

/**
 * Lines of longitude and latitude where the CRS's are known (else of the CRS's x and
 * y), about six across the view, labelled at the page's edges.
 */
function drawGraticule() {
	const projection = view.projection;
	const geographic = /** @type {HurrayLayer} */ (view.layer).grid.crs.kind === "geographic";
	context.save();
	context.strokeStyle = "rgba(40, 40, 40, 0.45)";
	context.fillStyle = "rgba(20, 20, 20, 0.85)";
	context.lineWidth = 1;
	context.font = "11px system-ui, sans-serif";
	/** @type {[number, number][]} the view's edge, in the frame the lines are drawn in */
	const edge = [];
	for (let t = 0; t <= 16; t++) {
		for (const [sx, sy] of [
			[(canvas.width * t) / 16, 0],
			[(canvas.width * t) / 16, canvas.height],
			[0, (canvas.height * t) / 16],
			[canvas.width, (canvas.height * t) / 16],
		]) {
			const [x, y] = toCrs(sx, sy);
			const point = projection && !geographic ? projection.inverse(x, y) : [x, y];
			if (point.every(Number.isFinite)) {
				edge.push(/** @type {[number, number]} */ (point));
			}
		}
	}
	const spanOf = (/** @type {number} */ axis) => [Math.min(...edge.map((p) => p[axis])), Math.max(...edge.map((p) => p[axis]))];
	const [[x0, x1], [y0, y1]] = [spanOf(0), spanOf(1).map((v) => (projection ? Math.max(-90, Math.min(90, v)) : v))];
	const toPage = (/** @type {number} */ u, /** @type {number} */ v) => (projection && !geographic ? toScreen(...projection.forward(u, v)) : toScreen(u, v));
	const stepOf = (/** @type {number} */ span) => (projection ? (STEPS.find((s) => span / s <= 8) ?? 90) : niceStep(span / 6));
	const line = (/** @type {(t: number) => [number, number]} */ along, /** @type {string} */ text, /** @type {"x" | "y"} */ axis) => {
		context.beginPath();
		let labelled = false;
		for (let t = 0; t <= 64; t++) {
			const [sx, sy] = along(t / 64);
			if (!Number.isFinite(sx) || !Number.isFinite(sy)) {
				continue;
			}
			t === 0 ? context.moveTo(sx, sy) : context.lineTo(sx, sy);
			const inside = sx >= 0 && sx <= canvas.width && sy >= 0 && sy <= canvas.height;
			if (inside && !labelled && (axis === "x" ? sy > canvas.height - 60 : sx > 4)) {
				context.fillText(text, axis === "x" ? sx + 2 : 4, axis === "x" ? canvas.height - 62 : sy - 2);
				labelled = true;
			}
		}
		context.stroke();
	};
	const xStep = stepOf(x1 - x0);
	for (let u = Math.ceil(x0 / xStep) * xStep; u <= x1; u += xStep) {
		line((t) => toPage(u, y0 + t * (y1 - y0)), projection ? longitude(u) : format(u), "x");
	}
	const yStep = stepOf(y1 - y0);
	for (let v = Math.ceil(y0 / yStep) * yStep; v <= y1; v += yStep) {
		line((t) => toPage(x0 + t * (x1 - x0), v), projection ? latitude(v) : format(v), "y");
	}
	context.restore();
}

/**
 * A round step near `step`: 1, 2 or 5 times a power of ten.
 * @param {number} step
 */
function niceStep(step) {
	const power = 10 ** Math.floor(Math.log10(step));
	return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= step) ?? 10 * power;
}

/** @param {number} lon */
function longitude(lon) {
	const l = ((((lon + 180) % 360) + 360) % 360) - 180;
	return `${format(Math.abs(l))}°${l > 0 ? "E" : l < 0 && l > -180 ? "W" : ""}`;
}

/** @param {number} lat */
function latitude(lat) {
	return `${format(Math.abs(lat))}°${lat > 0 ? "N" : lat < 0 ? "S" : ""}`;
}

function drawColorbar() {
	const layer = /** @type {HurrayLayer} */ (view.layer);
	const bar = /** @type {HTMLCanvasElement} */ (element("colorbar"));
	const g = /** @type {CanvasRenderingContext2D} */ (bar.getContext("2d"));
	const image = g.createImageData(256, bar.height);
	const table = lookupTable(layer.colormap);
	for (let y = 0; y < bar.height; y++) {
		image.data.set(table, y * 256 * 4);
	}
	g.putImageData(image, 0, 0);
	const [low, high] = layer.range ?? [0, 1];
	element("min").textContent = format(low);
	element("max").textContent = format(high);
	const { attrs, name } = layer.grid;
	const units = typeof attrs.units === "string" && attrs.units ? ` (${attrs.units})` : "";
	element("title").textContent = `${typeof attrs.long_name === "string" ? attrs.long_name : name}${units}`;
}

/** @param {number} v */
function format(v) {
	return Math.abs(v) >= 1e9 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : String(Number(v.toPrecision(6)));
}

function resize() {
	if (canvas.width !== canvas.clientWidth || canvas.height !== canvas.clientHeight) {
		canvas.width = canvas.clientWidth;
		canvas.height = canvas.clientHeight;
	}
}

/**
 * Zoom by `factor` around the screen point (`sx`, `sy`), which keeps its place.
 * @param {number} factor
 * @param {number} sx
 * @param {number} sy
 */
function zoom(factor, sx, sy) {
	const [xmin, ymin, xmax, ymax] = view.bounds;
	const fit = Math.max((xmax - xmin) / canvas.width, (ymax - ymin) / canvas.height);
	const [a, , , , e] = view.transforms[0];
	const finest = Math.min(Math.abs(a), Math.abs(e)) / 64;
	const [x, y] = toCrs(sx, sy);
	view.resolution = Math.min(fit * 4, Math.max(finest, view.resolution / factor));
	const [nx, ny] = toCrs(sx, sy);
	view.center = [view.center[0] + x - nx, view.center[1] + y - ny];
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
			view.center = [view.center[0] - (event.clientX - dragged[0]) * view.resolution, view.center[1] + (event.clientY - dragged[1]) * view.resolution];
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
	const button = element("show-metadata");
	button.addEventListener("click", () => {
		const panel = element("metadata");
		panel.hidden = !panel.hidden;
		button.setAttribute("aria-expanded", String(!panel.hidden));
	});
	addEventListener("resize", update);
}

/**
 * The coordinates and the value under the screen point (`sx`, `sy`).
 * @param {number} sx
 * @param {number} sy
 */
function showCursor(sx, sy) {
	const layer = /** @type {HurrayLayer} */ (view.layer);
	const { grid } = layer;
	const [x, y] = toCrs(sx, sy);
	const out = element("cursor");
	let where;
	if (grid.crs.kind === "geographic") {
		where = `${latitude(y)}, ${longitude(x)}`;
	} else {
		// the grid's coordinates: of the page's frame, which is the CRS where there is one
		const [ia, ib, ic, id, ie, iff] = invert(view.transforms[0]);
		const [a, b, c, d, e, f] = grid.levels[0].transform;
		const [col0, row0] = [ia * x + ib * y + ic, id * x + ie * y + iff];
		const [yDim, xDim] = [grid.dims[grid.yAxis], grid.dims[grid.xAxis]];
		where = `${yDim} = ${format(d * col0 + e * row0 + f)}, ${xDim} = ${format(a * col0 + b * row0 + c)}`;
		const lonLat = view.projection?.inverse(x, y);
		if (lonLat && lonLat.every(Number.isFinite)) {
			where += ` (${latitude(lonLat[1])}, ${longitude(lonLat[0])})`;
		}
	}
	let value = "";
	for (let k = currentLevel(); k < grid.levels.length; k++) {
		const level = grid.levels[k];
		const [a, b, c, d, e, f] = invert(view.transforms[k]);
		const col = Math.floor(a * x + b * y + c);
		const row = Math.floor(d * x + e * y + f);
		if (row < 0 || col < 0 || row >= level.rows || col >= level.cols) {
			out.textContent = where;
			return;
		}
		const chunk = view.chunks.get(key(k, Math.floor(row / level.chunkRows), Math.floor(col / level.chunkCols)));
		if (chunk) {
			const v = chunk.values[(row % level.chunkRows) * chunk.cols + (col % level.chunkCols)];
			const units = typeof grid.attrs.units === "string" ? ` ${grid.attrs.units}` : "";
			value = `: ${Number.isNaN(v) ? "missing" : `${format(v)}${units}`}${grid.levels.length > 1 ? ` (level ${k})` : ""}`;
			break;
		}
	}
	out.textContent = `${where}${value || ": not loaded"}`;
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
