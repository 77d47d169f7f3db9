// A file replaced on the server after it was opened, by another version of the same
// size: the read that meets the change fails with a HurrayChangedError naming it,
// never with a checksum mismatch, and never returns the new version's chunks under
// the old version's index, whether chunk checksums are checked or not and whether
// the server sends an ETag, a Last-Modified or neither.  Without a strong ETag, the
// chunks' checksums are checked whatever verifyChecksums says: they alone tell two
// versions of one size apart.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, beforeEach, test } from "node:test";

import { HurrayChangedError, HurrayFormatError, openHurray } from "../src/hurray.js";
import { fixtures, rangeServer } from "./helpers.js";

const { dir } = fixtures();
const served = fs.mkdtempSync(path.join(os.tmpdir(), "hurray-changed-"));
const LIVE = path.join(served, "live.hurray");
const [A, B] = ["version_a.hurray", "version_b.hurray"].map((name) => fs.readFileSync(path.join(dir, name)));
// a box of "t" (200 x 200 in chunks of 50) whose chunk lies past the first read
const BOX = [
	[150, 160],
	[150, 160],
];
let server;
/** The version being served, "a" or "b", and the validators the server sends. */
let version = "a";
let validators = () => ({});

before(async () => {
	assert.equal(A.length, B.length);
	server = await rangeServer(served);
	server.intercept = () => ({ headers: validators() });
});

beforeEach(() => {
	fs.writeFileSync(LIVE, A);
	version = "a";
	validators = () => ({});
});

after(async () => {
	await server.close();
	fs.rmSync(served, { recursive: true, force: true });
});

/** Serve the other version from now on. */
function replace() {
	fs.writeFileSync(LIVE, B);
	version = "b";
}

const changed = (/** @type {RegExp} */ what) => (/** @type {Error} */ error) => {
	assert.ok(error instanceof HurrayChangedError, `${error.name}: ${error.message}`);
	assert.match(error.message, /live\.hurray was replaced or modified after it was first read/);
	assert.match(error.message, what);
	return true;
};

for (const verifyChecksums of [true, false]) {
	test(`without validators, a replaced file is named as changed (verifyChecksums ${verifyChecksums})`, async () => {
		const file = await openHurray(server.url("live.hurray"), { verifyChecksums });
		const before = await file.read("t", BOX);
		replace();
		await assert.rejects(file.read("t", BOX), changed(/its header changed, at generation 1: another file in its place/));
		// the values were A's, and no read mixed in B's
		const a = await (await openHurray(new Uint8Array(A))).read("t", BOX);
		assert.deepEqual(before.data, a.data);
	});
}

test("an ETag that changes names the change", async () => {
	validators = () => ({ ETag: `"${version}"` });
	const file = await openHurray(server.url("live.hurray"), { verifyChecksums: false });
	replace();
	await assert.rejects(file.read("t", BOX), changed(/ETag "a" became "b"/));
});

test("a Last-Modified that changes names the change", async () => {
	validators = () => ({ "Last-Modified": version === "a" ? "Mon, 01 Jan 2024 00:00:00 GMT" : "Mon, 01 Jan 2024 00:00:01 GMT" });
	const file = await openHurray(server.url("live.hurray"), { verifyChecksums: false });
	replace();
	await assert.rejects(file.read("t", BOX), changed(/Last-Modified Mon, 01 Jan 2024 00:00:00 GMT became/));
});

test("a size that changes names the change", async () => {
	const file = await openHurray(server.url("live.hurray"));
	fs.writeFileSync(LIVE, Buffer.concat([A, Buffer.alloc(10)]));
	await assert.rejects(file.read("t", BOX), changed(/its size \d+ became \d+/));
});

test("without a strong ETag, chunk checksums are checked whatever verifyChecksums says", async () => {
	// A with a byte of the chunk of BOX changed: damage, not another version
	const original = await openHurray(new Uint8Array(A));
	const v = original.variable("t");
	const coords = BOX.map(([start], a) => Math.floor(start / v.chunks[a]));
	const id = coords.reduce((n, c, a) => n * v.grid[a] + c, 0);
	const { offsets } = await original.entries(v, [id], [coords]);
	const damaged = Buffer.from(A);
	damaged[offsets[0] + 4] ^= 0x40;
	fs.writeFileSync(LIVE, damaged);
	const cases = [
		[{}, true],
		[{ ETag: 'W/"a"' }, true],
		[{ ETag: '"a"' }, false],
	];
	for (const [sent, checked] of cases) {
		validators = () => sent;
		const file = await openHurray(server.url("live.hurray"), { verifyChecksums: false });
		const read = file.read("t", BOX);
		if (checked) {
			await assert.rejects(read, (error) => error instanceof HurrayFormatError && /checksum mismatch in chunk/.test(error.message));
		} else {
			await read; // trusted, as asked
		}
	}
});
