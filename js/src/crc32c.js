// CRC-32C (Castagnoli): the reflected polynomial 0x82F63B78, initial value and final
// exclusive or 0xFFFFFFFF, as the format specifies (docs/spec/container.md).  Eight
// tables let the loop take eight bytes a step ("slicing by 8").

import { HurrayFormatError } from "./errors.js";

const TABLES = (() => {
	const tables = new Uint32Array(8 * 256);
	for (let n = 0; n < 256; n++) {
		let c = n;
		for (let k = 0; k < 8; k++) {
			c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
		}
		tables[n] = c >>> 0;
	}
	for (let n = 0; n < 256; n++) {
		for (let t = 1; t < 8; t++) {
			const previous = tables[(t - 1) * 256 + n];
			tables[t * 256 + n] = (previous >>> 8) ^ tables[previous & 0xff];
		}
	}
	return tables;
})();

/**
 * The CRC-32C of `bytes`; of `previous`'s bytes followed by `bytes` when `previous`
 * is the CRC-32C of the bytes before them.
 * @param {Uint8Array} bytes
 * @param {number} [previous]
 * @returns {number} an unsigned 32-bit integer
 */
export function crc32c(bytes, previous = 0) {
	const t = TABLES;
	let crc = (previous ^ 0xffffffff) >>> 0;
	let i = 0;
	const n = bytes.length;
	const end8 = n - (n % 8);
	for (; i < end8; i += 8) {
		const a = crc ^ (bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24));
		crc =
			t[7 * 256 + (a & 0xff)] ^
			t[6 * 256 + ((a >>> 8) & 0xff)] ^
			t[5 * 256 + ((a >>> 16) & 0xff)] ^
			t[4 * 256 + (a >>> 24)] ^
			t[3 * 256 + bytes[i + 4]] ^
			t[2 * 256 + bytes[i + 5]] ^
			t[256 + bytes[i + 6]] ^
			t[bytes[i + 7]];
	}
	for (; i < n; i++) {
		crc = (crc >>> 8) ^ t[(crc ^ bytes[i]) & 0xff];
	}
	return (crc ^ 0xffffffff) >>> 0;
}

/**
 * Throw unless `bytes` has the CRC-32C `expected`.
 * @param {Uint8Array} bytes
 * @param {number} expected
 * @param {string} what names the part in the message
 * @param {boolean} [placed] `expected` comes from a checksum bound to the part's place, which the message then says
 */
export function verify(bytes, expected, what, placed = false) {
	verifyCrc(crc32c(bytes), expected, what, placed);
}

/**
 * Throw unless the CRC-32C `found` computed over a part is the `expected` one.
 * @param {number} found
 * @param {number} expected
 * @param {string} what names the part in the message
 * @param {boolean} [placed] as for `verify`
 */
export function verifyCrc(found, expected, what, placed = false) {
	if (found !== expected >>> 0) {
		const why = placed ? ": its bytes are damaged, or are another part's" : "";
		throw new HurrayFormatError(`checksum mismatch in ${what}: crc32c ${hex32(found)} computed, ${hex32(expected)} expected${why}`);
	}
}

const UTF8 = new TextEncoder();

/**
 * The CRC-32C of the key of a place (docs/spec/container.md, "Checksums bound to
 * their place"): `kind` ("C" a chunk, "P" an index page, "T" a page table), the
 * byte length of the variable's UTF-8 `path` as u32, the path, then `values` (a
 * chunk's grid coordinates, a page's number) as u64 each.  The checksum a file
 * stores for such a part is the CRC-32C of its bytes exclusive-or this.
 * @param {"C" | "P" | "T"} kind
 * @param {string} path
 * @param {number[]} [values] each below 2**53
 * @returns {number}
 */
export function placeCrc(kind, path, values = []) {
	const name = UTF8.encode(path);
	const key = new Uint8Array(5 + name.length + 8 * values.length);
	const view = new DataView(key.buffer);
	key[0] = kind.charCodeAt(0);
	view.setUint32(1, name.length, true);
	key.set(name, 5);
	values.forEach((value, k) => {
		const at = 5 + name.length + 8 * k;
		view.setUint32(at, value % 2 ** 32, true);
		view.setUint32(at + 4, Math.floor(value / 2 ** 32), true);
	});
	return crc32c(key);
}

/** @param {number} n */
function hex32(n) {
	return `0x${(n >>> 0).toString(16).padStart(8, "0")}`;
}
