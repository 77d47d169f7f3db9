// The map layer's core in Node.js (src/map/): a local file read by range; the grid of
// each way a file describes one; Web Mercator tiles resampled from the levels as
// numpy coarsened them, pixel by pixel; selections; the tiles of one task read in one
// readMany, and aborted ones; the TileJSON's bounds; the colours.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { before, test } from "node:test";

import proj4 from "proj4";

import { openHurray } from "../src/hurray.js";
import { colourise, HurrayLayer, lookupTable } from "../src/map/index.js";
import { cellValues, fixtures, readLevels, serveFolders } from "./helpers.js";

const R = 6378137;
let dir;
let map;
/** @type {Record<string, Float32Array[]>} */
const levels = {};

before(() => {
	({ dir } = fixtures());
	map = JSON.parse(fs.readFileSync(path.join(dir, "map.json"), "utf8"));
	for (const name of Object.keys(map)) {
		levels[name] = readLevels(dir, map[name]);
	}
});

test("openHurray takes a local path and a file: URL, and reads a tile by range, not the whole file", async () => {
	const local = path.join(dir, map.global.file);
	for (const target of [local, pathToFileURL(local).href, pathToFileURL(local)]) {
		const file = await openHurray(target);
		const { data } = await file.read("0/t2m", [
			[1, 2],
			[256, 512],
			[512, 768],
		]);
		const [, rows, cols] = map.global.levels[0].shape;
		for (let r = 0; r < 256; r += 51) {
			for (let c = 0; c < 256; c += 37) {
				assert.ok(Object.is(data[r * 256 + c], levels.global[0][rows * cols + (256 + r) * cols + 512 + c]));
			}
		}
		const stats = file.source.stats;
		assert.ok(stats.bytes < fs.statSync(local).size / 10, `${stats.bytes} bytes read of ${fs.statSync(local).size}`);
		await file.source.close();
	}
	await assert.rejects(openHurray(path.join(dir, "no such file.hurray")), /ENOENT/);
});

