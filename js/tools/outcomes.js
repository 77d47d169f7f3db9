// What this reader makes of a file, in the form the Python reader's side makes too
// (tests/differential.py): whether it opens, and for each variable read whole its
// values' shape and SHA-256 (numbers as their little-endian bytes, float16 as
// float32; text and bytes as each element's length, u32, and its UTF-8 or raw
// bytes), or how the read failed.  The differential tests compare the two.
//
// As a script, `node tools/outcomes.js FILE...` prints one line of JSON per file.

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

import { HurrayError, HurrayUnsupportedError, openHurray } from "../src/hurray.js";

/** Most bytes one decoded chunk may take: the Python side's cap (tests/fuzz_structure.py CAP). */
const CAP = 64 * 2 ** 20;

/**
 * How an outcome names the error `error`.
 * @param {unknown} error
 */
function failure(error) {
	if (error instanceof HurrayUnsupportedError) return "unsupported";
	if (error instanceof HurrayError) return "refused";
	return `error:${error instanceof Error ? error.name : typeof error}`;
}

/**
 * `"<shape>:<sha256>"` of a read's values.
 * @param {{data: ArrayLike<unknown>, shape: number[]}} result
 */
function digest({ data, shape }) {
	const hash = createHash("sha256");
	const length = Buffer.alloc(4);
	if (Array.isArray(data)) {
		for (const item of data) {
			const bytes = typeof item === "string" ? Buffer.from(item, "utf8") : Buffer.from(/** @type {Uint8Array} */ (item));
			length.writeUInt32LE(bytes.length);
			hash.update(length).update(bytes);
		}
	} else {
		const view = /** @type {ArrayBufferView} */ (/** @type {unknown} */ (data));
		hash.update(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
	}
	return `${shape.join(",")}:${hash.digest("hex")}`;
}

/**
 * The outcome of reading every variable of the file `bytes` whole.
 * @param {Uint8Array} bytes
 */
export async function outcomeOf(bytes) {
	let file;
	try {
		file = await openHurray(bytes, { maxChunkBytes: CAP });
	} catch (error) {
		return { open: failure(error), variables: [] };
	}
	const variables = [];
	for (const path of file.variables) {
		try {
			variables.push([path, digest(await file.read(path))]);
		} catch (error) {
			variables.push([path, failure(error)]);
		}
	}
	return { open: "ok", variables };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
	for (const name of process.argv.slice(2)) {
		process.stdout.write(`${JSON.stringify(await outcomeOf(new Uint8Array(readFileSync(name))))}\n`);
	}
}
