// Index pages over HTTP, from a server that delays or refuses (503) chosen requests:
// a page that fails, because its request failed or its bytes are damaged, fails
// every read that waits on it, concurrent reads included, and never reads as a page
// of missing chunks; a page evicted from the cache meanwhile still serves the read
// that waits on it; after a failure, the same read again succeeds.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, test } from "node:test";

import { HurrayFormatError, HurrayIOError, openHurray } from "../src/hurray.js";
import { fixtures, rangeServer } from "./helpers.js";

const { dir } = fixtures();
let server;

before(async () => {
	server = await rangeServer(dir);
});

after(() => server.close());

// front_pages.hurray: "t" of shape (2, 120, 120) in chunks of (1, 2, 2), its 8 index
// pages past the first read; the chunk of BOX[p] is on page p
const FILE = "front_pages.hurray";
const BOX = {
	0: [
		[0, 1],
		[0, 2],
		[0, 2],
	],
	1: [
		[0, 1],
		[0, 2],
		[64, 66],
	],
};

/** The values of `boxes` of "t", read from the file's bytes. */
async function truth(boxes) {
	const file = await openHurray(new Uint8Array(fs.readFileSync(path.join(dir, FILE))));
	return file.readMany("t", boxes);
}

/**
 * Whether a request of bytes [start, stop) holds page `p` of "t" of `file`.
 * @param {import("../src/reader.js").HurrayFile} file
 */
async function holdsPage(file, p) {
	const ref = (await file.pageTable(file.variable("t"))).get(p);
	return ({ start, stop }) => start <= ref.offset && ref.offset < stop;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test("a read waiting on a page whose fetch by another read failed fails too, then reads on a retry", async (t) => {
	t.after(() => {
		server.intercept = null;
	});
	const file = await openHurray(server.url(FILE));
	const [page0, page1] = [await holdsPage(file, 0), await holdsPage(file, 1)];
	let refused = 0;
	server.intercept = (request) => {
		if (page0(request)) return { delay: 600 }; // slow
		if (page1(request) && refused++ === 0) return { delay: 300, status: 503 }; // fails, once
		return undefined;
	};
	const slow = file.read("t", BOX[0]); // fetches page 0
	const failing = file.read("t", BOX[1]); // fetches page 1, which fails
	await sleep(100);
	// waits on both: page 0 until it comes, and page 1, whose fetch fails meanwhile
	const both = file.readMany("t", [BOX[0], BOX[1]]);
	await assert.rejects(failing, HurrayIOError);
	await assert.rejects(both, (error) => error instanceof HurrayIOError && /HTTP 503/.test(error.message));
	const expected = await truth([BOX[0], BOX[1]]);
	assert.deepEqual((await slow).data, expected[0].data);
	// nothing of the failure is kept: the same read succeeds
	const again = await file.readMany("t", [BOX[0], BOX[1]]);
	assert.deepEqual(
		again.map((r) => r.data),
		expected.map((r) => r.data),
	);
	assert.equal(refused, 2);
});

test("a damaged page fails every read of its chunks, each time", async () => {
	const file = await openHurray(server.url("damaged-last-page.hurray"));
	const whole = file.read("t");
	const again = file.read("t");
	for (const read of [whole, again, file.read("t")]) {
		await assert.rejects(read, (error) => error instanceof HurrayFormatError && /checksum mismatch in index page 7/.test(error.message));
	}
});

test("a page evicted while a read waits on it still serves that read", async (t) => {
	t.after(() => {
		server.intercept = null;
	});
	const file = await openHurray(server.url(FILE));
	file.pageCacheBytes = 0; // every page evicted as soon as a read ends
	const page0 = await holdsPage(file, 0);
	server.intercept = (request) => (page0(request) ? { delay: 300 } : undefined);
	const first = file.read("t", BOX[0]);
	await sleep(50);
	// waits on page 0, fetched by the first read, which evicts both pages when it ends
	const both = file.readMany("t", [BOX[0], BOX[1]]);
	const expected = await truth([BOX[0], BOX[1]]);
	assert.deepEqual((await first).data, expected[0].data);
	assert.deepEqual(
		(await both).map((r) => r.data),
		expected.map((r) => r.data),
	);
	assert.equal(file.pageCache.size, 0);
});

test("a page whose request failed is fetched again by the next read", async (t) => {
	t.after(() => {
		server.intercept = null;
	});
	const file = await openHurray(server.url(FILE));
	let refused = 0;
	const page1 = await holdsPage(file, 1);
	server.intercept = (request) => (page1(request) && refused++ === 0 ? { status: 503 } : undefined);
	await assert.rejects(file.read("t", BOX[1]), HurrayIOError);
	const [expected] = await truth([BOX[1]]);
	assert.deepEqual((await file.read("t", BOX[1])).data, expected.data);
});
