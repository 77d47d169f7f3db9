// Chunk indexes (docs/spec/container.md, "Index region", "Root, page tables and
// pages", "Page tables (1.2)", "Pages (1.2)"): each parsed into its entries and
// checked, so that no chunk is read from outside the file or without its checksum.

import { verify } from "./crc32c.js";
import { HurrayFormatError } from "./errors.js";
import { HEADER_SIZE_1_1, u64 } from "./header.js";
import { MAX_PAGE_BYTES, PAGE_ENTRIES } from "./limits.js";

/**
 * The entries of some chunks: offset, size and CRC-32C of each; size 0 for a missing one.
 * @typedef {object} Entries
 * @property {Float64Array} offsets
 * @property {Float64Array} sizes
 * @property {Uint32Array} crcs
 */

/** @param {number} n */
export function emptyEntries(n) {
	return { offsets: new Float64Array(n), sizes: new Float64Array(n), crcs: new Uint32Array(n) };
}

/**
 * Read `n` 20-byte entries at `at` of `view` into `into` from row `row` on.
 * @param {DataView} view
 * @param {number} at
 * @param {number} n
 * @param {Entries} into
 * @param {number} row
 * @param {string} what
 */
function readEntries(view, at, n, into, row, what) {
	for (let k = 0; k < n; k++, at += 20, row++) {
		into.offsets[row] = u64(view, at, `the offset of an entry of ${what}`);
		into.sizes[row] = u64(view, at + 8, `the size of an entry of ${what}`);
		into.crcs[row] = view.getUint32(at + 16, true);
	}
}

/**
 * The checked 1.0 index of a variable of `count` chunks: entries by chunk number.
 * @param {Uint8Array} data the index's `20 count + 4` bytes
 * @param {number} count
 * @param {string} path
 * @param {number} dataOffset where the chunk data starts
 * @param {number} fileLength
 * @returns {Entries}
 */
export function parseIndex10(data, count, path, dataOffset, fileLength) {
	const what = `the index of variable ${JSON.stringify(path)}`;
	if (data.length !== 20 * count + 4) {
		throw new HurrayFormatError(`truncated ${what}: ${data.length} of ${20 * count + 4} bytes`);
	}
	const view = new DataView(data.buffer, data.byteOffset, data.length);
	verify(data.subarray(0, 20 * count), view.getUint32(20 * count, true), what);
	const entries = emptyEntries(count);
	readEntries(view, 0, count, entries, 0, what);
	for (let i = 0; i < count; i++) {
		const end = entries.offsets[i] + entries.sizes[i];
		if (entries.offsets[i] < dataOffset || end > fileLength) {
			throw new HurrayFormatError(
				`chunk ${i} of variable ${JSON.stringify(path)} at bytes [${entries.offsets[i]}, ${end}) lies outside the data region [${dataOffset}, ${fileLength})`,
			);
		}
	}
	return entries;
}

/**
 * Chunk positions on page `page` of a variable of `count` chunks.
 * @param {number} count
 * @param {number} page
 */
export function pageCount(count, page) {
	return Math.min(PAGE_ENTRIES, count - PAGE_ENTRIES * page);
}

/**
 * @typedef {object} PageRef
 * @property {number} offset
 * @property {number} length
 * @property {number} crc
 */

/**
 * Check the page table entries in `data` (pages `first` on) of a variable of
 * `count` chunks and add the present pages to `present`.
 * @param {Uint8Array} data
 * @param {number} first
 * @param {number} count
 * @param {number} minor
 * @param {string} path
 * @param {number} fileLength
 * @param {Map<number, PageRef>} present
 */
