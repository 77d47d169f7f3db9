// Decoding a chunk's codec chain (docs/spec/container.md, "Codecs") without letting
// the data choose how much memory it takes: every stored form records, or implies,
// the size of its output, which is checked against a cap before anything is
// decoded, as the Python reader does (xarray_hurray/container/bounded.py).  zstd is
// decoded by our own decoder (zstd.js), zlib by ours (inflate.js), lz4 blocks and
// Blosc frames here.  Each refuses what the Python reader's libraries refuse (zstd,
// zlib, and numcodecs with its LZ4 and c-blosc 1.x), and nothing else: the two
// readers read the same files.  A Blosc frame whose blocks are compressed with
// blosclz or snappy, or bit-shuffled, is refused with a clear error.

import { HurrayFormatError, HurrayUnsupportedError } from "./errors.js";
import { inflate } from "./inflate.js";
import { decompress as zstdDecompress } from "./zstd.js";

/** Codec ids the format allows. */
export const CODEC_IDS = ["zstd", "lz4", "zlib", "blosc"];

/** The members each codec's configuration may hold besides its id: numcodecs' arguments. */
const CODEC_MEMBERS = {
	zstd: ["level", "checksum"],
	lz4: ["acceleration"],
	zlib: ["level"],
	blosc: ["cname", "clevel", "shuffle", "blocksize", "typesize"],
};

/**
 * Why the configuration `codec` (of an allowed id) is one numcodecs refuses to make a
 * codec of, or null: a member its codec does not take, or a Blosc `typesize` that is
 * an integer below 1 (false among them).  Values are otherwise taken as they are:
 * only encoding uses them.
 * @param {Record<string, unknown>} codec
 * @returns {string | null}
 */
export function codecConfigProblem(codec) {
	const members = CODEC_MEMBERS[/** @type {keyof CODEC_MEMBERS} */ (codec.id)];
	const extra = Object.keys(codec).find((key) => key !== "id" && !members.includes(key));
	if (extra !== undefined) {
		return `the ${codec.id} codec takes no ${extra}`;
	}
	const t = codec.typesize;
	const below1 = t === false || (typeof t === "number" && Number.isInteger(t) && t < 1) || (typeof t === "bigint" && t < 1n);
	if (codec.id === "blosc" && below1) {
		return "a Blosc typesize is at least 1";
	}
	return null;
}

/** Codec ids this reader decodes. */
const DECODED = ["zstd", "lz4", "zlib", "blosc"];

/**
 * The most bytes any allowed codec writes when encoding `size` bytes (the format's
 * bound on the input of each codec after the first).
 * @param {number} size
 */
export function expansionBound(size) {
	return size + Math.floor(size / 64) + 1024;
}

/**
 * Throw unless this reader decodes every codec of `codecs`.
 * @param {{id: string}[]} codecs
 * @param {string} what names the variable
 */
export function checkDecodable(codecs, what) {
	for (const codec of codecs) {
		if (!DECODED.includes(codec.id)) {
			throw new HurrayUnsupportedError(
				`${what} is coded with ${codec.id}, which this reader does not decode (it decodes ${DECODED.join(", ")} and no codec)`,
			);
		}
	}
}

/**
 * Undo `codecs` (applied in order when the chunk was written) on `data`, never
 * producing more than `limit` bytes at the last step, nor more than a step's input
 * may hold at the steps before it.
 * @param {{id: string}[]} codecs
 * @param {Uint8Array} data
 * @param {number} limit
 * @returns {Uint8Array}
 */
export function decodeChain(codecs, data, limit) {
	// caps[k]: the most bytes undoing codec k may give; the first codec's output is the
	// buffer (limit), each later codec's output the input of the one before it
	/** @type {number[]} */
	const caps = [];
	for (let k = 0; k < codecs.length; k++) {
		caps.push(k === 0 ? limit : expansionBound(caps[k - 1]));
	}
	let out = data;
	for (let k = codecs.length - 1; k >= 0; k--) {
		const id = codecs[k].id;
		if (id === "zstd") {
			out = zstd(out, caps[k]);
		} else if (id === "lz4") {
			out = lz4(out, caps[k]);
		} else if (id === "zlib") {
			out = zlib(out, caps[k]);
		} else if (id === "blosc") {
			out = blosc(out, caps[k]);
		} else {
			throw new HurrayUnsupportedError(`codec ${id} is not decoded by this reader`);
		}
	}
	return out;
}

/**
 * A chunk's zstd frame: exactly one frame, declaring its content size (which must
 * be some bytes: numcodecs refuses a frame of none).
 * @param {Uint8Array} data
 * @param {number} cap
 */