test("the grid of each way a file describes one", async () => {
	const cases = {
		// GDAL: a WKT and a GeoTransform on the grid mapping variable, no coordinates
		geotransform: { axes: [0, 1], kind: "projected", code: "EPSG:32632", definition: /\+proj=utm \+zone=32 /, transform: [1000, 0, 300000, 0, -1000, 5500000] },
		// CF grid mapping parameters alone
		cf: { axes: [0, 1], kind: "projected", code: undefined, definition: /^\+proj=tmerc \+lon_0=9 \+lat_0=0 \+k_0=0\.9996 \+x_0=500000 \+y_0=0 /, transform: [1000, 0, 400000, 0, -1000, 5001000] },
		// GeoZarr's proj:code, cell centres of 1-D coordinates
		projcode: { axes: [0, 1], kind: "projected", code: "EPSG:3857", definition: /\+proj=merc/, transform: [1000, 0, 400000, 0, -1000, 5001000] },
		// longitude before latitude, found by their units
		xy: { axes: [1, 0], kind: "geographic", code: "EPSG:4326", definition: undefined, transform: [1, 0, -180, 0, -1, 90] },
	};
	for (const [name, want] of Object.entries(cases)) {
		const layer = await HurrayLayer.open(path.join(dir, `grid_${name}.hurray`));
		const { grid } = layer;
		assert.deepEqual([grid.yAxis, grid.xAxis], want.axes, name);
		assert.equal(grid.crs.kind, want.kind, name);
		assert.equal(grid.crs.code, want.code, name);
		if (want.definition) {
			assert.match(grid.crs.definition, want.definition, name);
		}
		assert.deepEqual(grid.levels[0].transform, want.transform, name);
	}
	// the CF parameters are UTM zone 32N's: proj4 takes both to the same place
	const cf = (await HurrayLayer.open(path.join(dir, "grid_cf.hurray"), { proj4 })).projection.forward(9.5, 45);
	const utm = proj4("+proj=utm +zone=32 +datum=WGS84 +units=m +no_defs", [9.5, 45]);
	assert.ok(Math.hypot(cf[0] - utm[0], cf[1] - utm[1]) < 1e-3);
	// a projected CRS other than Web Mercator needs proj4, and says so
	const bare = await HurrayLayer.open(path.join(dir, map.utm.file));
	await assert.rejects(bare.tileValues(7, 67, 44), /the variable's CRS is EPSG:32632: pass proj4/);
	// packed integers: scale, offset and fill value
	const packed = await HurrayLayer.open(path.join(dir, "grid_packed.hurray"));
	assert.deepEqual([packed.grid.scale, packed.grid.offset, packed.grid.nodata], [0.5, 10, -1]);
	const chunk = await packed.chunkValues(0, 0, 0);
	assert.ok(Number.isNaN(chunk.values[0]));
	assert.deepEqual(Array.from(chunk.values.subarray(1, 4)), [1, 2, 3]);
	// what a map cannot take is refused, naming it
	await assert.rejects(HurrayLayer.open(path.join(dir, "grid_irregular.hurray")), /coordinate lat is not regularly spaced/);
	await assert.rejects(HurrayLayer.open(path.join(dir, "grid_nomapping.hurray")), /grid_mapping attribute names "nothing"/);
	await assert.rejects(HurrayLayer.open(path.join(dir, map.global.file), { variable: "nope" }), /no variable "nope" to map; the file has \["t2m"\]/);
});

/**
 * The longitude and latitude of pixel (i, j)'s centre in Web Mercator tile z/x/y.
 * @param {number} z
 * @param {number} x
 * @param {number} y
 * @param {number} i
 * @param {number} j
 */
function pixelLonLat(z, x, y, i, j) {
	const span = (2 * Math.PI * R) / 2 ** z;
	const mx = -Math.PI * R + x * span + ((i + 0.5) * span) / 256;
	const my = Math.PI * R - y * span - ((j + 0.5) * span) / 256;
	return [(mx / R) * (180 / Math.PI), (2 * Math.atan(Math.exp(my / R)) - Math.PI / 2) * (180 / Math.PI)];
}

test("Web Mercator tiles take, pixel by pixel, the value numpy gives at the level the rule chooses", async () => {
	const tiles = {
		// the world from the coarsest level; tiles on both sides of the 0-360 grid's
		// seam (longitude 0) and of the antimeridian; the NaN box; UTM at two levels
		global: [
			[0, 0, 0, 0],
			[1, 0, 0, 2],
			[2, 1, 1, 1],
			[3, 3, 3, 0],
			[3, 4, 3, 0],
			[4, 15, 7, 1],
			[4, 0, 7, 1],
			[5, 28, 14, 0],
		],
		utm: [
			[5, 16, 11, 0],
			[7, 67, 44, 0],
			[7, 67, 45, 0],
		],
	};
	for (const [field, list] of Object.entries(tiles)) {
		const layer = await HurrayLayer.open(path.join(dir, map[field].file), { proj4 });
		for (const [z, x, y, time] of list) {
			layer.select(field === "global" ? { time } : {});
			const tile = await layer.tileValues(z, x, y);
			assert.ok(tile, `${field} ${z}/${x}/${y}`);
			let checked = 0;
			let missing = 0;
			for (let j = 0; j < 256; j++) {
				for (let i = 0; i < 256; i++) {
					const [lon, lat] = pixelLonLat(z, x, y, i, j);
					const want = cellValues(map[field], levels[field], lon, lat, z, time);
					if (want === null) {
						continue;
					}
					assert.equal(tile.level, want.level, `${field} ${z}/${x}/${y}`);
					const got = tile.values[j * 256 + i];
					assert.ok(Object.is(got, Math.fround(want.values[0])), `${field} ${z}/${x}/${y} pixel (${i}, ${j}): ${got}, numpy ${want.values[0]}`);
					checked++;
					missing += Number.isNaN(got) ? 1 : 0;
				}
			}
			assert.ok(checked > 20_000, `${field} ${z}/${x}/${y}: ${checked} pixels checked`);
			if (field === "global" && z === 5) {
				assert.ok(missing > 1000, "the NaN box");
			}
		}
	}
});

test("a selection by index or by the nearest coordinate value; a wrong one named", async () => {
	const layer = await HurrayLayer.open(path.join(dir, map.global.file), { select: { time: { value: "2024-01-02T10:00:00Z" } } });
	assert.deepEqual(layer.selection, { time: 1 });
	let changes = 0;
	layer.addEventListener("change", () => changes++);
	layer.select({ time: 2 });
	assert.deepEqual([layer.selection, changes], [{ time: 2 }, 1]);
	layer.select({ time: { value: new Date("2023-06-01") } });
	assert.deepEqual(layer.selection, { time: 0 });
	assert.throws(() => layer.select({ depth: 0 }), /no dimension depth to select along; t2m has time/);
	assert.throws(() => layer.select({ time: 3 }), /index 3 is outside time, which has 3/);
	assert.throws(() => layer.select({ time: { value: "soon" } }), /"soon" is not a time of time/);
	assert.deepEqual(layer.grid.leading[0].values.map((d) => d.toISOString().slice(0, 10)), ["2024-01-01", "2024-01-02", "2024-01-03"]);
});

/** Sixteen tiles of a view of the global field at zoom 4. */
const VIEW = Array.from({ length: 16 }, (_, k) => [4, 6 + (k % 4), 5 + Math.floor(k / 4)]);

test("the tiles of one task go through one readMany, in fewer requests than one by one", async () => {
	const server = await serveFolders({ "/": dir });
	try {
		const together = await HurrayLayer.open(server.url(map.global.file), { range: [0, 1] });
		let before = server.log.length;
		await Promise.all(VIEW.map(([z, x, y]) => together.tile(z, x, y)));
		const merged = server.log.length - before;
		assert.deepEqual(together.requests.stats, { batches: 1, reads: 1 });
		const alone = await HurrayLayer.open(server.url(map.global.file), { range: [0, 1] });
		before = server.log.length;
		for (const [z, x, y] of VIEW) {
			await alone.tile(z, x, y);
		}
		const single = server.log.length - before;
		assert.ok(merged < single / 2, `${merged} requests together, ${single} one by one`);
	} finally {
		await server.close();
	}
});

test("a tile aborted before its batch is sent leaves it; a batch whose tiles are all aborted aborts its requests", async () => {
	const server = await serveFolders({ "/": dir }, { delay: 400 });
	try {
		const layer = await HurrayLayer.open(server.url(map.global.file), { range: [0, 1] });
		const controllers = VIEW.slice(0, 3).map(() => new AbortController());
		const tiles = VIEW.slice(0, 3).map(([z, x, y], k) => layer.tileValues(z, x, y, { signal: controllers[k].signal }));
		controllers[1].abort();
		await assert.rejects(tiles[1], { name: "AbortError" });
		const [first, , third] = await Promise.allSettled(tiles);
		assert.equal(first.status, "fulfilled");
		assert.equal(third.status, "fulfilled");
		const before = server.log.length;
		const late = VIEW.slice(8, 12).map(([z, x, y]) => {
			const controller = new AbortController();
			return { controller, tile: layer.tileValues(z, x, y, { signal: controller.signal }) };
		});
		await new Promise((resolve) => setTimeout(resolve, 100)); // the batch sent, its answers not in
		assert.ok(server.log.length > before);
		const start = performance.now();
		late.forEach(({ controller }) => controller.abort());
		for (const { tile } of late) {
			await assert.rejects(tile, { name: "AbortError" });
		}
		assert.ok(performance.now() - start < 300, "the aborted tiles did not wait for their answers");
		await new Promise((resolve) => setTimeout(resolve, 500));
		assert.ok(server.dropped() >= 1, "the server saw the requests go");
	} finally {
		await server.close();
	}
});

test("the TileJSON's bounds are the file's, in longitude/latitude", async () => {
	const global = await HurrayLayer.open(path.join(dir, map.global.file));
	const json = global.tileJSON("hurray://tile?z={z}&x={x}&y={y}");
	assert.deepEqual(json.bounds, [-180, -85.0511287798066, 180, 85.0511287798066]);
	assert.equal(json.tiles[0], "hurray://tile?z={z}&x={x}&y={y}");
	assert.equal(json.description, "test field");
	const utm = await HurrayLayer.open(path.join(dir, map.utm.file), { proj4 });
	const [west, south, east, north] = utm.tileJSON("t").bounds;
	const corners = [
		[300_000, 5_100_000],
		[800_000, 5_100_000],
		[300_000, 5_500_000],
		[800_000, 5_500_000],
	].map((p) => proj4("+proj=utm +zone=32 +datum=WGS84 +units=m +no_defs", "WGS84", p));
	const near = (/** @type {number} */ a, /** @type {number} */ b) => Math.abs(a - b) < 0.02;
	assert.ok(near(west, Math.min(...corners.map((c) => c[0]))) && near(east, Math.max(...corners.map((c) => c[0]))), `${west} ${east}`);
	assert.ok(near(south, Math.min(...corners.map((c) => c[1]))), `${south}`);
	assert.ok(north >= Math.max(...corners.map((c) => c[1])) - 0.02 && north < 49.8, `${north}`);
});

test("colours: the colormap over the range, clamped at its ends, NaN transparent", () => {
	const table = lookupTable("gray");
	const pixels = colourise(Float32Array.of(0, 1.5, 3, -7, 99, Number.NaN), table, [0, 3]);
	assert.deepEqual(Array.from(pixels), [0, 0, 0, 255, 128, 128, 128, 255, 255, 255, 255, 255, 0, 0, 0, 255, 255, 255, 255, 255, 0, 0, 0, 0]);
	assert.throws(() => new HurrayLayer(null, { leading: [], attrs: {} }, { colormap: "rainbow" }), /no colormap "rainbow"; there are viridis, magma, gray, coolwarm/);
});