export function parsePageTable(data, first, count, minor, path, fileLength, present) {
	const size = minor >= 2 ? 16 : 12;
	const view = new DataView(data.buffer, data.byteOffset, data.length);
	for (let k = 0; k * size < data.length; k++) {
		const page = first + k;
		const what = `page ${page} of the page table of ${JSON.stringify(path)}`;
		const offset = u64(view, k * size, what);
		const length = minor >= 2 ? view.getUint32(k * size + 8, true) : 20 * pageCount(count, page);
		const crc = view.getUint32(k * size + size - 4, true);
		if (minor >= 2 && length > MAX_PAGE_BYTES) {
			throw new HurrayFormatError(`${what}: its page_length ${length} exceeds the largest page (${MAX_PAGE_BYTES} bytes)`);
		}
		if (offset === 0) {
			if (crc !== 0 || (minor >= 2 && length !== 0)) {
				throw new HurrayFormatError(`${what}: an absent page (offset 0) has page_length and crc32c 0`);
			}
			continue;
		}
		if (length === 0 || offset < HEADER_SIZE_1_1 || offset + length > fileLength) {
			throw new HurrayFormatError(
				`${what} refers to bytes [${offset}, ${offset + length}), not a part of the file's ${fileLength} bytes`,
			);
		}
		present.set(page, { offset, length, crc });
	}
}

/**
 * The checked entries of page `page` (one per chunk position; size 0 for a missing
 * chunk), or null when every chunk of it is missing.
 * @param {Uint8Array} data
 * @param {PageRef} ref
 * @param {number} positions chunk positions on the page
 * @param {number} minor
 * @param {string} what names the page
 * @param {number} fileLength
 * @returns {Entries | null}
 */
export function parsePage(data, ref, positions, minor, what, fileLength) {
	if (data.length !== ref.length) {
		throw new HurrayFormatError(`truncated ${what}: ${data.length} of ${ref.length} bytes`);
	}
	verify(data, ref.crc, what);
	const view = new DataView(data.buffer, data.byteOffset, data.length);
	const entries = emptyEntries(positions);
	let stored = 0;
	if (minor < 2) {
		if (ref.length !== 20 * positions) {
			throw new HurrayFormatError(`${what} has ${ref.length} bytes, ${positions} entries take ${20 * positions}`);
		}
		readEntries(view, 0, positions, entries, 0, what);
		for (let j = 0; j < positions; j++) {
			if (entries.sizes[j] === 0) {
				if (entries.offsets[j] !== 0 || entries.crcs[j] !== 0) {
					throw badEntry(what, j, entries, fileLength, "neither a missing chunk (all zero) nor a chunk");
				}
			} else {
				checkEntry(what, j, entries, fileLength);
				stored++;
			}
		}
		return stored ? entries : null;
	}
	const bitmap = Math.ceil(positions / 8);
	if (ref.length < bitmap) {
		throw new HurrayFormatError(`${what} has ${ref.length} bytes, less than its ${bitmap}-byte bitmap`);
	}
	const listed = [];
	for (let j = 0; j < 8 * bitmap; j++) {
		if ((data[j >>> 3] >>> (j & 7)) & 1) {
			if (j >= positions) {
				throw new HurrayFormatError(`${what}: bitmap bit ${j} is set, past the page's ${positions} chunk positions`);
			}
			listed.push(j);
		}
	}
	if (ref.length !== bitmap + 20 * listed.length) {
		throw new HurrayFormatError(
			`${what} has page_length ${ref.length}; its bitmap lists ${listed.length} stored chunks, which take ${bitmap + 20 * listed.length} bytes`,
		);
	}
	const packed = emptyEntries(listed.length);
	readEntries(view, bitmap, listed.length, packed, 0, what);
	listed.forEach((j, k) => {
		checkEntry(what, k, packed, fileLength);
		entries.offsets[j] = packed.offsets[k];
		entries.sizes[j] = packed.sizes[k];
		entries.crcs[j] = packed.crcs[k];
	});
	return listed.length ? entries : null;
}

/**
 * @param {string} what
 * @param {number} k
 * @param {Entries} entries
 * @param {number} fileLength
 */
function checkEntry(what, k, entries, fileLength) {
	const offset = entries.offsets[k];
	if (entries.sizes[k] < 1 || offset < HEADER_SIZE_1_1 || offset + entries.sizes[k] > fileLength) {
		throw badEntry(what, k, entries, fileLength, "not a stored chunk (at least one byte)");
	}
}

/**
 * @param {string} what
 * @param {number} k
 * @param {Entries} entries
 * @param {number} fileLength
 * @param {string} rule
 */
function badEntry(what, k, entries, fileLength, rule) {
	return new HurrayFormatError(
		`entry ${k} of ${what}: offset ${entries.offsets[k]}, size ${entries.sizes[k]}, crc32c ${entries.crcs[k]} is ${rule} inside the file's ${fileLength} bytes`,
	);
}
