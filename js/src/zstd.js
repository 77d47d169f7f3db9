// A Zstandard decoder, written from the format's specification (RFC 8878).
//
// decompress() decodes one or more concatenated frames (skippable frames are
// skipped) into one Uint8Array.  Every read is bounds-checked and every loop is
// bounded by the input or by the output's limit, so damaged or hostile input ends in
// a ZstdError naming the problem, never in a hang, a wrong result the frame could
// have caught (its content size, its checksum) or an allocation beyond the limit.
// Dictionaries are not supported.
//
// Layout: the frame and block level (decompress, decodeFrame), the literals section
// with its Huffman tables, the FSE tables, the sequences section, then XXH64 for the
// content checksum.

/** The input is not a valid Zstandard frame, or decodes beyond the allowed size. */
export class ZstdError extends Error {
	/** @param {string} message what is wrong, naming the part of the frame */
	constructor(message) {
		super(`zstd: ${message}`);
		this.name = "ZstdError";
	}
}

const FRAME_MAGIC = 0xfd2fb528;
const SKIPPABLE_MAGIC = 0x184d2a50; // the low 4 bits are free
/** The most a block decodes to, whatever the window. */
const BLOCK_MAX = 1 << 17;
/** The most output one input byte can stand for: a 4-byte RLE block makes 128 KiB. */
const MAX_RATIO = BLOCK_MAX / 4;

/**
 * Decode the Zstandard frames of `input`.
 *
 * @param {Uint8Array} input one or more concatenated frames (skippable ones allowed)
 * @param {number} [maxOutput] the most bytes the frames may decode to in all; a frame
 *   that declares or decodes to more is refused.  Without it, a frame that declares its
 *   content size gets exactly that much memory, and one that does not gets memory
 *   as its blocks decode.
 * @returns {Uint8Array} the decoded bytes of all frames, in order
 * @throws {ZstdError} when the input is damaged, truncated, uses a dictionary, or
 *   decodes beyond `maxOutput` or a frame's declared content size
 */
export function decompress(input, maxOutput) {
	if (!(input instanceof Uint8Array)) throw new TypeError("zstd: input must be a Uint8Array");
	if (maxOutput !== undefined && !(Number.isSafeInteger(maxOutput) && maxOutput >= 0)) {
		throw new RangeError(`zstd: maxOutput must be a non-negative integer, not ${maxOutput}`);
	}
	if (input.length === 0) throw new ZstdError("empty input, no frame");
	const out = new Output(maxOutput ?? Infinity);
	let pos = 0;
	while (pos < input.length) {
		need(input, pos, 4, input.length, "frame magic number");
		const magic = u32(input, pos);
		if (magic === FRAME_MAGIC) {
			pos = decodeFrame(input, pos + 4, out);
		} else if ((magic & 0xfffffff0) >>> 0 === SKIPPABLE_MAGIC) {
			need(input, pos + 4, 4, input.length, "skippable frame size");
			const size = u32(input, pos + 4);
			need(input, pos + 8, size, input.length, "skippable frame");
			pos += 8 + size;
		} else {
			throw new ZstdError(`bad magic number 0x${magic.toString(16)} at byte ${pos}`);
		}
	}
	return out.result();
}

/** The decoded bytes, grown as frames and blocks need, never past `limit`. */
class Output {
	/** @param {number} limit */
	constructor(limit) {
		this.limit = limit;
		this.buf = new Uint8Array(0);
		this.len = 0;
	}

	/**
	 * Make the buffer hold at least `end` bytes, doubling as it grows but never past `cap`.
	 * @param {number} end
	 * @param {number} cap
	 */
	reserve(end, cap) {
		if (end <= this.buf.length) return;
		const buf = new Uint8Array(Math.min(cap, Math.max(end, 2 * this.buf.length)));
		buf.set(this.buf.subarray(0, this.len));
		this.buf = buf;
	}

	result() {
		return this.len === this.buf.length ? this.buf : this.buf.slice(0, this.len);
	}
}

/** What a frame's blocks share: the tables and offsets a block may repeat from the one before. */
class FrameState {
	/**
	 * @param {number} start where the frame's output begins in the Output
	 * @param {number} end where it must end (its declared size), or the Output's limit
	 * @param {boolean} declared whether the frame declared its content size
	 */
	constructor(start, end, declared) {
		this.start = start;
		this.end = end;
		this.declared = declared;
		/** @type {HuffmanTable | null} */
		this.huffman = null;
		/** @type {(FseTable | null)[]} literal lengths, offsets, match lengths */
		this.fse = [null, null, null];
		this.rep = [1, 4, 8];
		/** @type {Uint8Array} the current block's literals: lit[litPos, litEnd) */
		this.lit = EMPTY;
		this.litPos = 0;
		this.litEnd = 0;
	}

	/**
	 * The error for output running past `stop`, naming the bound that set it: the
	 * frame's declared size, maxOutput, or else the block's 128 KiB.
	 * @param {Output} out
	 * @param {number} stop
	 */
	overrun(out, stop) {
		if (this.declared && stop === this.end) {
			return new ZstdError(`frame decodes to more than its declared content size ${this.end - this.start}`);
		}
		if (stop === out.limit) return new ZstdError(`output exceeds maxOutput (${out.limit} bytes)`);
		return new ZstdError("a block decodes to more than 128 KiB");
	}
}

const EMPTY = new Uint8Array(0);

/**
 * @param {Uint8Array} src
 * @param {number} pos
 */
function u32(src, pos) {
	return (src[pos] | (src[pos + 1] << 8) | (src[pos + 2] << 16) | (src[pos + 3] << 24)) >>> 0;
}

/**
 * Throw unless `n` bytes from `pos` lie before `end`.
 * @param {Uint8Array} src
 * @param {number} pos
 * @param {number} n
 * @param {number} end
 * @param {string} what the part being read, for the message
 */
