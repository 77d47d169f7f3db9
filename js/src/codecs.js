// Decoding a chunk's codec chain (docs/spec/container.md, "Codecs") without letting
// the data choose how much memory it takes: every stored form records, or implies,
// the size of its output, which is checked against a cap before anything is
// decoded, as the Python reader does (xarray_hurray/container/bounded.py).  zstd is
// decoded by our own decoder (zstd.js), lz4 blocks and Blosc frames here, zlib by the platform's
// DecompressionStream.  A Blosc frame whose blocks are compressed with blosclz or
// snappy, or bit-shuffled, is refused with a clear error.

import { HurrayFormatError, HurrayUnsupportedError } from "./errors.js";
import { decompress as zstdDecompress } from "./zstd.js";

/** Codec ids the format allows. */
export const CODEC_IDS = ["zstd", "lz4", "zlib", "blosc"];

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
 * @returns {Promise<Uint8Array>}
 */
export async function decodeChain(codecs, data, limit) {
	// caps[k]: the most bytes undoing codec k may give; the first codec's output is the
	// buffer (limit), each later codec's output the input of the one before it
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
			out = await zlib(out, caps[k]);
		} else if (id === "blosc") {
			out = await blosc(out, caps[k]);
		} else {
			throw new HurrayUnsupportedError(`codec ${id} is not decoded by this reader`);
		}
	}
	return out;
}

/**
 * @param {Uint8Array} data
 * @param {number} cap
 */
