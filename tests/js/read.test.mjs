// Reads a region of each store and set of references that the Python tests wrote
// (tests/interop/test_interop_write.py, into HURRAY_INTEROP_DIR) with zarrita alone,
// and compares it bit for bit with the stored values the Python side saved.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { FileSystemStore, ReferenceStore } from "@zarrita/storage";
import * as zarr from "zarrita";

const directory = process.env.HURRAY_INTEROP_DIR;
if (!directory) {
	throw new Error("set HURRAY_INTEROP_DIR to the directory the Python tests wrote");
}
const manifest = JSON.parse(fs.readFileSync(path.join(directory, "manifest.json"), "utf8"));

// Chunk requests of a reference store name file:// URLs: serve their Range headers
// from the local file.
async function readLocal(request) {
	const file = fileURLToPath(request.url);
	const range = request.headers.get("Range");
	const [start, stop] = range.slice("bytes=".length).split("-").map(Number);
	const handle = await fs.promises.open(file, "r");
	try {
		const bytes = Buffer.alloc(stop - start + 1);
		const { bytesRead } = await handle.read(bytes, 0, bytes.length, start);
		return new Response(bytes.subarray(0, bytesRead), { status: 206 });
	} finally {
		await handle.close();
	}
}

function openStore(kind, where) {
	const full = path.join(directory, where);
	if (kind === "zarr") {
		return new FileSystemStore(full);
	}
	const refs = JSON.parse(fs.readFileSync(full, "utf8"));
	return ReferenceStore.fromSpec(refs, { fetch: readLocal });
}

function bytesOf(data) {
	// typed arrays and zarrita's BoolArray alike expose their buffer window
	return Buffer.from(data.buffer, data.byteOffset, data.length * data.BYTES_PER_ELEMENT);
}

for (const item of manifest.cases.filter((c) => c.region)) {
	test(`${item.kind} ${item.path} ${item.variable} ${JSON.stringify(item.region)}`, async () => {
		const store = openStore(item.kind, item.path);
		const array = await zarr.open.v3(zarr.root(store).resolve(item.variable), {
			kind: "array",
		});
		const selection = item.region.map(([start, stop]) => zarr.slice(start, stop));
		const found = await zarr.get(array, selection);
		assert.deepEqual(
			found.shape,
			item.region.map(([start, stop]) => stop - start),
		);
		const expected = fs.readFileSync(path.join(directory, item.raw));
		assert.ok(bytesOf(found.data).equals(expected), "the region's bytes differ");
	});
}
