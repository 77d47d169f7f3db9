// A zlib stream decoder (RFC 1950, with DEFLATE, RFC 1951), written from the RFCs
// so that it tells where the stream ends (the platform's DecompressionStream does
// not, and ignores what follows) and refuses what zlib itself refuses: codes that
// are over-subscribed, or incomplete beyond a single one-bit code; a literal/length
// code without an end-of-block symbol; more than 286 literal/length or 30 distance
// codes; a symbol no code length gives; a distance before the start of the output;
// stored-block lengths that disagree; a bad header or Adler-32.
//
// inflate() decodes one stream, its output capped, and says where it ended.

import { HurrayFormatError } from "./errors.js";

/** The order in which the code length code's lengths are stored. */
const CODE_LENGTH_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
const LENGTH_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DISTANCE_BASE = [
	1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385,
	24577,
];
const DISTANCE_EXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];

/** @param {string} why */
const bad = (why) => new HurrayFormatError(`invalid zlib stream: ${why}`);

/**
 * A Huffman code as a table indexed by the next `bits` input bits (least significant
 * first, as DEFLATE packs codes): each entry `symbol << 4 | length`, 0 where no code
 * starts with those bits.
 * @typedef {object} Code
 * @property {Uint16Array} table
 * @property {number} bits
 */

/**
 * The canonical code of `lengths` (RFC 1951, 3.2.2), checked as zlib checks it: never
 * over-subscribed, and incomplete only when `incomplete` allows it and the code is
 * a single one-bit code (or has no code at all).
 * @param {ArrayLike<number>} lengths
 * @param {boolean} incomplete
 * @param {string} what
 * @returns {Code}
 */
function makeCode(lengths, incomplete, what) {
	const count = new Array(16).fill(0);
	for (let i = 0; i < lengths.length; i++) count[lengths[i]]++;
	count[0] = 0;
	let bits = 15;
	while (bits > 0 && count[bits] === 0) bits--;
	const table = new Uint16Array(1 << bits);
	if (bits === 0) {
		return { table, bits }; // no code at all: any symbol decoded is an error
	}
	let left = 1;
	for (let len = 1; len <= 15; len++) {
		left = 2 * left - count[len];
		if (left < 0) throw bad(`the ${what} code is over-subscribed`);
	}
	if (left > 0 && (!incomplete || bits !== 1)) {
		throw bad(`the ${what} code is incomplete`);
	}
	// the first code of each length, then each symbol's code, stored bit-reversed
	const next = new Array(16).fill(0);
	for (let len = 1, code = 0; len <= 15; len++) {
		code = (code + count[len - 1]) * 2;
		next[len] = code;
	}
	for (let symbol = 0; symbol < lengths.length; symbol++) {
		const len = lengths[symbol];
		if (len === 0) continue;
		let code = next[len]++;
		let reversed = 0;
		for (let k = 0; k < len; k++) {
			reversed = reversed * 2 + (code & 1);
			code >>>= 1;
		}
		const step = 1 << len;
		const entry = symbol * 16 + len;
		for (let at = reversed; at < table.length; at += step) table[at] = entry;
	}
	return { table, bits };
}

/**
 * The input, read a bit at a time, least significant bit of each byte first.  At
 * most 31 bits are held, so that the shifts below stay within 32-bit integers.
 */
class Bits {
	/** @param {Uint8Array} data */
	constructor(data) {
		this.data = data;
		/** the next byte to load */
		this.pos = 0;
		/** the loaded bits not yet used, the next one lowest */
		this.hold = 0;
		this.count = 0;
	}

	/**
	 * Load bytes until `n` ≤ 24 bits are held (zeros past the end of the input, which
	 * `use` refuses to take).
	 * @param {number} n
	 */
	need(n) {
		while (this.count < n) {
			const byte = this.pos < this.data.length ? this.data[this.pos] : 0;
			this.pos++;
			this.hold |= byte << this.count;
			this.count += 8;
		}
	}

	/**
	 * Drop the next `n` bits.
	 * @param {number} n
	 */
	use(n) {
		this.hold >>>= n;
		this.count -= n;
		if (8 * this.pos - this.count > 8 * this.data.length) {
			throw bad("the stream is truncated");
		}
	}

	/**
	 * The next `n` ≤ 24 bits as a number, taken.
	 * @param {number} n
	 */
	take(n) {
		this.need(n);
		const value = this.hold & ((1 << n) - 1);
		this.use(n);
		return value;
	}

	/**
	 * The next symbol of `code`, taken.
	 * @param {Code} code
	 * @param {string} what
	 */
	symbol(code, what) {
		this.need(code.bits);
		const entry = code.table[this.hold & ((1 << code.bits) - 1)];
		if (entry === 0) throw bad(`an invalid ${what} code`);
		this.use(entry & 15);
		return entry >>> 4;
	}

