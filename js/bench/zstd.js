// Zstandard decoders for the reader, side by side: speed on chunks as the writer makes
// them, the cost of a first decode in a fresh process, the bytes a browser loads, and
// what each makes of damaged frames against the Python reader.
//
// The frames come from zstd_frames.py (this package's encoder; python-zstandard's
// speed on them is the native reference).  The decoders: this package's own
// (src/zstd.js, JavaScript written from RFC 8878), zstddec (libzstd compiled to
// WebAssembly) and fzstd (JavaScript), the last two development dependencies kept
// for this comparison.  Each is called as the reader calls it: the frame and its
// declared size.
//
// - speed: MB/s of decoded bytes, the best of --repeats rounds (the decoders take
//   turns in each; every timed call decodes at least 4 MiB: a 64 KiB chunk 64 times),
//   after an untimed call; its ratio to the native library's.
// - first decode: a fresh Node.js process per decoder imports it (and, for the
//   WebAssembly one, compiles and instantiates it), then decodes one 4 MiB chunk:
//   milliseconds of each step (the median of --cold processes).
// - size: the module as published, minified with esbuild (a bundle of what it
//   imports), and that gzipped: what a page loads.
// - damaged frames: mutants of small chunks (zstd_frames.py), each decoded behind the
//   reader's checks of the frame (codecs.js: one frame, its declared size within the
//   chunk) and compared with the Python reader's outcome: the same bytes or the same
//   refusal ("agree"), refused where Python reads, read where Python refuses, or read
//   to other bytes; the slowest call.
//
// Usage (from the repository root, with this package installed in Python and
// `npm ci` in js/):
//     node js/bench/zstd.js [--repeats 9] [--cold 5] [--mutants 4000]

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as zlib from "node:zlib";

import * as esbuild from "esbuild";

import { zstdContentSize } from "../src/codecs.js";

const here = path.dirname(fileURLToPath(import.meta.url));

const { values: options } = parseArgs({
	options: {
		repeats: { type: "string", default: "9" },
		cold: { type: "string", default: "5" },
		mutants: { type: "string", default: "4000" },
		// internal: a child process's first decode
		first: { type: "string" },
		frame: { type: "string" },
		size: { type: "string" },
	},
});

/**
 * A decoder as the reader calls it: the frame and the size it declares, giving
 * the decoded bytes or throwing.
 * @typedef {(frame: Uint8Array, size: number) => Uint8Array} Decode
 */

/**
 * Each decoder: the module a page loads (for its size) and how to make its decode
 * function (awaiting what it needs first).
 * @type {Record<string, {module: string, load: () => Promise<Decode>}>}
 */
const DECODERS = {
	ours: {
		module: fileURLToPath(new URL("../src/zstd.js", import.meta.url)),
		async load() {
			const { decompress } = await import("../src/zstd.js");
			return (frame, size) => decompress(frame, size);
		},
	},
	zstddec: {
		module: "zstddec",
		async load() {
			const { ZSTDDecoder } = await import("zstddec");
			const decoder = new ZSTDDecoder();
			await decoder.init();
			return (frame, size) => decoder.decode(frame, size);
		},
	},
	fzstd: {
		module: "fzstd",
		async load() {
			const { decompress } = await import("fzstd");
			return (frame) => decompress(frame);
		},
	},
};
if (options.first) {
	// a child: import, then decode once, each step timed
	const start = performance.now();
	const decode = await DECODERS[options.first].load();
	const loaded = performance.now();
	const out = decode(new Uint8Array(fs.readFileSync(String(options.frame))), Number(options.size));
	const decoded = performance.now();
	if (out.length !== Number(options.size)) throw new Error(`${options.first} decoded ${out.length} bytes`);
	console.log(JSON.stringify({ load: loaded - start, decode: decoded - loaded }));
	process.exit(0);
}

const names = Object.keys(DECODERS);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hurray-zstd-bench-"));
process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
const python = process.env.PYTHON ?? "python";
execFileSync(python, [path.join(here, "zstd_frames.py"), dir, "--repeats", String(options.repeats), "--mutants", String(options.mutants)], {
	stdio: ["ignore", "inherit", "inherit"],
});
const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8"));
/** @param {string} file */
const read = (file) => new Uint8Array(fs.readFileSync(path.join(dir, file)));
const load = process.env.LOAD_BEFORE ?? os.loadavg()[0].toFixed(2);
const decoders = Object.fromEntries(await Promise.all(names.map(async (name) => [name, await DECODERS[name].load()])));

console.log(`node ${process.version}, load average ${os.loadavg().map((x) => x.toFixed(2)).join(" ")} before`);

