// The JavaScript reader against the Python reader: every golden file and the files
// the Python writer makes in this run read to the same values;
// damaged, truncated and hostile files are each refused with a clear error, and
// files past what JavaScript numbers and objects hold as unsupported or too large;
// ranges merge into the requests the Python reader makes of them; curve keys of up
// to 32 axes are the Python reader's; a tile of a large Hilbert chunk takes no
// longer than its elements.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { placeCrc } from "../src/crc32c.js";
import { keyDigits } from "../src/curves.js";
import { HurrayFormatError, HurrayUnsupportedError, HurrayValueError, openHurray, planReads } from "../src/hurray.js";
import { fixtures } from "./helpers.js";

const { dir, manifest } = fixtures();
const opened = new Map();

/** @param {string} name */
function open(name) {
	if (!opened.has(name)) {
		opened.set(name, openHurray(new Uint8Array(fs.readFileSync(path.join(dir, name)))));
	}
	return opened.get(name);
}

/** The bytes of a typed array's elements. */
function bytesOf(data) {
	return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

test("every golden file is among the files read, all of format 1.3", () => {
	const versions = new Set();
	for (const name of manifest.files) {
		const head = fs.readFileSync(path.join(dir, name)).subarray(8, 12);
		versions.add(`${head.readUInt16LE(0)}.${head.readUInt16LE(2)}`);
	}
	assert.deepEqual([...versions], ["1.3"]);
	for (const golden of ["hurray_1_3_tree.hurray", "hurray_1_3_dtypes.hurray", "hurray_1_3_pyramid.hurray"]) {
		assert.ok(manifest.files.includes(golden), golden);
	}
});

for (const item of manifest.cases) {
	test(`${item.file} ${item.variable} ${JSON.stringify(item.box)}`, async () => {
		const file = await open(item.file);
		const found = await file.read(item.variable, item.box ?? undefined);
		assert.deepEqual(found.shape, item.shape);
		if (item.raw) {
			const expected = fs.readFileSync(path.join(dir, item.raw));
			assert.ok(bytesOf(found.data).equals(expected), `the values differ from the Python reader's`);
		} else if (item.text) {
			assert.deepEqual(Array.from(found.data), item.text);
		} else {
			assert.deepEqual(
				Array.from(found.data, (b) => Buffer.from(b).toString("hex")),
				item.bytes,
			);
		}
	});
}

test("every variable of every file is compared", async () => {
	for (const name of manifest.files) {
		const file = await open(name);
		const compared = new Set(manifest.cases.filter((c) => c.file === name).map((c) => c.variable));
		assert.deepEqual(file.variables, [...compared]);
	}
});

test("groups are named by their path", async () => {
	const file = await open("groups.hurray");
	assert.deepEqual(file.variables, ["top", "a/v", "a/b/w"]);
	const { data } = await file.read("a/b/w");
	assert.deepEqual(Array.from(data), [3, 1, 4, 1, 5]);
});

test("a pyramid holds its levels as groups", async () => {
	const file = await open("pyramid.hurray");
	const levels = file.variables.filter((v) => v.endsWith("/t")).map((v) => file.variable(v).shape);
	assert.deepEqual(levels, [
		[512, 512],
		[256, 256],
		[128, 128],
		[64, 64],
	]);
	assert.equal(JSON.parse(String(file.attrs.multiscales)).layout.length, 4);
});

for (const item of manifest.damaged) {
	test(`damaged: ${item.name} is refused`, async () => {
		const bytes = new Uint8Array(fs.readFileSync(path.join(dir, item.file)));
		const readAll = async () => {
			const file = await openHurray(bytes);
			for (const variable of file.variables) {
				await file.read(variable);
			}
		};
		await assert.rejects(readAll(), (error) => {
			assert.ok(error instanceof HurrayFormatError, `${error.name}: ${error.message}`);
			for (const phrase of item.phrases) {
				assert.ok(error.message.includes(phrase), `"${error.message}" does not name "${phrase}" (Python: ${item.python})`);
			}
			return true;
		});
	});
}

test("a zstd frame declaring more than a chunk holds is refused before it is decoded", async () => {
	const bytes = new Uint8Array(fs.readFileSync(path.join(dir, "float_nan.hurray")));
	const file = await openHurray(bytes, { verifyChecksums: false });
	const variable = file.variable("t");
	const entries = await file.entries(variable, [0], [[0, 0]]);
	const [at, size] = [entries.offsets[0], entries.sizes[0]];
	// one frame of the chunk's length declaring 2**32 - 1 bytes (a four-byte content
	// size, single segment), its blocks one raw block of the bytes left
	const block = 1 | ((size - 12) << 3);
	bytes.set([0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0xff, 0xff, 0xff, 0xff, block & 255, (block >> 8) & 255, block >> 16], at);
	const damaged = await openHurray(bytes, { verifyChecksums: false });
	await assert.rejects(damaged.read("t", [[0, 1], [0, 1]]), /declares 4294967295 bytes, more than the 4096/);
});

test("reads of bad ranges and unknown variables are refused", async () => {
	const file = await open("float_nan.hurray");
	await assert.rejects(file.read("nope"), HurrayValueError);
	await assert.rejects(file.read("t", [[0, 101], [0, 1]]), HurrayValueError);
	await assert.rejects(file.read("t", [[5, 4], [0, 1]]), HurrayValueError);
	await assert.rejects(file.read("t", [[0, 1]]), HurrayValueError);
});

test("the CRC-32C of each place's key is the Python reader's", () => {
	for (const item of manifest.places) {
		assert.equal(placeCrc(item.kind, item.path, item.values), item.crc, JSON.stringify(item));
	}
});

test("byte ranges merge into the requests the Python reader makes", () => {
	for (const item of manifest.plans) {
		const plan = planReads(item.starts, item.stops, item.policy);
		assert.deepEqual(plan.requests, item.requests);
		assert.deepEqual(plan.requestOf, item.requestOf);
	}
});

test("a newer slot of a generation past 2**53 is refused as unsupported, not passed over for the older one", async () => {
	for (const item of manifest.unsupported) {
		const bytes = new Uint8Array(fs.readFileSync(path.join(dir, item.file)));
		assert.deepEqual(item.python, [0, 1, 2, 3, 4, 5]); // the newer version's values
		await assert.rejects(openHurray(bytes), (error) => {
			assert.ok(error instanceof HurrayUnsupportedError, `${error.name}: ${error.message}`);
			assert.match(error.message, /generation is 9007199254740993, past the 2\*\*53/);
			return true;
		});
	}
});

test("a read that would make more JavaScript objects than a heap holds is refused before any is made", async () => {
	for (const name of manifest.objects) {
		const bytes = new Uint8Array(fs.readFileSync(path.join(dir, name)));
		assert.ok(bytes.length < 1000, `${name} has ${bytes.length} bytes`);
		const file = await openHurray(bytes);
		const [variable] = file.variables;
		await assert.rejects(file.read(variable), (error) => {
			assert.ok(error instanceof HurrayValueError, `${error.name}: ${error.message}`);
			assert.match(error.message, /268435456 elements of "s" \(S1\) builds about \d+ bytes of JavaScript objects/);
			return true;
		});
		// a part of it reads
		const { data } = await file.read(variable, [[0, 1000]]);
		assert.deepEqual(Array.from(data[999]), [0x61]);
	}
});

test("curve keys of up to 32 axes are the Python reader's", () => {
	for (const { point, order, hilbert, morton } of manifest.curves) {
		for (const [curve, expected] of [
			["hilbert", hilbert],
			["morton", morton],
		]) {
			const digits = keyDigits(curve, point, order);
			const key = digits.reduceRight((k, digit) => k * 2n ** BigInt(point.length) + BigInt(digit), 0n);
			assert.equal(String(key), expected, `${curve} ${point}`);
		}
	}
});

test("a tile of a 4096 x 4096 Hilbert chunk reads in far less time than positioning every element of the chunk took", async () => {
	const bytes = new Uint8Array(fs.readFileSync(path.join(dir, manifest.hilbertChunk)));
	const file = await openHurray(bytes);
	const start = performance.now();
	const { data } = await file.read("v", [
		[1024, 1280],
		[2048, 2304],
	]);
	const seconds = (performance.now() - start) / 1000;
	for (let k = 0; k < data.length; k += 997) {
		const [y, x] = [1024 + Math.floor(k / 256), 2048 + (k % 256)];
		assert.equal(data[k], (y + 3 * x) % 251, `element (${y}, ${x})`);
	}
	// the chunk's positions one element at a time took 7.6 s; a box's at once, a few
	// milliseconds beside the chunk's decoding (bound generous for a loaded machine)
	assert.ok(seconds < 3, `the first tile took ${seconds.toFixed(2)} s`);
	const whole = await file.read("v");
	assert.equal(whole.data.length, 4096 * 4096);
	for (let k = 0; k < whole.data.length; k += 65_537) {
		const [y, x] = [Math.floor(k / 4096), k % 4096];
		assert.equal(whole.data[k], (y + 3 * x) % 251, `element (${y}, ${x})`);
	}
});