	/** Drop the bits up to the next byte boundary and those held: where the input goes on. */
	align() {
		this.use(this.count % 8);
		const at = this.pos - this.count / 8;
		this.pos = at;
		this.hold = 0;
		this.count = 0;
		return at;
	}
}

/** The codes of a block of fixed Huffman codes (RFC 1951, 3.2.6). */
let fixed = /** @type {[Code, Code] | null} */ (null);

function fixedCodes() {
	if (fixed === null) {
		const lengths = new Array(288).fill(8, 0, 144).fill(9, 144, 256).fill(7, 256, 280).fill(8, 280, 288);
		fixed = [makeCode(lengths, false, "literal/length"), makeCode(new Array(32).fill(5), false, "distance")];
	}
	return fixed;
}

/**
 * The codes of a block of dynamic Huffman codes, read from its header.
 * @param {Bits} input
 * @returns {[Code, Code]}
 */
function dynamicCodes(input) {
	const nlen = input.take(5) + 257;
	const ndist = input.take(5) + 1;
	const ncode = input.take(4) + 4;
	if (nlen > 286 || ndist > 30) throw bad("too many length or distance symbols");
	const codeLengths = new Array(19).fill(0);
	for (let k = 0; k < ncode; k++) codeLengths[CODE_LENGTH_ORDER[k]] = input.take(3);
	const lengthCode = makeCode(codeLengths, false, "code length");
	const lengths = new Array(nlen + ndist).fill(0);
	for (let k = 0; k < nlen + ndist; ) {
		const symbol = input.symbol(lengthCode, "code length");
		if (symbol < 16) {
			lengths[k++] = symbol;
			continue;
		}
		let repeat;
		let value = 0;
		if (symbol === 16) {
			if (k === 0) throw bad("a length repeated before any length");
			value = lengths[k - 1];
			repeat = 3 + input.take(2);
		} else {
			repeat = symbol === 17 ? 3 + input.take(3) : 11 + input.take(7);
		}
		if (k + repeat > nlen + ndist) throw bad("a repeated length runs past the code lengths");
		lengths.fill(value, k, k + repeat);
		k += repeat;
	}
	if (lengths[256] === 0) throw bad("the literal/length code has no end-of-block symbol");
	return [makeCode(lengths.slice(0, nlen), true, "literal/length"), makeCode(lengths.slice(nlen), true, "distance")];
}

/** The output, grown as it is written, never past its cap. */
class Output {
	/** @param {number} cap */
	constructor(cap) {
		this.cap = cap;
		this.buf = new Uint8Array(Math.min(cap, 65536));
		this.len = 0;
	}

	/**
	 * Make room for `n` more bytes.
	 * @param {number} n
	 */
	room(n) {
		const end = this.len + n;
		if (end > this.cap) throw new HurrayFormatError(`the zlib stream expands past ${this.cap} bytes`);
		if (end > this.buf.length) {
			const grown = new Uint8Array(Math.min(this.cap, Math.max(end, 2 * this.buf.length)));
			grown.set(this.buf.subarray(0, this.len));
			this.buf = grown;
		}
	}
}

/**
 * Decode the symbols of a block of Huffman codes `lit` and `dist` up to its end of
 * block: the hot loop, with the input's bits and the output in local variables.
 * @param {Bits} input
 * @param {Output} out
 * @param {Code} lit
 * @param {Code} dist
 */
