// Over HTTP: a fresh open reads the head in one request, and a tile (one chunk) of
// every level of a pyramid one more, the index pages coming with the head; the
// chunks of many tiles merge into few requests.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { HurrayIOError, openHurray } from "../src/hurray.js";
import { fixtures, rangeServer } from "./helpers.js";

let server;

before(async () => {
	server = await rangeServer(fixtures().dir);
});

after(() => server.close());

test("a fresh open and a tile at every level: one request each", async () => {
	server.log.length = 0;
	const file = await openHurray(server.url("pyramid.hurray"));
	assert.deepEqual(server.log, [{ start: 0, stop: 65536 }]);
	for (const path of file.variables.filter((p) => p.endsWith("/t"))) {
		const before = server.log.length;
		const [ny] = file.variable(path).shape;
		const row = 64 * Math.floor((ny - 1) / 64); // the last row of tiles
		const { shape } = await file.read(path, [
			[row, row + 64],
			[0, 64],
		]);
		assert.deepEqual(shape, [64, 64]);
		assert.equal(server.log.length - before, 1, `${path}: ${JSON.stringify(server.log.slice(before))}`);
	}
});

test("sixteen tiles in one call take fewer requests than tiles", async () => {
	const file = await openHurray(server.url("pyramid.hurray"));
	const before = server.log.length;
	const boxes = [];
	for (let r = 0; r < 4; r++) {
		for (let c = 2; c < 6; c++) {
			boxes.push([
				[64 * r, 64 * r + 64],
				[64 * c, 64 * c + 64],
			]);
		}
	}
	const tiles = await file.readMany("0/t", boxes);
	const whole = await openHurray(server.url("pyramid.hurray")).then((f) => f.read("0/t", [[0, 256], [128, 384]]));
	tiles.forEach((tile, k) => {
		const [r, c] = [Math.floor(k / 4), (k % 4) + 2];
		for (let i = 0; i < 64; i++) {
			const row = whole.data.subarray((64 * r + i) * 256 + 64 * (c - 2), (64 * r + i) * 256 + 64 * (c - 1));
			assert.deepEqual(tile.data.subarray(64 * i, 64 * i + 64), row);
		}
	});
	// the head of the second open, and the chunks of each read merged
	const requests = server.log.length - before - 2;
	assert.ok(requests <= 4, `16 tiles took ${requests} requests`);
});

test("a missing file is a clear error", async () => {
	await assert.rejects(openHurray(server.url("nothing.hurray")), (error) => error instanceof HurrayIOError && /HTTP 404/.test(error.message));
});

test("a file cut short on the server is refused as truncated", async () => {
	await assert.rejects(openHurray(server.url("damaged-cut-at-23393.hurray")), /truncated/);
});