function need(src, pos, n, end, what) {
	if (pos + n > end) {
		const where = end === src.length ? "the input" : "its block";
		throw new ZstdError(`truncated: the ${what} (${n} bytes at byte ${pos}) runs past the end of ${where}`);
	}
}

/**
 * Decode one frame from just after its magic number, appending to `out`.
 * @param {Uint8Array} src
 * @param {number} pos
 * @param {Output} out
 * @returns {number} where the frame ends in `src`
 */
function decodeFrame(src, pos, out) {
	need(src, pos, 1, src.length, "frame header");
	const descriptor = src[pos++];
	if (descriptor & 0x08) throw new ZstdError("reserved bit set in the frame header descriptor");
	const single = (descriptor >> 5) & 1; // single segment: the window is the whole content
	const hasChecksum = (descriptor >> 2) & 1;
	const dictBytes = [0, 1, 2, 4][descriptor & 3];
	const sizeFlag = descriptor >> 6;
	const sizeBytes = sizeFlag === 0 ? single : 1 << sizeFlag;
	need(src, pos, 1 - single + dictBytes + sizeBytes, src.length, "frame header");
	let window = 0;
	if (!single) {
		const exponent = 10 + (src[pos] >> 3);
		// the reference library decodes windows of up to 2**31 (plus its mantissa) on
		// 64-bit machines, and refuses larger ones: so does this decoder
		if (exponent > 31) throw new ZstdError(`a window of 2**${exponent} bytes, more than the 2**31 allowed`);
		window = 2 ** exponent + 2 ** (exponent - 3) * (src[pos] & 7);
		pos++;
	}
	const dict = readLE(src, pos, dictBytes);
	pos += dictBytes;
	if (dict !== 0) throw new ZstdError(`the frame needs dictionary ${dict}; dictionaries are not supported`);
	const declared = sizeBytes > 0;
	const size = readLE(src, pos, sizeBytes) + (sizeBytes === 2 ? 256 : 0);
	pos += sizeBytes;
	if (single) window = size;
	const blockMax = Math.min(window, BLOCK_MAX);

	const start = out.len;
	let end = out.limit;
	if (declared) {
		if (size > out.limit - start) {
			throw new ZstdError(`frame content size ${size} exceeds maxOutput (${out.limit} bytes)`);
		}
		if (size > (src.length - pos) * MAX_RATIO) {
			throw new ZstdError(
				`truncated or corrupt: frame content size ${size} is more than its ${src.length - pos} bytes can hold`,
			);
		}
		end = start + size;
		out.reserve(end, end);
	}
	const state = new FrameState(start, end, declared);

	for (let last = 0; !last; ) {
		need(src, pos, 3, src.length, "block header");
		const header = src[pos] | (src[pos + 1] << 8) | (src[pos + 2] << 16);
		pos += 3;
		last = header & 1;
		const type = (header >> 1) & 3;
		const blockSize = header >>> 3;
		if (type === 3) throw new ZstdError(`reserved block type at byte ${pos - 3}`);
		if (blockSize > blockMax) {
			throw new ZstdError(`block size ${blockSize} exceeds the frame's block maximum ${blockMax}`);
		}
		const stored = type === 1 ? 1 : blockSize; // an RLE block stores its one byte
		need(src, pos, stored, src.length, "block");
		if (type === 2) {
			const stop = Math.min(out.len + BLOCK_MAX, end);
			out.reserve(stop, end);
			decodeBlock(src, pos, pos + blockSize, out, stop, state);
		} else {
			if (blockSize > end - out.len) throw state.overrun(out, end);
			out.reserve(out.len + blockSize, end);
			if (type === 0) out.buf.set(src.subarray(pos, pos + blockSize), out.len);
			else out.buf.fill(src[pos], out.len, out.len + blockSize);
			out.len += blockSize;
		}
		pos += stored;
	}
	if (declared && out.len !== end) {
		throw new ZstdError(`frame decodes to ${out.len - start} bytes, not its declared content size ${size}`);
	}
	if (hasChecksum) {
		need(src, pos, 4, src.length, "content checksum");
		const want = u32(src, pos);
		const got = xxh64Low(out.buf, start, out.len);
		if (got !== want) {
			throw new ZstdError(`content checksum mismatch: frame says ${hex(want)}, content hashes to ${hex(got)}`);
		}
		pos += 4;
	}
	return pos;
}

/**
 * A little-endian unsigned integer of `n` ≤ 8 bytes (exact below 2**53).
 * @param {Uint8Array} src
 * @param {number} pos
 * @param {number} n
 */
function readLE(src, pos, n) {
	let value = 0;
	for (let i = n - 1; i >= 0; i--) value = value * 256 + src[pos + i];
	return value;
}

/** @param {number} x */
function hex(x) {
	return `0x${x.toString(16).padStart(8, "0")}`;
}

/**
 * Decode a compressed block, src[pos, end), into out.buf from out.len up to `stop`.
 * @param {Uint8Array} src
 * @param {number} pos
 * @param {number} end
 * @param {Output} out
 * @param {number} stop
 * @param {FrameState} state
 */
function decodeBlock(src, pos, end, out, stop, state) {
	pos = readLiterals(src, pos, end, out, stop, state);
	decodeSequences(src, pos, end, out, stop, state);
}

// ---------------------------------------------------------------------------------
// Literals

/** The literals of a block are decoded here (no block has more than 128 KiB). */
let literalBuffer = new Uint8Array(0);

/** @param {number} n */
function literalSpace(n) {
	if (literalBuffer.length < n) {
		literalBuffer = new Uint8Array(Math.min(BLOCK_MAX, Math.max(n, 2 * literalBuffer.length)));
	}
	return literalBuffer;
}

