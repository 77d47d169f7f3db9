// The JavaScript zstd decoder's throughput against Node's zlib on the same data.
//
// A 4 MiB float32 field (smooth sines, 1024 x 1024) is compressed by python-zstandard
// at --level (3 by default, as the writer's default codec) and by zlib's deflateSync
// (its default level 6); each is then decoded in turn, best of --repeats rounds, each
// timed call after an untimed one of the same (as benchmarks/timing.py's best_times).
// Printed: MB/s of decoded bytes for both, their ratio, and the load average.
//
// Usage (from the repository root; needs python with numpy and zstandard):
//     node benchmarks/js_zstd.mjs [--level 3] [--repeats 15] [--noise 0]

import { execFileSync } from "node:child_process";
import * as os from "node:os";
import { parseArgs } from "node:util";
import * as zlib from "node:zlib";

import { decompress } from "../js/src/zstd.js";

const { values } = parseArgs({
	options: {
		level: { type: "string", default: "3" },
		repeats: { type: "string", default: "15" },
		noise: { type: "string", default: "0" },
	},
});

// The field and its frame, from Python on stdout: 4 MiB of float32, then the frame.
const make = `
import sys, numpy as np, zstandard
y, x = np.mgrid[0:1024, 0:1024] / 37.0
v = np.sin(x) * np.cos(0.7 * y) + 0.25 * np.sin(3.1 * x + y)
v += ${Number(values.noise)} * np.random.default_rng(3).standard_normal(v.shape)
raw = v.astype(np.float32).tobytes()
sys.stdout.buffer.write(raw + zstandard.ZstdCompressor(level=${Number(values.level)}).compress(raw))
`;
const python = process.env.PYTHON ?? "python";
const made = execFileSync(python, ["-c", make], { maxBuffer: 1 << 26 });
const size = 4 << 20;
const raw = made.subarray(0, size);
const frame = new Uint8Array(made.subarray(size));
const deflated = zlib.deflateSync(raw);
if (!Buffer.from(decompress(frame, size)).equals(raw)) throw new Error("zstd decoded the field wrong");

/**
 * Best time in ms of each call, over rounds that call each in turn.
 * @param {number} repeats
 * @param {(() => unknown)[]} calls
 */
function bestTimes(repeats, calls) {
	const best = calls.map(() => Infinity);
	for (let r = 0; r < repeats; r++) {
		calls.forEach((call, k) => {
			call();
			const start = performance.now();
			call();
			best[k] = Math.min(best[k], performance.now() - start);
		});
	}
	return best;
}

const [zstdMs, zlibMs] = bestTimes(Number(values.repeats), [
	() => decompress(frame, size),
	() => zlib.inflateSync(deflated),
]);
const mbs = (/** @type {number} */ ms) => (size / 1e6 / (ms / 1e3)).toFixed(0);
console.log(`4 MiB float32 field: zstd level ${values.level} ${frame.length} bytes, deflate ${deflated.length} bytes`);
console.log(`zstd.js decompress   ${zstdMs.toFixed(1)} ms  ${mbs(zstdMs)} MB/s`);
console.log(`zlib.inflateSync     ${zlibMs.toFixed(1)} ms  ${mbs(zlibMs)} MB/s`);
console.log(`ratio zstd.js / inflateSync throughput: ${(zlibMs / zstdMs).toFixed(2)}`);
console.log(`load average: ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}  (node ${process.version})`);