function zstd(data, cap) {
	const declared = zstdContentSize(data);
	if (declared > cap) {
		throw new HurrayFormatError(`the zstd frame declares ${declared} bytes, more than the ${cap} this chunk can hold`);
	}
	if (declared === 0) {
		throw new HurrayFormatError("the zstd frame declares no bytes");
	}
	return zstdFrames(data, cap, declared);
}

/**
 * The bytes of the zstd frames `data`, at most `cap`, exactly `size` of them.
 * @param {Uint8Array} data
 * @param {number} cap
 * @param {number} size
 */
function zstdFrames(data, cap, size) {
	let out;
	try {
		// the cap bounds what the decoder may allocate, whatever the frames say
		out = zstdDecompress(data, cap);
	} catch (error) {
		throw new HurrayFormatError(`invalid zstd frame: ${/** @type {Error} */ (error).message}`);
	}
	if (out.length !== size) {
		throw new HurrayFormatError(`the zstd frames decode to ${out.length} bytes, not ${size}`);
	}
	return out;
}

/**
 * The content size the single Zstandard frame `data` declares (RFC 8878), checking
 * that it is exactly one frame: the decoder would go on into whatever follows.
 * @param {Uint8Array} data
 */
export function zstdContentSize(data) {
	if (data.length < 5 || data[0] !== 0x28 || data[1] !== 0xb5 || data[2] !== 0x2f || data[3] !== 0xfd) {
		throw new HurrayFormatError("not a Zstandard frame: wrong magic number");
	}
	const descriptor = data[4];
	const singleSegment = (descriptor >> 5) & 1;
	const dictionaryBytes = [0, 1, 2, 4][descriptor & 3];
	const sizeBytes = [singleSegment, 2, 4, 8][descriptor >> 6];
	if (sizeBytes === 0) {
		throw new HurrayFormatError("the Zstandard frame does not declare its content size");
	}
	const start = 5 + (1 - singleSegment) + dictionaryBytes;
	if (data.length < start + sizeBytes) {
		throw new HurrayFormatError("truncated Zstandard frame header");
	}
	let size = 0;
	for (let i = sizeBytes - 1; i >= 0; i--) {
		size = size * 256 + data[start + i];
	}
	// the two-byte form stores the size minus 256 (RFC 8878, 3.1.1.1.4)
	if (sizeBytes === 2) {
		size += 256;
	}
	// walk the blocks to the frame's end: each 3-byte header holds the last-block
	// flag, the type and the size; an RLE block stores one byte
	let at = start + sizeBytes;
	let last = false;
	while (!last) {
		if (at + 3 > data.length) {
			throw new HurrayFormatError("truncated Zstandard frame: a block header is cut short");
		}
		const header = data[at] | (data[at + 1] << 8) | (data[at + 2] << 16);
		last = (header & 1) === 1;
		const kind = (header >> 1) & 3;
		if (kind === 3) {
			throw new HurrayFormatError("a Zstandard block of the reserved type 3");
		}
		at += 3 + (kind === 1 ? 1 : header >>> 3);
	}
	at += descriptor & 4 ? 4 : 0;
	if (at !== data.length) {
		throw new HurrayFormatError(
			`a chunk must be one Zstandard frame; ${data.length - at} bytes ${at < data.length ? "follow" : "are missing from"} the frame`,
		);
	}
	return size;
}

/**
 * A numcodecs LZ4 chunk: the decoded length (u32, of 1 to 2**31 - 1 bytes: numcodecs
 * takes it as a positive int) and one LZ4 block.
 * @param {Uint8Array} data
 * @param {number} cap
 */
function lz4(data, cap) {
	if (data.length < 4) {
		throw new HurrayFormatError("truncated LZ4 chunk: no length prefix");
	}
	const size = (data[0] | (data[1] << 8) | (data[2] << 16) | (data[3] << 24)) >>> 0;
	if (size > cap) {
		throw new HurrayFormatError(`the lz4 block declares ${size} bytes, more than the ${cap} this chunk can hold`);
	}
	if (size === 0 || size >= 2 ** 31) {
		throw new HurrayFormatError(`the lz4 block declares ${size} bytes, not 1 to 2**31 - 1`);
	}
	return lz4Block(data.subarray(4), size);
}

/** The last bytes of a block are literals: a match ends at least this far from its end ... */
const LZ4_LAST_LITERALS = 5;
/** ... and a sequence after which the block goes on leaves this much output to it. */
const LZ4_MATCH_LIMIT = 12;