/**
 * Read the literals section at `pos` into state.lit[litPos, litEnd).
 * @param {Uint8Array} src
 * @param {number} pos
 * @param {number} end
 * @param {Output} out
 * @param {number} stop
 * @param {FrameState} state
 * @returns {number} where the sequences section begins
 */
function readLiterals(src, pos, end, out, stop, state) {
	need(src, pos, 1, end, "literals section header");
	const b0 = src[pos];
	const type = b0 & 3;
	const sizeFormat = (b0 >> 2) & 3;
	if (type < 2) {
		// raw or RLE: a 5-, 12- or 20-bit regenerated size
		const headerSize = sizeFormat & 1 ? (sizeFormat >> 1) + 2 : 1; // formats x0: 1 byte, 01: 2, 11: 3
		need(src, pos, headerSize, end, "literals section header");
		let n = b0 >> 3;
		if (headerSize === 2) n = (b0 >> 4) | (src[pos + 1] << 4);
		else if (headerSize === 3) n = (b0 >> 4) | (src[pos + 1] << 4) | (src[pos + 2] << 12);
		if (n > stop - out.len) throw state.overrun(out, stop);
		pos += headerSize;
		if (type === 0) {
			need(src, pos, n, end, "raw literals");
			state.lit = src;
			state.litPos = pos;
			state.litEnd = pos + n;
			return pos + n;
		}
		need(src, pos, 1, end, "RLE literal");
		state.lit = literalSpace(n).fill(src[pos], 0, n);
		state.litPos = 0;
		state.litEnd = n;
		return pos + 1;
	}
	// Huffman-coded, with a new table (type 2) or the previous one (3, "treeless"):
	// the regenerated and compressed sizes, 10, 14 or 18 bits each, follow the 4 bits
	// of type and format, in a 3-, 4- or 5-byte header.
	const headerSize = sizeFormat < 2 ? 3 : sizeFormat + 2;
	need(src, pos, headerSize, end, "literals section header");
	const bits = sizeFormat < 2 ? 10 : sizeFormat === 2 ? 14 : 18;
	const header = readLE(src, pos, headerSize);
	const n = Math.floor(header / 16) % 2 ** bits;
	const size = Math.floor(header / 2 ** (4 + bits));
	if (n > stop - out.len) throw state.overrun(out, stop);
	pos += headerSize;
	need(src, pos, size, end, "Huffman-coded literals");
	const streamsEnd = pos + size;
	let streams = pos;
	if (type === 2) {
		streams = readHuffmanTable(src, pos, streamsEnd, state);
	} else if (state.huffman === null) {
		throw new ZstdError("treeless literals, but no Huffman table came before them in the frame");
	}
	const lit = literalSpace(n);
	const table = /** @type {HuffmanTable} */ (state.huffman);
	if (sizeFormat === 0) {
		const r = new BackwardBits(src, streams, streamsEnd, "Huffman-coded literals");
		huffmanDecode(r, table, lit, 0, n);
		huffmanEnd(r);
	} else {
		// four streams, their first three sizes in a 6-byte jump table; the first three
		// streams decode ceil(n / 4) literals each, the fourth the rest
		need(src, streams, 6, streamsEnd, "Huffman jump table");
		const s1 = streams + 6 + (src[streams] | (src[streams + 1] << 8));
		const s2 = s1 + (src[streams + 2] | (src[streams + 3] << 8));
		const s3 = s2 + (src[streams + 4] | (src[streams + 5] << 8));
		const quarter = (n + 3) >> 2;
		if (s3 > streamsEnd || 3 * quarter > n) {
			throw new ZstdError("corrupt Huffman jump table: streams or literals do not add up");
		}
		const rs = [
			new BackwardBits(src, streams + 6, s1, "Huffman-coded literals"),
			new BackwardBits(src, s1, s2, "Huffman-coded literals"),
			new BackwardBits(src, s2, s3, "Huffman-coded literals"),
			new BackwardBits(src, s3, streamsEnd, "Huffman-coded literals"),
		];
		// all four in turn while each has pairs of literals left, then each alone
		const paired = huffmanFour(rs, table, lit, quarter, n - 3 * quarter);
		for (let k = 0; k < 4; k++) {
			huffmanDecode(rs[k], table, lit, k * quarter + paired, k < 3 ? (k + 1) * quarter : n);
			huffmanEnd(rs[k]);
		}
	}
	state.lit = lit;
	state.litPos = 0;
	state.litEnd = n;
	return streamsEnd;
}

/**
 * A Huffman decoding table: indexed by the next `bits` bits of a stream, each entry is
 * symbol << 4 | the length of its code.
 * @typedef {{bits: number, entries: Uint16Array}} HuffmanTable
 */

const weights = new Uint8Array(256);

/**
 * Read a Huffman tree description into state.huffman.
 * @param {Uint8Array} src
 * @param {number} pos
 * @param {number} end
 * @param {FrameState} state
 * @returns {number} where the streams begin
 */
