// The zstd decoder against python-zstandard and numcodecs: every frame they make in
// this run (zstd_fixtures.py) decodes to its input bit for bit; truncated, damaged and
// hand-made hostile frames are each refused with a ZstdError naming the problem.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { decompress, ZstdError } from "../src/zstd.js";
import { PYTHON } from "./helpers.js";

const here = path.dirname(fileURLToPath(import.meta.url));

/** Make this run's frames in a temporary folder; read back its manifest. */
function makeFrames() {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hurray-zstd-"));
	process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
	try {
		execFileSync(PYTHON, [path.join(here, "zstd_fixtures.py"), dir], { stdio: ["ignore", "ignore", "inherit"] });
	} catch (error) {
		if (/** @type {NodeJS.ErrnoException} */ (error).code === "ENOENT") {
			throw new Error(
				`the zstd tests make their frames with Python (zstandard, numcodecs, numpy): ` +
					`"${PYTHON}" was not found; put python on PATH or set $PYTHON to one that has them`,
			);
		}
		throw error;
	}
	return { dir, frames: JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")).frames };
}

const { dir, frames } = makeFrames();

/** @param {string} file */
const bytes = (file) => new Uint8Array(fs.readFileSync(path.join(dir, file)));

/**
 * Assert that `actual` holds the bytes of `expected`.
 * @param {Uint8Array} actual
 * @param {Uint8Array} expected
 * @param {string} what
 */
function same(actual, expected, what) {
	assert.ok(actual instanceof Uint8Array, `${what}: not a Uint8Array`);
	assert.equal(actual.length, expected.length, `${what}: length`);
	assert.ok(Buffer.from(actual.buffer, actual.byteOffset, actual.length).equals(expected), `${what}: bytes differ`);
}

/**
 * Decode, returning the ZstdError thrown (any other error fails the test).
 * @param {Uint8Array} input
 * @param {number} [maxOutput]
 * @returns {Uint8Array | ZstdError}
 */
function attempt(input, maxOutput) {
	try {
		return decompress(input, maxOutput);
	} catch (error) {
		if (error instanceof ZstdError) return error;
		throw error;
	}
}

for (const { frame, raw } of frames) {
	test(`${frame} decodes to its input`, () => {
		const input = bytes(`${frame}.zst`);
		const expected = bytes(`${raw}.raw`);
		same(decompress(input), expected, frame);
		same(decompress(input, expected.length), expected, `${frame} with maxOutput its size`);
		same(decompress(input, expected.length + 1000), expected, `${frame} with room to spare`);
		if (expected.length > 0) {
			assert.throws(() => decompress(input, expected.length - 1), /maxOutput/);
		}
	});
}

/**
 * What a frame's blocks use, read from their headers as the format lays them out.
 * @param {Uint8Array} input
 * @param {Set<string>} seen
 */
function features(input, seen) {
	let pos = 0;
	while (pos < input.length) {
		const view = Buffer.from(input.buffer, input.byteOffset, input.length);
		if ((view.readUInt32LE(pos) & 0xfffffff0) >>> 0 === 0x184d2a50) {
			seen.add("skippable frame");
			pos += 8 + view.readUInt32LE(pos + 4);
			continue;
		}
		const descriptor = input[pos + 4];
		const single = (descriptor >> 5) & 1;
		const sizeBytes = [single, 2, 4, 8][descriptor >> 6];
		seen.add(`content size ${sizeBytes} bytes`);
		seen.add(descriptor & 4 ? "checksum" : "no checksum");
		seen.add(single ? "single segment" : "window descriptor");
		pos += 5 + (single ? 0 : 1) + sizeBytes;
		for (let last = 0; !last; ) {
			const header = input[pos] | (input[pos + 1] << 8) | (input[pos + 2] << 16);
			last = header & 1;
			const type = (header >> 1) & 3;
			const size = header >> 3;
			seen.add(["raw block", "RLE block", "compressed block"][type]);
			pos += 3;
			if (type === 2) compressedFeatures(input.subarray(pos, pos + size), seen);
			pos += type === 1 ? 1 : size;
		}
		pos += descriptor & 4 ? 4 : 0;
	}
}

/**
 * @param {Uint8Array} block
 * @param {Set<string>} seen
 */
function compressedFeatures(block, seen) {
	const type = block[0] & 3;
	const format = (block[0] >> 2) & 3;
	let sequences;
	if (type < 2) {
		seen.add(type === 0 ? "raw literals" : "RLE literals");
		const headerSize = format & 1 ? (format >> 1) + 2 : 1;
		let n = block[0] >> 3;
		if (headerSize > 1) n = (block[0] >> 4) | (block[1] << 4) | (headerSize === 3 ? block[2] << 12 : 0);
		sequences = headerSize + (type === 0 ? n : 1);
	} else {
		seen.add(`${type === 2 ? "Huffman" : "treeless"} literals, ${format === 0 ? 1 : 4} stream${format ? "s" : ""}`);
		const headerSize = format < 2 ? 3 : format + 2;
		const bits = format < 2 ? 10 : format === 2 ? 14 : 18;
		let header = 0;
		for (let i = headerSize - 1; i >= 0; i--) header = header * 256 + block[i];
		if (type === 2) seen.add(block[headerSize] >= 128 ? "direct Huffman weights" : "FSE-coded Huffman weights");
		sequences = headerSize + Math.floor(header / 2 ** (4 + bits));
	}
	const count = block[sequences];
	if (count === 0) {
		seen.add("no sequences");
		return;
	}
	const modes = block[sequences + (count < 128 ? 1 : count < 255 ? 2 : 3)];
	["literal lengths", "offsets", "match lengths"].forEach((kind, k) => {
		seen.add(`${kind} ${["predefined", "RLE", "FSE-coded", "repeated"][(modes >> (6 - 2 * k)) & 3]}`);
	});
}

test("the frames made hold every kind of block, literals, table and header", () => {
	const seen = new Set();
	for (const { frame } of frames) features(bytes(`${frame}.zst`), seen);
	const wanted = [
		"skippable frame",
		"checksum",
		"no checksum",
		"single segment",
		"window descriptor",
		"raw block",
		"RLE block",
		"compressed block",
		"raw literals",
		"RLE literals",
		"Huffman literals, 1 stream",
		"Huffman literals, 4 streams",
		"treeless literals, 1 stream",
		"treeless literals, 4 streams",
		"direct Huffman weights",
		"FSE-coded Huffman weights",
		"no sequences",
	];
	for (const kind of ["literal lengths", "offsets", "match lengths"]) {
		for (const mode of ["predefined", "RLE", "FSE-coded", "repeated"]) wanted.push(`${kind} ${mode}`);
	}
	for (const sizeBytes of [0, 1, 2, 4]) wanted.push(`content size ${sizeBytes} bytes`);
	assert.deepEqual(
		wanted.filter((w) => !seen.has(w)),
		[],
	);
});

const damaged = frames.filter((f) => f.damage);

test("every truncation of a frame is refused", () => {
	assert.ok(damaged.length >= 4);
	for (const { frame } of damaged) {
		const input = bytes(`${frame}.zst`);
		// every length up to 4096, then some 500 more spread to the end
		const step = Math.max(1, Math.floor((input.length - 4096) / 500));
		for (let n = 0; n < input.length; n += n < 4096 ? 1 : step) {
			assert.throws(() => decompress(input.subarray(0, n)), /truncated|empty input/, `${frame} cut to ${n}`);
		}
		assert.throws(() => decompress(input.subarray(0, input.length - 1)), /truncated/);
	}
});

test("a flipped bit is refused, or changes nothing the checksum would see", () => {
	let refused = 0;
	let tried = 0;
	for (const { frame, raw } of damaged) {
		const input = bytes(`${frame}.zst`);
		const expected = bytes(`${raw}.raw`);
		// every bit of the first 128 bytes (headers and tables), then some 400 more
		const step = Math.max(61, Math.floor((input.length * 8) / 400)) | 1;
		for (let bit = 0; bit < input.length * 8; bit += bit < 1024 ? 1 : step) {
			const changed = input.slice();
			changed[bit >> 3] ^= 1 << (bit & 7);
			// callers give the size they expect; without it, what the frame says bounds it
			const result = attempt(changed, bit % 2 ? expected.length : undefined);
			tried++;
			if (result instanceof ZstdError) refused++;
			else same(result, expected, `${frame} with bit ${bit} flipped`);
		}
	}
	// the rest are bits the decoder may not look at (the header's unused bit, the
	// padding after a table); few
	assert.ok(refused > 0.99 * tried, `${refused} of ${tried} refused`);
});

test("random damage to frames without checksums ends in output or a ZstdError", () => {
	let seed = 12345;
	const random = () => {
		// xorshift32
		seed ^= seed << 13;
		seed ^= seed >>> 17;
		seed ^= seed << 5;
		return (seed >>> 0) / 2 ** 32;
	};
	const plain = frames
		.filter((f) => /-65536-l/.test(f.frame) && !f.checksum)
		.map(({ frame, raw }) => ({ input: bytes(`${frame}.zst`), size: bytes(`${raw}.raw`).length }));
	assert.ok(plain.length > 10);
	for (let i = 0; i < 1500; i++) {
		const input = plain[i % plain.length].input.slice();
		const size = plain[i % plain.length].size;
		for (let k = 1 + Math.floor(random() * 4); k > 0; k--) {
			// mostly near the front, where the headers and tables are
			const at = Math.floor(input.length * random() ** 3);
			input[at] = Math.floor(random() * 256);
		}
		const result = attempt(input, size);
		if (!(result instanceof ZstdError)) assert.ok(result.length <= size);
	}
	// and bytes that are only noise after a frame header
	for (let i = 0; i < 1500; i++) {
		const input = new Uint8Array(6 + Math.floor(random() * 200)).map(() => Math.floor(random() * 256));
		input.set([0x28, 0xb5, 0x2f, 0xfd, input[4] & 0xf7]); // a magic number, no reserved bit
		const result = attempt(input, 1 << 20);
		if (!(result instanceof ZstdError)) assert.ok(result.length <= 1 << 20);
	}
});

test("a bad content checksum is refused", () => {
	const { frame } = damaged[0];
	const input = bytes(`${frame}.zst`);
	input[input.length - 2] ^= 0x10;
	assert.throws(() => decompress(input), /content checksum mismatch/);
});

// Hand-made frames: each hostile one beside a twin that differs only in the flaw and
// decodes, so that the refusal is for that flaw.

const MAGIC = [0x28, 0xb5, 0x2f, 0xfd];

/**
 * A frame with a 1 KiB window, no content size, and these blocks.
 * @param {number[][]} blocks
 */
const frame = (...blocks) => Uint8Array.from([...MAGIC, 0x00, 0x00, ...blocks.flat()]);

/**
 * A block: its 3-byte header (type 0 raw, 1 RLE, 2 compressed, 3 reserved), then content.
 * @param {number} type
 * @param {number[]} content
 * @param {{last?: boolean, size?: number}} [options] size: the header's block size
 */
function block(type, content, { last = true, size = content.length } = {}) {
	const header = (size << 3) | (type << 1) | (last ? 1 : 0);
	return [header & 255, (header >> 8) & 255, header >> 16, ...content];
}

/** Raw literals "abc": a 1-byte literals header (size 3 << 3), then the bytes. */
const ABC = [0x18, 97, 98, 99];

/**
 * A compressed block of literals "abc", then one sequence whose three codes have
 * one-symbol (RLE) tables: literal length code `ll`, offset code `of`, match length
 * code `ml`, their extra bits in `stream` (a backward bitstream).
 * @param {number} ll
 * @param {number} of
 * @param {number} ml
 * @param {number[]} stream
 */
const sequence = (ll, of, ml, stream, modes = 0x54) => frame(block(2, [...ABC, 1, modes, ll, of, ml, ...stream]));

/**
 * Huffman-coded literals (a 3-byte header: `n` literals in 1 stream, format 0, or 4,
 * format 1; the size of `body`, the tree and streams), type 2 (with a tree) or 3
 * (treeless), and no sequences.
 * @param {number} type
 * @param {number[]} body
 */
const huffman = (type, body, format = 0, n = 4) => {
	const header = type | (format << 2) | (n << 4) | (body.length << 14);
	return frame(block(2, [header & 255, (header >> 8) & 255, header >> 16, ...body, 0]));
};

/** Weights 1 and 1 given (2 implied), directly: codes 00, 01 and 1 for bytes 0, 1 and 2. */
const WEIGHTS = [0x81, 0x11];
/** A stream of 2, 0, 1, 2 in those codes: 1 00 01 1 under the end mark. */
const STREAM = 0b1100011;

const text = (/** @type {string} */ s) => new TextEncoder().encode(s);

/**
 * What "abcd" and then `n` matches of 3 bytes at repeat offsets become: with no
 * literals, offset value 1 takes the second repeat offset and swaps it to the front,
 * so the offsets go 4, 1, 4, 1, ... from the initial 1, 4, 8.
 * @param {number} n
 */
function repeats(n) {
	const out = [...text("abcd")];
	for (let i = 0; i < n; i++) {
		const offset = i % 2 ? 1 : 4;
		for (let j = 0; j < 3; j++) out.push(out[out.length - offset]);
	}
	return Uint8Array.from(out);
}

/**
 * A forward bitstream (as FSE table descriptions are written): each [value, bits] in
 * turn from the lowest bit of the first byte up.
 * @param {[number, number][]} fields
 */
function forward(fields) {
	const out = [];
	let bit = 0;
	for (const [value, bits] of fields) {
		for (let i = 0; i < bits; i++, bit++) {
			if (bit % 8 === 0) out.push(0);
			out[out.length - 1] |= ((value >> i) & 1) << (bit % 8);
		}
	}
	return out;
}

/**
 * @param {string} what
 * @param {Uint8Array} input
 * @param {Uint8Array} expected
 * @param {number} [maxOutput]
 */
function decodes(what, input, expected, maxOutput) {
	test(`hand-made: ${what} decodes`, () => same(decompress(input, maxOutput), expected, what));
}

/**
 * @param {string} what
 * @param {Uint8Array} input
 * @param {RegExp} reason
 * @param {number} [maxOutput]
 */
function refuses(what, input, reason, maxOutput) {
	test(`hand-made: ${what} is refused`, () => {
		assert.throws(
			() => decompress(input, maxOutput),
			(error) => error instanceof ZstdError && reason.test(error.message),
		);
	});
}

// sequences: offset code 2 with extra bits 2 is offset value 6, offset 3
decodes("a match", sequence(3, 2, 0, [0b110]), text("abcabc"));
// offset code 5, no extra bits: offset value 32, offset 29
refuses("a match before the start", sequence(3, 5, 0, [0b100000]), /match offset 29 reaches before the start/);
// no literals and offset value 3: the first repeat offset (1) minus one
refuses("a match at offset 0", sequence(0, 1, 0, [0b11]), /match offset 0/);
refuses("a sequence stream with bits left", sequence(3, 2, 0, [0b1100]), /does not end with the last sequence/);
refuses("more literals than there are", sequence(5, 2, 0, [0b110]), /more literals than the block has/);
refuses("reserved bits in the modes", sequence(3, 2, 0, [0b110], 0x55), /reserved bits set in the sequence/);
refuses("an RLE code too large", sequence(36, 2, 0, [0b110]), /corrupt RLE code 36 for literal lengths/);
refuses("a sequence stream of no bytes", sequence(3, 2, 1, []), /empty bitstream of sequences/);
refuses("repeat modes first", frame(block(2, [...ABC, 1, 0xfc, 0b1])), /repeat mode for literal lengths/);
refuses("bytes after no sequences", frame(block(2, [...ABC, 0, 7])), /bytes after a sequences section of no sequences/);
// 0x7f00 + 256 = 32768 sequences (a 3-byte count), all codes 0 and no bits at all
decodes(
	"a block of 32768 sequences",
	frame(block(0, text("abcd"), { last: false }), block(2, [0, 255, 0, 1, 0x54, 0, 0, 0, 1])),
	repeats(32768),
);

// FSE tables, here of literal lengths (offsets and match lengths RLE): accuracy log 5,
// a probability 0 (value 1 in 5 bits), a count of 2 more zeros, then all 32 states to
// code 3 (value 33: 63 in 6 bits).  The stream: the state (5 bits), then the offset's
// extra bits.
const table = (/** @type {[number, number][]} */ zeros) => forward([[0, 4], [1, 5], ...zeros, [63, 6]]);
decodes("an FSE table", frame(block(2, [...ABC, 1, 0x94, ...table([[2, 2]]), 2, 0, 0b10000010])), text("abcabc"));
// 11 counts of 3 zeros more: code 36 is past the last
refuses(
	"an FSE table of too many codes",
	frame(block(2, [...ABC, 1, 0x94, ...table([...new Array(11).fill([3, 2]), [2, 2]]), 2, 0, 0b10000010])),
	/corrupt FSE table of literal lengths: more than 36 symbols/,
);
refuses("a table too fine", frame(block(2, [...ABC, 1, 0x80, 0x0f, 0, 0, 1])), /accuracy log 20 above 9/);
// accuracy log 5, and then nothing
refuses(
	"a table past its block",
	frame(block(2, [...ABC, 1, 0x80, 0x00])),
	/truncated: the FSE table of literal lengths runs past the end of its block/,
);

// Huffman-coded literals
decodes("Huffman literals", huffman(2, [...WEIGHTS, STREAM]), Uint8Array.of(2, 0, 1, 2));
refuses("weights not a prefix code", huffman(2, [0x81, 0x31, STREAM]), /corrupt Huffman weights/);
refuses("Huffman weights all 0", huffman(2, [0x81, 0x00, STREAM]), /corrupt Huffman weights: all zero/);
// weights 12 and 0: one code of 12 bits, and the last symbol's of 1
refuses("a Huffman code of 12 bits", huffman(2, [0x81, 0xc0, STREAM]), /a complete prefix code of at most 11 bits/);
// weights 2 and 2, and 3 implied: complete, but with no code of the table's 3 bits
refuses("no Huffman weight of 1", huffman(2, [0x81, 0x22, STREAM]), /corrupt Huffman weights: none is 1/);
refuses("a stream with bits left", huffman(2, [...WEIGHTS, 0b11000110]), /stream does not end with its last literal/);
refuses("a stream with no end mark", huffman(2, [...WEIGHTS, 0]), /no end mark/);
refuses("treeless literals first", huffman(3, [STREAM]), /treeless literals, but no Huffman table/);
// 1000 literals (refused before they are read)
refuses("raw literals past maxOutput", frame(block(2, [0x84, 62, 0])), /output exceeds maxOutput \(100 bytes\)/, 100);
refuses("Huffman literals past maxOutput", huffman(2, [...WEIGHTS, STREAM], 0, 1000), /exceeds maxOutput \(100 bytes\)/, 100);
// four streams of one literal each: sizes 1, 1, 1 in the jump table
const four = (/** @type {number} */ third, n = 4) =>
	huffman(2, [...WEIGHTS, 1, 0, 1, 0, third, 0, 0b11, 0b100, 0b101, 0b11], 1, n);
decodes("Huffman literals in 4 streams", four(1), Uint8Array.of(2, 0, 1, 2));
refuses("a jump table past its streams", four(9), /corrupt Huffman jump table/);
refuses("4 streams of 1 literal", four(1, 1), /corrupt Huffman jump table/);
// the weights 1, 1 by FSE, accuracy log 5: probabilities 16 and 16 (values 17 in 5
// bits, then 31 in 5 bits, the larger of two that share 4 low bits, less 14); then
// the two states, 16 each (decoding 1), and no bits for a third
decodes(
	"FSE-coded Huffman weights",
	huffman(2, [4, ...forward([[0, 4], [17, 5], [31, 5]]), 0x10, 0x06, STREAM]),
	Uint8Array.of(2, 0, 1, 2),
);
// all 32 states to weight 1 (a probability 0, no more zeros, then 33 in 6 bits):
// every state reads no bits, so the weights would never end
refuses(
	"FSE-coded weights without end",
	huffman(2, [5, ...forward([[0, 4], [1, 5], [0, 2], [63, 6]]), 0x00, 0x04, STREAM]),
	/corrupt Huffman weights: more than 255/,
);

// blocks
decodes("RLE and raw blocks", frame(block(1, [65], { last: false, size: 4 }), block(0, text("bc"))), text("AAAAbc"));
refuses("a reserved block type", frame(block(3, [0])), /reserved block type/);
refuses("a block past the input", frame(block(0, text("abc"), { size: 4 })), /truncated: the block/);
// a single segment of 4 bytes: its window, and so its largest block, is 4 bytes
refuses(
	"a block past its window",
	Uint8Array.from([...MAGIC, 0x20, 4, ...block(0, text("abcde"))]),
	/block size 5 exceeds the frame's block maximum 4/,
);
// literal length 0, offset value 4 (offset 1), match length 65539 + 65533 (0xfffd):
// a block of all but one byte of 128 KiB, after one of 1 byte
const long = (/** @type {number} */ extra) =>
	frame(block(0, [97], { last: false }), block(2, [0, 1, 0x54, 0, 2, 52, extra & 255, extra >> 8, 0b100]));
decodes("a block of 128 KiB", long(0xfffd), new Uint8Array(131073).fill(97));
refuses("a block past 128 KiB", long(0xffff), /a block decodes to more than 128 KiB/);
refuses("a block past maxOutput", long(0xfffd), /output exceeds maxOutput \(1000 bytes\)/, 1000);

// frame headers: a dictionary id of 1 byte
const dictionary = (/** @type {number} */ id) => Uint8Array.from([...MAGIC, 0x01, 0x00, id, ...block(0, text("ab"))]);
decodes("a dictionary of id 0, which is none", dictionary(0), text("ab"));
refuses("a dictionary", dictionary(7), /needs dictionary 7; dictionaries are not supported/);
refuses(
	"a reserved header bit",
	Uint8Array.from([...MAGIC, 0x08, 0x00, ...block(0, text("ab"))]),
	/reserved bit set in the frame header descriptor/,
);
// content sizes of 2 bytes, plus 256: 44 + 256 = 300
const sized = (/** @type {number} */ size) =>
	Uint8Array.from([...MAGIC, 0x40, 0x00, size - 256, 0, ...block(0, new Array(300).fill(1))]);
decodes("its content size", sized(300), new Uint8Array(300).fill(1));
refuses("less than its content size", sized(301), /decodes to 300 bytes, not its declared content size 301/);
refuses("more than its content size", sized(299), /more than its declared content size 299/);
refuses("a content size past maxOutput", sized(300), /frame content size 300 exceeds maxOutput \(299 bytes\)/, 299);
refuses(
	"a content size of 2**63",
	Uint8Array.from([...MAGIC, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0x80, ...block(0, [])]),
	/content size 9223372036854776000 is more than its 3 bytes can hold/,
);

// frames
const skippable = [0x50, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 9, 9, 0x5f, 0x2a, 0x4d, 0x18, 0, 0, 0, 0];
decodes("only skippable frames", Uint8Array.from(skippable), new Uint8Array(0));
refuses("a skippable frame past the input", Uint8Array.from(skippable.slice(0, 9)), /truncated: the skippable frame/);
refuses("a bad magic number", Uint8Array.from([0x28, 0xb5, 0x2f, 0xfe, 0, 0, 1, 0, 0]), /bad magic number 0xfe2fb528/);
refuses("bytes after a frame", Uint8Array.from([...frame(block(0, text("ab"))), 0x28]), /truncated: the frame magic/);
refuses("no bytes", new Uint8Array(0), /empty input/);

test("arguments are checked", () => {
	const input = frame(block(0, text("ab")));
	assert.throws(() => decompress(/** @type {any} */ ([1, 2, 3])), TypeError);
	for (const bad of [-1, 1.5, Number.NaN, Infinity]) assert.throws(() => decompress(input, bad), RangeError);
	same(decompress(Buffer.from(input)), text("ab"), "a Buffer");
	same(decompress(input, 0 + 2), text("ab"), "exactly");
});