function zstd(data, cap) {
	const declared = zstdContentSize(data);
	if (declared > cap) {
		throw new HurrayFormatError(`the zstd frame declares ${declared} bytes, more than the ${cap} this chunk can hold`);
	}
	let out;
	try {
		// the cap bounds what the decoder may allocate, whatever the frame says
		out = declared === 0 ? new Uint8Array(0) : zstdDecompress(data, cap);
	} catch (error) {
		throw new HurrayFormatError(`invalid zstd frame: ${/** @type {Error} */ (error).message}`);
	}
	if (out.length !== declared) {
		throw new HurrayFormatError(`the zstd frame declares ${declared} bytes but decodes to ${out.length}`);
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
 * A numcodecs LZ4 chunk: the decoded length (u32) and one LZ4 block.
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
	return lz4Block(data.subarray(4), size);
}

/**
 * One LZ4 block that decodes to exactly `size` bytes.
 * @param {Uint8Array} data
 * @param {number} size
 */
function lz4Block(data, size) {
	const out = new Uint8Array(size);
	const bad = (/** @type {string} */ why) => new HurrayFormatError(`invalid LZ4 block: ${why}`);
	let i = 0;
	let o = 0;
	const n = data.length;
	while (i < n) {
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
		if (i + literals > n || o + literals > size) {
			throw bad("literals run past the block or the declared size");
		}
		out.set(data.subarray(i, i + literals), o);
		i += literals;
		o += literals;
		if (i === n) {
			break; // the last sequence has literals only
		}
		if (i + 2 > n) throw bad("truncated match offset");
		const offset = data[i] | (data[i + 1] << 8);
		i += 2;
		if (offset === 0 || offset > o) throw bad("a match reaches before the start of the output");
		let length = (token & 15) + 4;
		if ((token & 15) === 15) {
			let more;
			do {
				if (i >= n) throw bad("truncated match length");
				more = data[i++];
				length += more;
			} while (more === 255);
		}
		if (o + length > size) throw bad("a match runs past the declared size");
		// byte by byte: a match may overlap the bytes it copies
		for (let k = 0; k < length; k++, o++) {
			out[o] = out[o - offset];
		}
	}
	if (o !== size) {
		throw bad(`it decodes to ${o} bytes, its prefix declares ${size}`);
	}
	return out;
}

/**
 * A zlib stream, decoded through at most one byte past `cap`.
 * @param {Uint8Array} data
 * @param {number} cap
 */
async function zlib(data, cap) {
	const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate"));
	const reader = stream.getReader();
	/** @type {Uint8Array[]} */
	const parts = [];
	let total = 0;
	try {
		for (;;) {
			const { done, value } = await reader.read();
			if (done) break;
			total += value.length;
			if (total > cap) {
				await reader.cancel();
				throw new HurrayFormatError(`the zlib stream expands past ${cap} bytes`);
			}
			parts.push(value);
		}
	} catch (error) {
		if (error instanceof HurrayFormatError) throw error;
		throw new HurrayFormatError(`invalid zlib stream: ${/** @type {Error} */ (error).message}`);
	}
	const out = new Uint8Array(total);
	let at = 0;
	for (const part of parts) {
		out.set(part, at);
		at += part.length;
	}
	return out;
}

const BLOSC_SHUFFLE = 0x01;
const BLOSC_MEMCPYED = 0x02;
const BLOSC_BITSHUFFLE = 0x04;
const BLOSC_DONT_SPLIT = 0x10;
const BLOSC_COMPRESSORS = ["blosclz", "lz4", "snappy", "zlib", "zstd"];

/**
 * One Blosc (version 1) frame: a 16-byte header (version, compressor version, flags,
 * type size, decoded bytes, block size, frame bytes), then either the bytes as they
 * are (flag "memcpyed") or the offset of each block and the blocks, each split into
 * one stream per byte of the type unless flag "don't split" is set (and for the last,
 * partial block), each stream its compressed length (u32) and bytes (stored as they
 * are when that length is the stream's); byte-shuffled blocks are unshuffled.
 * @param {Uint8Array} data
 * @param {number} cap
 */
async function blosc(data, cap) {
	const bad = (/** @type {string} */ why) => new HurrayFormatError(`invalid Blosc frame: ${why}`);
	if (data.length < 16) {
		throw new HurrayFormatError("truncated Blosc frame header");
	}
	const view = new DataView(data.buffer, data.byteOffset, data.length);
	const flags = data[2];
	const typesize = data[3];
	const nbytes = view.getUint32(4, true);
	const blocksize = view.getUint32(8, true);
	const cbytes = view.getUint32(12, true);
	if (cbytes !== data.length) {
		throw new HurrayFormatError(`the Blosc frame records ${cbytes} bytes but has ${data.length}`);
	}
	if (nbytes > cap) {
		throw new HurrayFormatError(`the blosc frame declares ${nbytes} bytes, more than the ${cap} this chunk can hold`);
	}
	if (flags & BLOSC_MEMCPYED) {
		if (data.length !== 16 + nbytes) throw bad("a stored frame holds other than its bytes");
		return data.slice(16);
	}
	const compressor = BLOSC_COMPRESSORS[flags >> 5] ?? `compressor ${flags >> 5}`;
	if (!["lz4", "zlib", "zstd"].includes(compressor) || flags & BLOSC_BITSHUFFLE) {
		throw new HurrayUnsupportedError(
			`a Blosc frame ${flags & BLOSC_BITSHUFFLE ? "bit-shuffled" : `compressed with ${compressor}`}, which this reader does not decode (it decodes lz4, zlib and zstd, byte-shuffled or not)`,
		);
	}
	if (nbytes === 0) return new Uint8Array(0);
	if (blocksize === 0 || typesize === 0) throw bad("a block size or type size of 0");
	const blocks = Math.ceil(nbytes / blocksize);
	if (16 + 4 * blocks > data.length) throw bad("truncated block offsets");
	const out = new Uint8Array(nbytes);
	for (let b = 0; b < blocks; b++) {
		const size = Math.min(blocksize, nbytes - b * blocksize);
		const leftover = size < blocksize;
		const streams = flags & BLOSC_DONT_SPLIT || leftover ? 1 : typesize;
		const streamSize = size / streams;
		if (!Number.isInteger(streamSize)) throw bad("a block that does not split into its streams");
		const block = new Uint8Array(size);
		let at = view.getUint32(16 + 4 * b, true);
		for (let s = 0; s < streams; s++) {
			if (at + 4 > data.length) throw bad("truncated stream");
			const length = view.getUint32(at, true);
			at += 4;
			if (at + length > data.length) throw bad("a stream runs past the frame");
			const bytes = data.subarray(at, at + length);
			let part;
			if (length === streamSize) {
				part = bytes;
			} else if (compressor === "lz4") {
				part = lz4Block(bytes, streamSize);
			} else if (compressor === "zstd") {
				part = zstd(bytes, streamSize);
			} else {
				part = await zlib(bytes, streamSize);
			}
			if (part.length !== streamSize) throw bad(`a stream decodes to ${part.length} bytes, not ${streamSize}`);
			block.set(part, s * streamSize);
			at += length;
		}
		const into = out.subarray(b * blocksize, b * blocksize + size);
		if (flags & BLOSC_SHUFFLE && typesize > 1) {
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