function readHuffmanTable(src, pos, end, state) {
	need(src, pos, 1, end, "Huffman tree description");
	const header = src[pos++];
	let count; // the number of weights given; the last symbol's is implied
	if (header >= 128) {
		// weights of 4 bits each, two to a byte, the first in the high nibble
		count = header - 127;
		need(src, pos, (count + 1) >> 1, end, "Huffman weights");
		for (let i = 0; i < count; i++) weights[i] = (src[pos + (i >> 1)] >> (i & 1 ? 0 : 4)) & 15;
		pos += (count + 1) >> 1;
	} else {
		need(src, pos, header, end, "FSE-coded Huffman weights");
		count = fseWeights(src, pos, pos + header);
		pos += header;
	}
	// Each weight w > 0 stands for 2**(w-1) of the table; the implied last weight fills
	// the table up to the next power of two, which must be reachable with one weight.
	// (A weight above 11 makes the code longer than 11 bits, refused below.)
	let total = 0;
	for (let i = 0; i < count; i++) if (weights[i] > 0) total += 1 << (weights[i] - 1);
	if (total === 0) throw new ZstdError("corrupt Huffman weights: all zero");
	const bits = 32 - Math.clz32(total);
	const rest = (1 << bits) - total;
	if (bits > 11 || (rest & (rest - 1)) !== 0) {
		throw new ZstdError("corrupt Huffman weights: they do not make a complete prefix code of at most 11 bits");
	}
	weights[count++] = 32 - Math.clz32(rest);
	// the longest codes come in pairs at least: a code whose longest are shorter than
	// its table is not one the format allows
	if (weights.subarray(0, count).indexOf(1) < 0) throw new ZstdError("corrupt Huffman weights: none is 1");
	// Codes are handed out from the lowest weight (longest code) up, symbols of one weight
	// in their order: so the entries of weight w begin after those of lower weights.
	const next = new Uint32Array(bits + 2);
	for (let i = 0; i < count; i++) if (weights[i] > 0) next[weights[i] + 1] += 1 << (weights[i] - 1);
	for (let w = 2; w <= bits + 1; w++) next[w] += next[w - 1];
	const entries = new Uint16Array(1 << bits);
	for (let s = 0; s < count; s++) {
		const w = weights[s];
		if (w === 0) continue;
		const at = next[w];
		next[w] += 1 << (w - 1);
		entries.fill((s << 4) | (bits + 1 - w), at, at + (1 << (w - 1)));
	}
	state.huffman = { bits, entries };
	return pos;
}

/**
 * Decode FSE-compressed Huffman weights, src[pos, end), into `weights`: one table, two
 * states taking turns on one backward bitstream, until a state's update runs past its
 * start; the other state's symbol is then the last.
 * @param {Uint8Array} src
 * @param {number} pos
 * @param {number} end
 * @returns {number} the number of weights
 */
function fseWeights(src, pos, end) {
	const table = readFseTable(src, pos, end, 12, 6, "Huffman weights");
	const r = new BackwardBits(src, pos + table.bytes, end, "Huffman weights");
	const { symbols, bits, base } = table;
	let s1 = r.read(table.log);
	let s2 = r.read(table.log);
	let n = 0;
	for (;;) {
		// n is even here, and a turn adds two or three: at most 255 from n ≤ 252
		if (n > 252) throw new ZstdError("corrupt Huffman weights: more than 255");
		weights[n++] = symbols[s1];
		s1 = base[s1] + r.read(bits[s1]);
		if (r.left() < 0) {
			weights[n++] = symbols[s2];
			return n;
		}
		weights[n++] = symbols[s2];
		s2 = base[s2] + r.read(bits[s2]);
		if (r.left() < 0) {
			weights[n++] = symbols[s1];
			return n;
		}
	}
}

/**
 * Decode literals dst[from, to) from the Huffman-coded stream `r`.
 * @param {BackwardBits} r
 * @param {HuffmanTable} table
 * @param {Uint8Array} dst
 * @param {number} from
 * @param {number} to
 */
function huffmanDecode(r, table, dst, from, to) {
	const { src, start } = r;
	const bits = table.bits;
	const entries = table.entries;
	const mask = (1 << bits) - 1;
	let { p, c, avail, pad } = r; // in locals for this hot loop
	for (let i = from; i < to; i++) {
		if (avail < bits) {
			while (avail <= 24) {
				if (p > start) c = (c << 8) | src[--p];
				else {
					c <<= 8;
					pad += 8;
				}
				avail += 8;
			}
		}
		const e = entries[(c >>> (avail - bits)) & mask];
		dst[i] = e >> 4;
		avail -= e & 15;
	}
	r.p = p;
	r.c = c;
	r.avail = avail;
	r.pad = pad;
}

/**
 * Decode the first literals of four Huffman-coded streams, two of each in turn, so that
 * the four chains of table look-ups overlap: stream k's go to dst[k * quarter ...].
 * @param {BackwardBits[]} rs
 * @param {HuffmanTable} table
 * @param {Uint8Array} dst
 * @param {number} quarter
 * @param {number} most how many literals each stream has at least
 * @returns {number} how many literals of each stream were decoded (even)
 */