/**
 * One LZ4 block that decodes to exactly `size` (> 0) bytes, held to the rules the LZ4
 * library's safe decoder holds a block to: a sequence whose literals reach into
 * the last 12 bytes of the output, or the last 8 of the input, is the last one and
 * ends both exactly; a match ends at least 5 bytes before the end of the output.  A
 * match offset of 0 repeats the zeros the library writes for it.
 * @param {Uint8Array} data
 * @param {number} size
 */
function lz4Block(data, size) {
	const out = new Uint8Array(size);
	const bad = (/** @type {string} */ why) => new HurrayFormatError(`invalid LZ4 block: ${why}`);
	let i = 0;
	let o = 0;
	const n = data.length;
	for (;;) {
		if (i >= n) throw bad("truncated: no sequence token");
		const token = data[i++];
		let literals = token >>> 4;
		if (literals === 15) {
			let more;
			do {
				if (i >= n) throw bad("truncated literal length");
				more = data[i++];
				literals += more;
			} while (more === 255);
		}
		if (o + literals > size - LZ4_MATCH_LIMIT || i + literals > n - 8) {
			// the last sequence: its literals end the block and the output
			if (i + literals !== n || o + literals > size) {
				throw bad("the last literals do not end the block and its output");
			}
			out.set(data.subarray(i, n), o);
			o += literals;
			break;
		}
		out.set(data.subarray(i, i + literals), o);
		i += literals;
		o += literals;
		const offset = data[i] | (data[i + 1] << 8);
		i += 2;
		if (offset > o) throw bad("a match reaches before the start of the output");
		let length = (token & 15) + 4;
		if ((token & 15) === 15) {
			let more;
			do {
				if (i >= n) throw bad("truncated match length");
				more = data[i++];
				length += more;
			} while (more === 255);
		}
		if (o + length > size - LZ4_LAST_LITERALS) throw bad("a match runs into the last 5 bytes of the output");
		// byte by byte: a match may overlap the bytes it copies (an offset of 0 copies
		// the zeros the output starts as, as the library does)
		for (let k = 0; k < length; k++, o++) {
			out[o] = out[o - offset];
		}
	}
	if (o !== size) {
		throw bad(`it decodes to ${o} bytes, ${size} were declared`);
	}
	return out;
}

/**
 * A zlib stream that is all of `data`, decoding to at most `cap` bytes.
 * @param {Uint8Array} data
 * @param {number} cap
 */
function zlib(data, cap) {
	const { out, end } = inflate(data, cap);
	if (end !== data.length) {
		throw new HurrayFormatError(`the zlib stream is followed by ${data.length - end} more bytes`);
	}
	return out;
}

const BLOSC_SHUFFLE = 0x01;
const BLOSC_MEMCPYED = 0x02;
const BLOSC_BITSHUFFLE = 0x04;
const BLOSC_RESERVED = 0x08;
const BLOSC_DONT_SPLIT = 0x10;
const BLOSC_COMPRESSORS = ["blosclz", "lz4", "snappy", "zlib", "zstd"];
/** The largest block c-blosc takes: (2**31 - 1 - 255 * 4) / 3. */
const BLOSC_MAX_BLOCK = 715827542;

/**
 * One Blosc (version 1, format 2) frame: a 16-byte header (format, compressor
 * format, flags, type size, decoded bytes, block size, frame bytes), then either
 * the bytes as they are (flag "memcpyed") or the offset of each block and the
 * blocks.  A block is split into one stream per byte of the type when c-blosc
 * splits it: not the last, partial block, not with flag "don't split", and only
 * for types of at most 16 bytes and blocks of at least 128 elements; each stream is
 * its compressed length (u32) and bytes (stored as they are when that length is
 * the stream's).  Byte-shuffled blocks are unshuffled.  Refused as c-blosc 1.x
 * (through numcodecs) refuses: another format or compressor format, the reserved
 * flag 0x08, no bytes, a type size of 0, a block size of 0 or past the decoded
 * bytes, offsets or lengths outside the frame, a stream that does not decode to
 * its share of the block; and a block that does not split evenly into its
 * streams, whose last bytes c-blosc leaves undefined.
 * @param {Uint8Array} data
 * @param {number} cap
 */