function decodeCodes(input, out, lit, dist) {
	const data = input.data;
	const bitsIn = 8 * data.length;
	const [litTable, litMask, litBits] = [lit.table, (1 << lit.bits) - 1, lit.bits];
	const [distTable, distMask, distBits] = [dist.table, (1 << dist.bits) - 1, dist.bits];
	let { hold, count, pos } = input;
	let { buf, len } = out;
	// Loading bytes until n ≤ 24 bits are held is written out at each place (a closure
	// over these variables would slow the loop several times); bytes past the end
	// load as zeros, and the bits used are checked against the input's.
	try {
		for (;;) {
			while (count < litBits) {
				hold |= (pos < data.length ? data[pos] : 0) << count;
				pos++;
				count += 8;
			}
			let entry = litTable[hold & litMask];
			if (entry === 0) throw bad("an invalid literal/length code");
			hold >>>= entry & 15;
			count -= entry & 15;
			if (8 * pos - count > bitsIn) throw bad("the stream is truncated");
			const symbol = entry >>> 4;
			if (symbol < 256) {
				if (len === buf.length) {
					out.len = len;
					out.room(1);
					buf = out.buf;
				}
				buf[len++] = symbol;
				continue;
			}
			if (symbol === 256) break;
			if (symbol > 285) throw bad("an invalid literal/length code");
			const lengthExtra = LENGTH_EXTRA[symbol - 257];
			while (count < lengthExtra) {
				hold |= (pos < data.length ? data[pos] : 0) << count;
				pos++;
				count += 8;
			}
			const length = LENGTH_BASE[symbol - 257] + (hold & ((1 << lengthExtra) - 1));
			hold >>>= lengthExtra;
			count -= lengthExtra;
			while (count < distBits) {
				hold |= (pos < data.length ? data[pos] : 0) << count;
				pos++;
				count += 8;
			}
			entry = distTable[hold & distMask];
			if (entry === 0) throw bad("an invalid distance code");
			hold >>>= entry & 15;
			count -= entry & 15;
			const code = entry >>> 4;
			if (code > 29) throw bad("an invalid distance code");
			const distanceExtra = DISTANCE_EXTRA[code];
			while (count < distanceExtra) {
				hold |= (pos < data.length ? data[pos] : 0) << count;
				pos++;
				count += 8;
			}
			const distance = DISTANCE_BASE[code] + (hold & ((1 << distanceExtra) - 1));
			hold >>>= distanceExtra;
			count -= distanceExtra;
			if (8 * pos - count > bitsIn) throw bad("the stream is truncated");
			if (distance > len) throw bad("a distance too far back");
			if (len + length > buf.length) {
				out.len = len;
				out.room(length);
				buf = out.buf;
			}
			// byte by byte: a match may overlap the bytes it copies
			for (let k = 0; k < length; k++, len++) buf[len] = buf[len - distance];
		}
	} finally {
		input.hold = hold;
		input.count = count;
		input.pos = pos;
		out.len = len;
	}
}

/**
 * Decode the zlib stream at the start of `data`, into at most `cap` bytes.
 * @param {Uint8Array} data
 * @param {number} cap
 * @returns {{out: Uint8Array, end: number}} the decoded bytes, and where the stream ends in `data`
 */
export function inflate(data, cap) {
	if (data.length < 2) throw bad("the stream is truncated");
	const [cmf, flg] = [data[0], data[1]];
	if ((cmf & 15) !== 8) throw bad(`unknown compression method ${cmf & 15}`);
	if (cmf >>> 4 > 7) throw bad(`a window of 2**${(cmf >>> 4) + 8} bytes, more than 2**15`);
	if ((cmf * 256 + flg) % 31 !== 0) throw bad("incorrect header check");
	if (flg & 0x20) throw bad("the stream needs a preset dictionary");
	const input = new Bits(data.subarray(2));
	const out = new Output(cap);
	for (let last = 0; !last; ) {
		last = input.take(1);
		const type = input.take(2);
		if (type === 0) {
			const at = input.align();
			if (at + 4 > input.data.length) throw bad("the stream is truncated");
			const length = input.data[at] | (input.data[at + 1] << 8);
			const check = input.data[at + 2] | (input.data[at + 3] << 8);
			if (length !== (check ^ 0xffff)) throw bad("invalid stored block lengths");
			if (at + 4 + length > input.data.length) throw bad("the stream is truncated");
			out.room(length);
			out.buf.set(input.data.subarray(at + 4, at + 4 + length), out.len);
			out.len += length;
			input.pos = at + 4 + length;
			continue;
		}
		if (type === 3) throw bad("a block of the reserved type 3");
		const [lit, dist] = type === 1 ? fixedCodes() : dynamicCodes(input);
		decodeCodes(input, out, lit, dist);
	}
	const at = input.align() + 2;
	if (at + 4 > data.length) throw bad("the stream is truncated before its Adler-32");
	const stored = ((data[at] << 24) | (data[at + 1] << 16) | (data[at + 2] << 8) | data[at + 3]) >>> 0;
	const decoded = out.buf.subarray(0, out.len);
	if (adler32(decoded) !== stored) throw bad("incorrect data check (Adler-32)");
	return { out: decoded, end: at + 4 };
}

/**
 * The Adler-32 of `bytes` (RFC 1950, 8.2).
 * @param {Uint8Array} bytes
 */
function adler32(bytes) {
	let a = 1;
	let b = 0;
	// 5552 bytes at most between reductions: the sums stay exact
	for (let i = 0; i < bytes.length; ) {
		const stop = Math.min(bytes.length, i + 5552);
		for (; i < stop; i++) {
			a += bytes[i];
			b += a;
		}
		a %= 65521;
		b %= 65521;
	}
	return (b * 65536 + a) >>> 0;
}