function huffmanFour(rs, table, dst, quarter, most) {
	const [r0, r1, r2, r3] = rs;
	const src = r0.src;
	const bits = table.bits;
	const entries = table.entries;
	const mask = (1 << bits) - 1;
	let c0 = r0.c, c1 = r1.c, c2 = r2.c, c3 = r3.c;
	let a0 = r0.avail, a1 = r1.avail, a2 = r2.avail, a3 = r3.avail;
	let p0 = r0.p, p1 = r1.p, p2 = r2.p, p3 = r3.p;
	// Refilling only while 4 bytes are left before a stream's start, so that no zero
	// padding is ever loaded here: what is left over is for huffmanDecode.
	const [b0, b1, b2, b3] = [r0.start + 4, r1.start + 4, r2.start + 4, r3.start + 4];
	let i = 0;
	for (; i + 2 <= most; i += 2) {
		if ((a0 < 22 && p0 < b0) || (a1 < 22 && p1 < b1) || (a2 < 22 && p2 < b2) || (a3 < 22 && p3 < b3)) break;
		// two codes of ≤ 11 bits each want 22 bits; a refill leaves at least 25
		const o0 = i;
		const o1 = quarter + i;
		const o2 = 2 * quarter + i;
		const o3 = 3 * quarter + i;
		let e;
		if (a0 < 22) {
			do {
				c0 = (c0 << 8) | src[--p0];
				a0 += 8;
			} while (a0 <= 24);
		}
		e = entries[(c0 >>> (a0 - bits)) & mask];
		dst[o0] = e >> 4;
		a0 -= e & 15;
		e = entries[(c0 >>> (a0 - bits)) & mask];
		dst[o0 + 1] = e >> 4;
		a0 -= e & 15;
		if (a1 < 22) {
			do {
				c1 = (c1 << 8) | src[--p1];
				a1 += 8;
			} while (a1 <= 24);
		}
		e = entries[(c1 >>> (a1 - bits)) & mask];
		dst[o1] = e >> 4;
		a1 -= e & 15;
		e = entries[(c1 >>> (a1 - bits)) & mask];
		dst[o1 + 1] = e >> 4;
		a1 -= e & 15;
		if (a2 < 22) {
			do {
				c2 = (c2 << 8) | src[--p2];
				a2 += 8;
			} while (a2 <= 24);
		}
		e = entries[(c2 >>> (a2 - bits)) & mask];
		dst[o2] = e >> 4;
		a2 -= e & 15;
		e = entries[(c2 >>> (a2 - bits)) & mask];
		dst[o2 + 1] = e >> 4;
		a2 -= e & 15;
		if (a3 < 22) {
			do {
				c3 = (c3 << 8) | src[--p3];
				a3 += 8;
			} while (a3 <= 24);
		}
		e = entries[(c3 >>> (a3 - bits)) & mask];
		dst[o3] = e >> 4;
		a3 -= e & 15;
		e = entries[(c3 >>> (a3 - bits)) & mask];
		dst[o3 + 1] = e >> 4;
		a3 -= e & 15;
	}
	r0.c = c0;
	r1.c = c1;
	r2.c = c2;
	r3.c = c3;
	r0.avail = a0;
	r1.avail = a1;
	r2.avail = a2;
	r3.avail = a3;
	r0.p = p0;
	r1.p = p1;
	r2.p = p2;
	r3.p = p3;
	return i;
}

/**
 * A bitstream read backwards, as the format writes Huffman and FSE streams: it starts
 * at the highest set bit of its last byte (the end mark), and each read takes the next
 * bits below.  Reading past the first byte yields zeros and makes left() negative.
 */
class BackwardBits {
	/**
	 * @param {Uint8Array} src
	 * @param {number} start
	 * @param {number} end
	 * @param {string} what the stream, for messages
	 */
	constructor(src, start, end, what) {
		if (end <= start) throw new ZstdError(`truncated: empty bitstream of ${what}`);
		const last = src[end - 1];
		if (last === 0) throw new ZstdError(`corrupt bitstream of ${what}: its last byte has no end mark`);
		this.src = src;
		this.start = start;
		/** the next byte to load is src[p - 1] */
		this.p = end - 1;
		/** the unread bits are the low `avail` bits of c */
		this.c = last;
		this.avail = 31 - Math.clz32(last);
		/** zero bits loaded from before the start */
		this.pad = 0;
	}

	/**
	 * The next `n` ≤ 24 bits, as an unsigned integer.
	 * @param {number} n
	 */
	read(n) {
		if (this.avail < n) {
			while (this.avail <= 24) {
				if (this.p > this.start) this.c = (this.c << 8) | this.src[--this.p];
				else {
					this.c <<= 8;
					this.pad += 8;
				}
				this.avail += 8;
			}
		}
		this.avail -= n;
		return (this.c >>> this.avail) & ((1 << n) - 1);
	}

	/** The bits not yet read; negative once reads went past the start. */
	left() {
		return (this.p - this.start) * 8 + this.avail - this.pad;
	}
}

/**
 * Throw unless the Huffman-coded stream `r` is used up exactly.
 * @param {BackwardBits} r
 */
function huffmanEnd(r) {
	if (r.left() !== 0) {
		throw new ZstdError("corrupt Huffman-coded literals: a stream does not end with its last literal");
	}
}

// ---------------------------------------------------------------------------------
// FSE tables

/**
 * An FSE decoding table of 2**log states: state s decodes symbols[s], then the next
 * state is base[s] plus the next bits[s] bits of the stream.  `bytes` is the size of
 * the description it was read from.
 * @typedef {{log: number, symbols: Uint8Array, bits: Uint8Array, base: Uint16Array, bytes: number}} FseTable
 */

const counts = new Int16Array(256);

/**
 * Read an FSE table description at `pos` (a forward, little-endian bitstream).
 * @param {Uint8Array} src
 * @param {number} pos
 * @param {number} end
 * @param {number} maxSymbol
 * @param {number} maxLog
 * @param {string} what the table, for messages
 * @returns {FseTable}
 */
