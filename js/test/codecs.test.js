// Codec frames the Python reader's libraries refuse are refused here too, and those
// they decode decode to the same bytes (fixtures.py, codec_frames): Blosc frames with
// a byte of their header changed (format, compressor format, flags, type size, sizes),
// LZ4 blocks cut short, extended or declaring another size, zlib streams followed by
// bytes or by a second stream, zstd frames of every window size.  A Blosc frame this
// reader does not decode (blosclz, bit-shuffled) is refused as unsupported.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { decodeChain } from "../src/codecs.js";
import { HurrayFormatError, HurrayUnsupportedError } from "../src/hurray.js";
import { fixtures } from "./helpers.js";

const { dir } = fixtures();
const frames = JSON.parse(fs.readFileSync(path.join(dir, "codecs.json"), "utf8"));

test("codec frames are refused or decoded as the Python reader refuses or decodes them", () => {
	const counts = {};
	const differ = [];
	for (const { codec, frame, python } of frames) {
		let outcome;
		try {
			const out = decodeChain([{ id: codec }], new Uint8Array(Buffer.from(frame, "hex")), 2 ** 16);
			outcome = createHash("sha256").update(out).digest("hex");
		} catch (error) {
			if (error instanceof HurrayUnsupportedError && codec === "blosc") {
				outcome = "unsupported";
			} else if (error instanceof HurrayFormatError) {
				outcome = null;
			} else {
				throw error;
			}
		}
		const agree = outcome === python || outcome === "unsupported";
		const key = `${codec}: ${python === null ? "refused" : "read"} by Python, ${outcome === null ? "refused" : outcome === "unsupported" ? "unsupported" : "read"} here`;
		counts[key] = (counts[key] ?? 0) + 1;
		if (!agree) differ.push(`${key}: ${frame.slice(0, 48)}...`);
	}
	assert.deepEqual(differ, [], JSON.stringify(counts, null, 1));
	// every kind of frame was tried, read and refused
	for (const codec of ["blosc", "lz4", "zlib", "zstd"]) {
		assert.ok(counts[`${codec}: read by Python, read here`] > 10, `${codec}: ${JSON.stringify(counts)}`);
		assert.ok(counts[`${codec}: refused by Python, refused here`] > 10, `${codec}: ${JSON.stringify(counts)}`);
	}
});