function blosc(data, cap) {
	const bad = (/** @type {string} */ why) => new HurrayFormatError(`invalid Blosc frame: ${why}`);
	if (data.length < 16) {
		throw new HurrayFormatError("truncated Blosc frame header");
	}
	const view = new DataView(data.buffer, data.byteOffset, data.length);
	const [format, version, flags, typesize] = data;
	const nbytes = view.getUint32(4, true);
	const blocksize = view.getUint32(8, true);
	const cbytes = view.getUint32(12, true);
	if (cbytes !== data.length) {
		throw new HurrayFormatError(`the Blosc frame records ${cbytes} bytes but has ${data.length}`);
	}
	if (nbytes > cap) {
		throw new HurrayFormatError(`the blosc frame declares ${nbytes} bytes, more than the ${cap} this chunk can hold`);
	}
	if (nbytes === 0 || nbytes >= 2 ** 31) throw bad(`it declares ${nbytes} bytes, not 1 to 2**31 - 1`);
	if (format !== 2) throw bad(`format ${format}, not 2`);
	if (flags & BLOSC_RESERVED) throw bad("the reserved flag 0x08 is set");
	if (typesize === 0) throw bad("a type size of 0");
	if (blocksize === 0 || blocksize > nbytes || blocksize > BLOSC_MAX_BLOCK) {
		throw bad(`a block size of ${blocksize}, not 1 to the ${nbytes} bytes it declares`);
	}
	if (flags & BLOSC_MEMCPYED) {
		if (data.length !== 16 + nbytes) throw bad("a stored frame holds other than its bytes");
		return data.slice(16);
	}
	const compressor = BLOSC_COMPRESSORS[flags >> 5];
	if (compressor === undefined) throw bad(`compressor ${flags >> 5}, none of c-blosc's`);
	if (version !== 1) throw bad(`${compressor} format ${version}, not 1`);
	if (!["lz4", "zlib", "zstd"].includes(compressor)) {
		throw new HurrayUnsupportedError(
			`a Blosc frame compressed with ${compressor}, which this reader does not decode (it decodes lz4, zlib and zstd, byte-shuffled or not)`,
		);
	}
	const blocks = Math.ceil(nbytes / blocksize);
	if (blocks > Math.floor((cbytes - 16) / 4)) throw bad("truncated block offsets");
	const out = new Uint8Array(nbytes);
	for (let b = 0; b < blocks; b++) {
		const size = Math.min(blocksize, nbytes - b * blocksize);
		const leftover = size < blocksize;
		const shuffled = flags & BLOSC_SHUFFLE && typesize > 1;
		if (!shuffled && flags & BLOSC_BITSHUFFLE && size >= typesize) {
			throw new HurrayUnsupportedError(
				"a Blosc frame bit-shuffled, which this reader does not decode (it decodes lz4, zlib and zstd, byte-shuffled or not)",
			);
		}
		const split = !(flags & BLOSC_DONT_SPLIT) && typesize <= 16 && Math.floor(size / typesize) >= 128 && !leftover;
		const streams = split ? typesize : 1;
		const streamSize = Math.floor(size / streams);
		if (streamSize * streams !== size) throw bad(`a block of ${size} bytes does not split into ${streams} streams`);
		const block = new Uint8Array(size);
		// offsets and lengths are signed 32-bit numbers to c-blosc
		let at = view.getInt32(16 + 4 * b, true);
		for (let s = 0; s < streams; s++) {
			if (at < 0 || at > cbytes - 4) throw bad("a stream starts outside the frame");
			const length = view.getInt32(at, true);
			at += 4;
			if (length < 0 || length > cbytes - at) throw bad("a stream runs past the frame");
			const bytes = data.subarray(at, at + length);
			let part;
			if (length === streamSize) {
				part = bytes;
			} else if (compressor === "lz4") {
				part = lz4Block(bytes, streamSize);
			} else if (compressor === "zstd") {
				// c-blosc's zstd decodes every frame there is, sizes declared or not
				part = zstdFrames(bytes, streamSize, streamSize);
			} else {
				// and its zlib stops at the end of the stream, whatever follows
				part = inflate(bytes, streamSize).out;
				if (part.length !== streamSize) throw bad(`a stream decodes to ${part.length} bytes, not ${streamSize}`);
			}
			block.set(part, s * streamSize);
			at += length;
		}
		const into = out.subarray(b * blocksize, b * blocksize + size);
		if (shuffled) {
			// byte k of element i lies at k * n + i; the bytes past n whole elements as they are
			const n = Math.floor(size / typesize);
			for (let i = 0; i < n; i++) {
				for (let k = 0; k < typesize; k++) {
					into[i * typesize + k] = block[k * n + i];
				}
			}
			into.set(block.subarray(n * typesize), n * typesize);
		} else {
			into.set(block);
		}
	}
	return out;
}