function readFseTable(src, pos, end, maxSymbol, maxLog, what) {
	need(src, pos, 1, end, `FSE table of ${what}`);
	const log = (src[pos] & 15) + 5;
	if (log > maxLog) throw new ZstdError(`corrupt FSE table of ${what}: accuracy log ${log} above ${maxLog}`);
	const limit = (end - pos) * 8;
	let bit = 4; // the bit position from src[pos]
	/** The next 16 (or more) bits from `bit`, zeros past the end. @returns {number} */
	const peek = () => {
		const at = pos + (bit >> 3);
		return readLE(src, at, Math.max(0, Math.min(3, end - at))) >>> (bit & 7);
	};
	// The probabilities, each one more than it is (so -1, "less than one", is 0), take
	// just enough bits for the values still possible: `remaining` is one more than the
	// states left to share out, and the values [0, remaining] fit in nbits bits, the
	// smaller half of them in one bit less.
	let remaining = (1 << log) + 1;
	let threshold = 1 << log;
	let nbits = log + 1;
	let n = 0;
	while (remaining > 1) {
		if (n > maxSymbol) throw new ZstdError(`corrupt FSE table of ${what}: more than ${maxSymbol + 1} symbols`);
		const word = peek();
		const small = 2 * threshold - 1 - remaining;
		let value = word & (threshold - 1);
		if (value < small) {
			bit += nbits - 1;
		} else {
			value = word & (2 * threshold - 1);
			if (value >= threshold) value -= small;
			bit += nbits;
		}
		const probability = value - 1;
		counts[n++] = probability;
		remaining -= probability < 0 ? 1 : probability; // the coding keeps remaining ≥ 1
		if (probability === 0) {
			// then 2-bit counts of further zero probabilities, while they are 3 (past the
			// last symbol, refused at the loop's top: a zero leaves `remaining` as it is)
			for (let repeat = 3; repeat === 3; ) {
				repeat = peek() & 3;
				bit += 2;
				counts.fill(0, n, n + repeat);
				n += repeat;
			}
		}
		while (remaining < threshold) {
			nbits--;
			threshold >>= 1;
		}
	}
	if (bit > limit) throw new ZstdError(`truncated: the FSE table of ${what} runs past the end of its block`);
	const table = buildFseTable(counts, n, log);
	table.bytes = (bit + 7) >> 3;
	return table;
}

/**
 * The decoding table of normalized probabilities counts[0, n) (-1: less than one).
 * @param {ArrayLike<number>} probabilities
 * @param {number} n
 * @param {number} log
 * @returns {FseTable}
 */
function buildFseTable(probabilities, n, log) {
	const size = 1 << log;
	const symbols = new Uint8Array(size);
	const bits = new Uint8Array(size);
	const base = new Uint16Array(size);
	const next = new Uint16Array(n); // per symbol, the next of its states to number
	// "less than one" symbols take one state each from the top; the others are spread
	// over the rest with a fixed odd step, skipping the top
	let high = size - 1;
	for (let s = 0; s < n; s++) {
		if (probabilities[s] === -1) {
			symbols[high--] = s;
			next[s] = 1;
		} else {
			next[s] = probabilities[s];
		}
	}
	const step = (size >> 1) + (size >> 3) + 3;
	let p = 0;
	for (let s = 0; s < n; s++) {
		for (let i = 0; i < probabilities[s]; i++) {
			symbols[p] = s;
			do p = (p + step) & (size - 1);
			while (p > high);
		}
	}
	// A symbol's states, in table order, count up from its probability x to 2x - 1:
	// each reads enough bits to land anywhere in its share of the table.
	for (let i = 0; i < size; i++) {
		const x = next[symbols[i]]++;
		const nb = log - (31 - Math.clz32(x));
		bits[i] = nb;
		base[i] = (x << nb) - size;
	}
	return { log, symbols, bits, base, bytes: 0 };
}

/**
 * A table of one state that always decodes `symbol` and reads no bits.
 * @param {number} symbol
 * @returns {FseTable}
 */
function rleTable(symbol) {
	return { log: 0, symbols: Uint8Array.of(symbol), bits: new Uint8Array(1), base: new Uint16Array(1), bytes: 0 };
}

// ---------------------------------------------------------------------------------
// Sequences

/**
 * The extra bits of each literal length code; its baseline is the previous code's
 * plus 2**(the previous code's extra bits), from 0.
 */