// ---- speed
const header = ["chunk", "level", "ratio", "native MB/s", ...names.flatMap((n) => [`${n} MB/s`, `${n} / native`])];
console.log(`\n| ${header.join(" | ")} |\n|${header.map(() => "---").join("|")}|`);
for (const chunk of manifest.chunks) {
	const frame = read(`${chunk.name}.zst`);
	const raw = read(`${chunk.raw}.raw`);
	const calls = Math.max(1, (4 << 20) / chunk.bytes);
	for (const name of names) {
		if (!Buffer.from(decoders[name](frame, chunk.bytes)).equals(raw)) throw new Error(`${name} decoded ${chunk.name} wrong`);
	}
	const best = Object.fromEntries(names.map((name) => [name, Infinity]));
	for (let round = 0; round < Number(options.repeats); round++) {
		for (const name of names) {
			const decode = decoders[name];
			decode(frame, chunk.bytes);
			const start = performance.now();
			for (let k = 0; k < calls; k++) decode(frame, chunk.bytes);
			best[name] = Math.min(best[name], (performance.now() - start) / calls);
		}
	}
	const mbs = (/** @type {number} */ ms) => chunk.bytes / 1e6 / (ms / 1e3);
	const cells = names.flatMap((name) => [mbs(best[name]).toFixed(0), `${(mbs(best[name]) / chunk.native_mbs).toFixed(2)}x`]);
	const label = `${chunk.field} ${chunk.raw.split("-")[1].replace("KiB", " KiB").replace("MiB", " MiB")}`;
	console.log(`| ${label} | ${chunk.level} | ${(chunk.bytes / chunk.frame_bytes).toFixed(2)} | ${chunk.native_mbs.toFixed(0)} | ${cells.join(" | ")} |`);
}

// ---- the first decode in a fresh process
const probe = manifest.chunks.find((/** @type {{name: string}} */ c) => c.name === "noisy-4MiB-l3");
console.log(`\nfirst decode in a fresh process (${probe.name}), median of ${options.cold} processes:\n`);
console.log("| decoder | import (and compile) ms | first 4 MiB decode ms |\n|---|---|---|");
for (const name of names) {
	const runs = [];
	for (let k = 0; k < Number(options.cold); k++) {
		const args = [fileURLToPath(import.meta.url), "--first", name, "--frame", path.join(dir, `${probe.name}.zst`), "--size", String(probe.bytes)];
		runs.push(JSON.parse(execFileSync(process.execPath, args, { cwd: here, encoding: "utf8" })));
	}
	const median = (/** @type {number[]} */ xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
	console.log(`| ${name} | ${median(runs.map((r) => r.load)).toFixed(1)} | ${median(runs.map((r) => r.decode)).toFixed(1)} |`);
}

// ---- size
console.log("\nbytes a page loads:\n\n| decoder | module | minified | minified, gzipped |\n|---|---|---|---|");
for (const name of names) {
	const entry = DECODERS[name].module;
	const built = await esbuild.build({
		stdin: { contents: `export * from ${JSON.stringify(entry)};`, resolveDir: here },
		bundle: true,
		minify: true,
		format: "esm",
		write: false,
		metafile: true,
		logLevel: "silent",
	});
	const inputs = Object.values(built.metafile.inputs).reduce((sum, input) => sum + input.bytes, 0);
	const minified = built.outputFiles[0].contents;
	console.log(`| ${name} | ${inputs} | ${minified.length} | ${zlib.gzipSync(minified, { level: 9 }).length} |`);
}

// ---- damaged frames
/**
 * The reader's checks before the decoder (src/codecs.js): one frame, declaring its
 * size, at most the chunk's; then the decoder, whose output must be that size.
 * @param {Decode} decode
 * @param {Uint8Array} frame
 * @param {number} cap
 */
function asReader(decode, frame, cap) {
	const declared = zstdContentSize(frame);
	if (declared > cap || declared === 0) throw new Error("declared size");
	const out = decode(frame, declared);
	if (out.length !== declared) throw new Error("size");
	return out;
}

const bases = Object.fromEntries(manifest.bases.map((/** @type {{name: string, bytes: number}} */ b) => [b.name, { frame: read(`${b.name}.zst`), bytes: b.bytes }]));
const counts = Object.fromEntries(names.map((name) => [name, { agree: 0, refusedRead: 0, readRefused: 0, readOther: 0, slowest: 0 }]));
for (const { base, changes, python: expected } of manifest.mutants) {
	const frame = bases[base].frame.slice();
	for (const [at, value] of changes) frame[at] = value;
	for (const name of names) {
		const start = performance.now();
		let outcome = null;
		try {
			outcome = createHash("sha256").update(asReader(decoders[name], frame, bases[base].bytes)).digest("hex");
		} catch {
			outcome = null;
		}
		const c = counts[name];
		c.slowest = Math.max(c.slowest, performance.now() - start);
		if (outcome === expected) c.agree++;
		else if (outcome === null) c.refusedRead++;
		else if (expected === null) c.readRefused++;
		else c.readOther++;
	}
}
const refused = manifest.mutants.filter((/** @type {{python: unknown}} */ m) => m.python === null).length;
console.log(`\n${manifest.mutants.length} damaged frames, ${refused} refused by the Python reader:\n`);
console.log("| decoder | as Python | refused, Python reads | read, Python refuses | read to other bytes | slowest ms |\n|---|---|---|---|---|---|");
for (const name of names) {
	const c = counts[name];
	console.log(`| ${name} | ${c.agree} | ${c.refusedRead} | ${c.readRefused} | ${c.readOther} | ${c.slowest.toFixed(1)} |`);
}
console.log(`\nload average ${os.loadavg().map((x) => x.toFixed(2)).join(" ")} after (${load} before)`);
