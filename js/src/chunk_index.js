// Chunk indexes (docs/spec/container.md, "Root, page tables and pages"): each
// parsed into its entries and checked, so that no chunk is read from outside the
// file or without its checksum; a page's checksum is bound to its place.

import { verify } from "./crc32c.js";
import { HurrayFormatError } from "./errors.js";
import { HEADER_SIZE, u64 } from "./header.js";
import { MAX_PAGE_BYTES, PAGE_ENTRIES } from "./limits.js";

/**
 * The entries of some chunks: offset, size and checksum of each as stored (bound to
 * the chunk's place); size 0 for a missing one.
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
 * Check the page table entries in `data` (pages `first` on) of the variable at
 * `path` and add the present pages to `present`.
 * @param {Uint8Array} data
 * @param {number} first
 * @param {string} path
 * @param {number} fileLength
 * @param {Map<number, PageRef>} present
 */
export function parsePageTable(data, first, path, fileLength, present) {
	const view = new DataView(data.buffer, data.byteOffset, data.length);
	for (let k = 0; k * 16 < data.length; k++) {
		const page = first + k;
		const what = `page ${page} of the page table of ${JSON.stringify(path)}`;
		const offset = u64(view, k * 16, what);
		const length = view.getUint32(k * 16 + 8, true);
		const crc = view.getUint32(k * 16 + 12, true);
		if (length > MAX_PAGE_BYTES) {
			throw new HurrayFormatError(`${what}: its page_length ${length} exceeds the largest page (${MAX_PAGE_BYTES} bytes)`);
		}
		if (offset === 0) {
			if (crc !== 0 || length !== 0) {
				throw new HurrayFormatError(`${what}: an absent page (offset 0) has page_length and crc32c 0`);
			}
			continue;
		}
		if (length === 0 || offset < HEADER_SIZE || offset + length > fileLength) {
			throw new HurrayFormatError(
				`${what} refers to bytes [${offset}, ${offset + length}), not a part of the file's ${fileLength} bytes`,
			);
		}
		present.set(page, { offset, length, crc });
	}
}

/**
 * The checked entries of a page (one per chunk position; size 0 for a missing
 * chunk), or null when every chunk of it is missing.
 * @param {Uint8Array} data
 * @param {PageRef} ref
 * @param {number} positions chunk positions on the page
 * @param {number} place the CRC-32C of the page's place (`placeCrc("P", path, [page])`)
 * @param {string} what names the page
 * @param {number} fileLength
 * @returns {Entries | null}
 */
export function parsePage(data, ref, positions, place, what, fileLength) {
	if (data.length !== ref.length) {
		throw new HurrayFormatError(`truncated ${what}: ${data.length} of ${ref.length} bytes`);
	}
	verify(data, (ref.crc ^ place) >>> 0, what, true);
	const view = new DataView(data.buffer, data.byteOffset, data.length);
	const entries = emptyEntries(positions);
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
	if (entries.sizes[k] < 1 || offset < HEADER_SIZE || offset + entries.sizes[k] > fileLength) {
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