const LL_BITS = Uint8Array.of(...new Array(16).fill(0), 1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
/** The same for match lengths, from 3. */
const ML_BITS = Uint8Array.of(...new Array(32).fill(0), 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);

/**
 * @param {Uint8Array} extraBits
 * @param {number} first
 */
function baselines(extraBits, first) {
	const base = new Uint32Array(extraBits.length);
	base[0] = first;
	for (let i = 1; i < base.length; i++) base[i] = base[i - 1] + (1 << extraBits[i - 1]);
	return base;
}
const LL_BASE = baselines(LL_BITS, 0);
const ML_BASE = baselines(ML_BITS, 3);

/** Literal lengths, offsets and match lengths: limits and default distributions. */
const KINDS = [
	{
		name: "literal lengths",
		maxSymbol: 35,
		maxLog: 9,
		predefined: buildFseTable(
			[4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1],
			36,
			6,
		),
	},
	{
		name: "offsets",
		maxSymbol: 31,
		maxLog: 8,
		predefined: buildFseTable(
			[1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1],
			29,
			5,
		),
	},
	{
		name: "match lengths",
		maxSymbol: 52,
		maxLog: 9,
		predefined: buildFseTable(
			[
				1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
				1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1,
			],
			53,
			6,
		),
	},
];

/**
 * Read the sequences section src[pos, end) and execute its sequences, with the block's
 * literals, into out.buf from out.len up to `stop`.
 * @param {Uint8Array} src
 * @param {number} pos
 * @param {number} end
 * @param {Output} out
 * @param {number} stop
 * @param {FrameState} state
 */
function decodeSequences(src, pos, end, out, stop, state) {
	need(src, pos, 1, end, "sequences section header");
	let n = src[pos++];
	if (n >= 128) {
		if (n < 255) {
			need(src, pos, 1, end, "sequences section header");
			n = ((n - 128) << 8) + src[pos++];
		} else {
			need(src, pos, 2, end, "sequences section header");
			n = src[pos] + (src[pos + 1] << 8) + 0x7f00;
			pos += 2;
		}
	}
	const buf = out.buf;
	const lit = state.lit;
	let lp = state.litPos;
	const litEnd = state.litEnd;
	let op = out.len;
	if (n > 0) {
		need(src, pos, 1, end, "sequences section header");
		const modes = src[pos++];
		if (modes & 3) throw new ZstdError("reserved bits set in the sequence compression modes");
		for (let k = 0; k < 3; k++) pos = readSequenceTable(src, pos, end, (modes >> (6 - 2 * k)) & 3, k, state);
		const [llTable, ofTable, mlTable] = /** @type {FseTable[]} */ (state.fse);
		const r = new BackwardBits(src, pos, end, "sequences");
		let sLL = r.read(llTable.log);
		let sOF = r.read(ofTable.log);
		let sML = r.read(mlTable.log);
		let [r1, r2, r3] = state.rep;
		const frameStart = state.start;
		for (let i = 0; i < n; i++) {
			// the offset's extra bits come first, then the match length's, then the literal length's
			const ofCode = ofTable.symbols[sOF];
			const mlCode = mlTable.symbols[sML];
			const llCode = llTable.symbols[sLL];
			// (read() takes at most 24 bits at a time: an offset code past 24 takes two)
			const ofValue =
				ofCode <= 24
					? (1 << ofCode) + r.read(ofCode)
					: 2 ** ofCode + r.read(ofCode - 24) * 2 ** 24 + r.read(24);
			const ml = ML_BASE[mlCode] + r.read(ML_BITS[mlCode]);
			const ll = LL_BASE[llCode] + r.read(LL_BITS[llCode]);
			// Offset values 1-3 name the repeat offsets (shifted by one when there are no
			// literals, the third then being the first minus one); the one used moves to the
			// front.  Larger values are new offsets, plus 3.
			let offset;
			if (ofValue > 3) {
				offset = ofValue - 3;
				r3 = r2;
				r2 = r1;
				r1 = offset;
			} else {
				const which = ofValue - (ll === 0 ? 0 : 1);
				if (which === 0) {
					offset = r1;
				} else {
					offset = which === 1 ? r2 : which === 2 ? r3 : r1 - 1;
					if (which !== 1) r3 = r2;
					r2 = r1;
					r1 = offset;
				}
			}
			if (i + 1 < n) {
				sLL = llTable.base[sLL] + r.read(llTable.bits[sLL]);
				sML = mlTable.base[sML] + r.read(mlTable.bits[sML]);
				sOF = ofTable.base[sOF] + r.read(ofTable.bits[sOF]);
			}
			if (ll > litEnd - lp) throw new ZstdError("corrupt sequence: it takes more literals than the block has");
			// before any copy, so that no sequence writes past `stop` (nor works on past it)
			if (ll + ml > stop - op) throw state.overrun(out, stop);
			if (ll < 32) for (let j = 0; j < ll; j++) buf[op + j] = lit[lp + j];
			else buf.set(lit.subarray(lp, lp + ll), op);
			op += ll;
			lp += ll;
			if (offset > op - frameStart || offset === 0) {
				throw new ZstdError(`corrupt sequence: match offset ${offset} reaches before the start of the frame`);
			}
			copyMatch(buf, op, offset, ml);
			op += ml;
		}
		if (r.left() !== 0) throw new ZstdError("corrupt sequences: the bitstream does not end with the last sequence");
		state.rep = [r1, r2, r3];
	} else if (pos !== end) {
		throw new ZstdError("corrupt block: bytes after a sequences section of no sequences");
	}
	// the literals after the last sequence
	const rest = litEnd - lp;
	if (rest > stop - op) throw state.overrun(out, stop);
	buf.set(lit.subarray(lp, litEnd), op);
	out.len = op + rest;
}

/**
 * Set up the table of kind `k` (0: literal lengths, 1: offsets, 2: match lengths) for
 * its compression mode.
 * @param {Uint8Array} src
 * @param {number} pos
 * @param {number} end
 * @param {number} mode 0: predefined, 1: RLE, 2: FSE-compressed, 3: repeat
 * @param {number} k
 * @param {FrameState} state
 * @returns {number} where the next table begins
 */
function readSequenceTable(src, pos, end, mode, k, state) {
	const kind = KINDS[k];
	if (mode === 0) {
		state.fse[k] = kind.predefined;
	} else if (mode === 1) {
		need(src, pos, 1, end, `RLE symbol of ${kind.name}`);
		if (src[pos] > kind.maxSymbol) throw new ZstdError(`corrupt RLE code ${src[pos]} for ${kind.name}`);
		state.fse[k] = rleTable(src[pos++]);
	} else if (mode === 2) {
		const table = readFseTable(src, pos, end, kind.maxSymbol, kind.maxLog, kind.name);
		state.fse[k] = table;
		pos += table.bytes;
	} else if (state.fse[k] === null) {
		throw new ZstdError(`repeat mode for ${kind.name}, but no table came before it in the frame`);
	}
	return pos;
}

/**
 * Copy `length` bytes from `offset` back to buf[op...]; the two may overlap, repeating
 * the last `offset` bytes.
 * @param {Uint8Array} buf
 * @param {number} op
 * @param {number} offset
 * @param {number} length
 */
function copyMatch(buf, op, offset, length) {
	const from = op - offset;
	if (length < 24) {
		// short copies (the most) are faster by hand than by a call
		for (let j = 0; j < length; j++) buf[op + j] = buf[from + j];
	} else if (offset >= length) {
		buf.copyWithin(op, from, from + length);
	} else {
		// buf[from, op + done) repeats with period `offset`, so copying from `from` at most
		// offset + done bytes to op + done never reads what it writes; done about doubles
		for (let done = 0; done < length; ) {
			const n = Math.min(offset + done, length - done);
			buf.copyWithin(op + done, from, from + n);
			done += n;
		}
	}
}

// ---------------------------------------------------------------------------------
// XXH64, for the content checksum (its low 32 bits).  A 64-bit word is a pair of
// 32-bit halves (hi, lo), kept as signed int32 so that V8 holds them unboxed; each
// helper leaves its result in H and L.

let H = 0;
let L = 0;

/**
 * The sum modulo 2**64.
 * @param {number} ah
 * @param {number} al
 * @param {number} bh
 * @param {number} bl
 */
function add64(ah, al, bh, bl) {
	const lo = (al >>> 0) + (bl >>> 0);
	L = lo | 0;
	H = (ah + bh + (lo > 0xffffffff ? 1 : 0)) | 0;
}

/**
 * The product modulo 2**64.
 * @param {number} ah
 * @param {number} al
 * @param {number} bh
 * @param {number} bl
 */
function mul64(ah, al, bh, bl) {
	// the high half of al * bl from 16-bit pieces (t1 and t2 stay below 2**32), the
	// cross terms only for their low 32 bits
	const a0 = al & 0xffff;
	const a1 = al >>> 16;
	const b0 = bl & 0xffff;
	const b1 = bl >>> 16;
	const t1 = a1 * b0 + ((a0 * b0) >>> 16);
	const t2 = a0 * b1 + (t1 & 0xffff);
	H = (a1 * b1 + (t1 >>> 16) + (t2 >>> 16) + Math.imul(al, bh) + Math.imul(ah, bl)) | 0;
	L = Math.imul(al, bl);
}

/**
 * Rotate left by 0 < r < 32.
 * @param {number} h
 * @param {number} l
 * @param {number} r
 */
function rotl64(h, l, r) {
	H = (h << r) | (l >>> (32 - r));
	L = (l << r) | (h >>> (32 - r));
}

const P1H = 0x9e3779b1 | 0;
const P1L = 0x85ebca87 | 0;
const P2H = 0xc2b2ae3d | 0;
const P2L = 0x27d4eb4f | 0;
const P3H = 0x165667b1 | 0;
const P3L = 0x9e3779f9 | 0;
const P4H = 0x85ebca77 | 0;
const P4L = 0xc2b2ae63 | 0;
const P5H = 0x27d4eb2f | 0;
const P5L = 0x165667c5 | 0;

/**
 * One accumulator round: rotl(acc + input * P2, 31) * P1.
 * @param {number} ah
 * @param {number} al
 * @param {number} ih
 * @param {number} il
 */
function round64(ah, al, ih, il) {
	mul64(ih, il, P2H, P2L);
	add64(ah, al, H, L);
	rotl64(H, L, 31);
	mul64(H, L, P1H, P1L);
}

/**
 * The low 32 bits of XXH64 (seed 0) of buf[start, end).
 * @param {Uint8Array} buf
 * @param {number} start
 * @param {number} end
 * @returns {number}
 */
function xxh64Low(buf, start, end) {
	const length = end - start;
	let p = start;
	let hh = P5H;
	let hl = P5L;
	if (length >= 32) {
		// four accumulators (hi, lo), started at P1 + P2, P2, 0 and -P1
		add64(P1H, P1L, P2H, P2L);
		// (-P1: its low half is not 0, so nothing borrows from the high half)
		const v = Int32Array.of(H, L, P2H, P2L, 0, 0, ~P1H, -P1L);
		p = xxh64Stripes(buf, p, end, v);
		hh = 0;
		hl = 0;
		for (let k = 0; k < 4; k++) {
			rotl64(v[2 * k], v[2 * k + 1], [1, 7, 12, 18][k]);
			add64(hh, hl, H, L);
			hh = H;
			hl = L;
		}
		for (let k = 0; k < 4; k++) {
			round64(0, 0, v[2 * k], v[2 * k + 1]);
			mul64(hh ^ H, hl ^ L, P1H, P1L);
			add64(H, L, P4H, P4L);
			hh = H;
			hl = L;
		}
	}
	add64(hh, hl, Math.floor(length / 4294967296), length | 0);
	hh = H;
	hl = L;
	for (; p + 8 <= end; p += 8) {
		round64(0, 0, i32(buf, p + 4), i32(buf, p));
		rotl64(hh ^ H, hl ^ L, 27);
		mul64(H, L, P1H, P1L);
		add64(H, L, P4H, P4L);
		hh = H;
		hl = L;
	}
	if (p + 4 <= end) {
		mul64(0, i32(buf, p), P1H, P1L);
		rotl64(hh ^ H, hl ^ L, 23);
		mul64(H, L, P2H, P2L);
		add64(H, L, P3H, P3L);
		hh = H;
		hl = L;
		p += 4;
	}
	for (; p < end; p++) {
		mul64(0, buf[p], P5H, P5L);
		rotl64(hh ^ H, hl ^ L, 11);
		mul64(H, L, P1H, P1L);
		hh = H;
		hl = L;
	}
	// avalanche: h ^= h >> 33; h *= P2; h ^= h >> 29; h *= P3; h ^= h >> 32
	mul64(hh, hl ^ (hh >>> 1), P2H, P2L);
	mul64(H ^ (H >>> 29), L ^ (L >>> 29) ^ (H << 3), P3H, P3L);
	return (L ^ H) >>> 0;
}

/**
 * Run the accumulators `v` over the 32-byte stripes from `p` (a function of its own,
 * small enough for V8 to inline the arithmetic into its loop).
 * @param {Uint8Array} buf
 * @param {number} p
 * @param {number} end
 * @param {Int32Array} v
 * @returns {number} where the stripes end
 */
function xxh64Stripes(buf, p, end, v) {
	for (; p + 32 <= end; p += 32) {
		for (let k = 0; k < 8; k += 2) {
			round64(v[k], v[k + 1], i32(buf, p + 4 * k + 4), i32(buf, p + 4 * k));
			v[k] = H;
			v[k + 1] = L;
		}
	}
	return p;
}

/**
 * The little-endian 32-bit word at `pos`, as a signed int32.
 * @param {Uint8Array} src
 * @param {number} pos
 */
function i32(src, pos) {
	return src[pos] | (src[pos + 1] << 8) | (src[pos + 2] << 16) | (src[pos + 3] << 24);
}
