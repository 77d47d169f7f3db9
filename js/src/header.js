// The header (docs/spec/container.md, "Header"): the version check every reader
// makes first, then the two slots, checked in the order the format prescribes.

import { crc32c } from "./crc32c.js";
import { HurrayFormatError, HurrayUnsupportedError } from "./errors.js";
import { MAX_EXACT, MAX_METADATA_BYTES, MAX_ROOT_BYTES } from "./limits.js";

export const MAGIC = Uint8Array.of(0x89, 0x48, 0x55, 0x52, 0x52, 0x41, 0x59, 0x0a);
/** Bytes of the header: a 16-byte prefix and two slots. */
export const HEADER_SIZE = 144;
/** The newest minor version of major version 1 this reader reads. */
export const MINOR = 3;
/** The minor version of the first release: those before it (1.0 to 1.2) were drafts, which no reader reads. */
export const FIRST_MINOR = 3;

/**
 * The unsigned 64-bit integer at `offset`, as a number.
 * @param {DataView} view
 * @param {number} offset
 * @param {string} what
 */
export function u64(view, offset, what) {
	const value = view.getBigUint64(offset, true);
	if (value > BigInt(MAX_EXACT)) {
		throw new HurrayUnsupportedError(`${what} is ${value}, past the 2**53 bytes this reader addresses`);
	}
	return Number(value);
}

/**
 * The minor version of the file starting with `head`, after its magic.
 * @param {Uint8Array} head
 */
export function checkVersion(head) {
	const magic = head.subarray(0, 8);
	const prefix = magic.every((b, i) => b === MAGIC[i]);
	if (prefix && magic.length < 8) {
		throw new HurrayFormatError(`truncated header: the file has ${head.length} bytes, a Hurray header has ${HEADER_SIZE}`);
	}
	if (!prefix) {
		throw new HurrayFormatError(`not a Hurray file: it starts with ${hex(magic)}, not ${hex(MAGIC)}`);
	}
	if (head.length < 16) {
		throw new HurrayFormatError(`truncated header: the file has ${head.length} bytes, a Hurray header has ${HEADER_SIZE}`);
	}
	const view = new DataView(head.buffer, head.byteOffset, head.length);
	const major = view.getUint16(8, true);
	const minor = view.getUint16(10, true);
	if (major === 1 && minor < FIRST_MINOR) {
		throw new HurrayFormatError(
			`format version 1.${minor} is a draft of the Hurray format from before its first release, 1.${FIRST_MINOR}: ` +
				"no release reads it and none converts it, as no draft was ever released.  Write the data again from its " +
				"source, or open the file with the xarray-hurray that wrote it, save it as netCDF or Zarr and convert that " +
				"(hurray convert)",
		);
	}
	if (major !== 1 || minor > MINOR) {
		const reads = FIRST_MINOR === MINOR ? `version 1.${MINOR}` : `versions 1.${FIRST_MINOR} to 1.${MINOR}`;
		const later = major > 1 || (major === 1 && minor > MINOR) ? ": read it with a newer release of this reader" : "";
		throw new HurrayFormatError(`unsupported format version ${major}.${minor}; this reader reads ${reads}${later}`);
	}
	return minor;
}

/**
 * @typedef {object} Slot
 * @property {number} generation
 * @property {number} metadataOffset
 * @property {number} metadataLength
 * @property {number} metadataCrc
 * @property {number} rootOffset
 * @property {number} rootLength
 * @property {number} rootCrc
 * @property {number} fileLength
 */

/** The names of a slot's 64-bit fields, in the order they are stored. */
const SLOT_FIELDS = ["generation", "metadataOffset", "metadataLength", "rootOffset", "rootLength", "fileLength"];

/**
 * The active slot of the header at the start of `head`.
 * @param {Uint8Array} head
 * @param {number | undefined} size the file's size, when known
 * @returns {Slot}
 */
export function parseHeader(head, size) {
	if (head.length < HEADER_SIZE) {
		throw new HurrayFormatError(`truncated header: the file has ${head.length} bytes, a Hurray header has ${HEADER_SIZE}`);
	}
	const view = new DataView(head.buffer, head.byteOffset, HEADER_SIZE);
	const flags = view.getUint32(12, true);
	if (flags !== 0) {
		throw new HurrayFormatError(`header flags must be 0, got 0x${flags.toString(16)}`);
	}
	/** @type {(bigint[] | null)[]} */
	const slots = [];
	const damaged = [];
	for (const k of [0, 1]) {
		const at = 16 + 64 * k;
		const raw = head.subarray(at, at + 64);
		const slot = parseSlot(head, view, at);
		slots.push(slot);
		if (slot === null && raw.some((b) => b !== 0)) {
			damaged.push(k);
		}
	}
	const valid = /** @type {bigint[][]} */ (slots.filter((s) => s !== null));
	if (valid.length === 0) {
		throw new HurrayFormatError("damaged header: no valid slot (checksum mismatch or invalid fields)");
	}
	if (valid.length === 2 && valid[0][0] === valid[1][0]) {
		throw new HurrayFormatError(`both header slots hold generation ${valid[0][0]}`);
	}
	// the slot of the higher generation, chosen on the exact values: a field past 2**53
	// makes the slot one this reader cannot use, not a damaged one to pass over
	const fields = valid.reduce((a, b) => (b[0] > a[0] ? b : a));
	const at = slots.indexOf(fields);
	for (let f = 0; f < SLOT_FIELDS.length; f++) {
		if (fields[f] > BigInt(MAX_EXACT)) {
			throw new HurrayUnsupportedError(
				`the active header slot's ${SLOT_FIELDS[f]} is ${fields[f]}, past the 2**53 this reader counts exactly`,
			);
		}
	}
	/** @type {Slot} */
	const active = {
		generation: Number(fields[0]),
		metadataOffset: Number(fields[1]),
		metadataLength: Number(fields[2]),
		rootOffset: Number(fields[3]),
		rootLength: Number(fields[4]),
		fileLength: Number(fields[5]),
		metadataCrc: view.getUint32(16 + 64 * at + 48, true),
		rootCrc: view.getUint32(16 + 64 * at + 52, true),
	};
	if (active.metadataLength > MAX_METADATA_BYTES) {
		throw new HurrayFormatError(`metadata length ${active.metadataLength} exceeds the ${MAX_METADATA_BYTES} bytes a reader accepts`);
	}
	if (active.rootLength > MAX_ROOT_BYTES || active.rootLength % 12) {
		throw new HurrayFormatError(`root length ${active.rootLength} is not a multiple of 12 up to ${MAX_ROOT_BYTES}`);
	}
	if (size !== undefined && size < active.fileLength) {
		throw new HurrayFormatError(`the file has ${size} bytes but its header records ${active.fileLength}: the file is truncated`);
	}
	// a torn slot write leaves a damaged slot beside a file longer than the active
	// version (an interrupted commit); with the file exactly as long, nothing explains it
	if (damaged.length && (size === undefined || size === active.fileLength)) {
		throw new HurrayFormatError(`header slot ${damaged[0]} is damaged (checksum mismatch or invalid fields)`);
	}
	return active;
}

/**
 * The 64-bit fields of the slot at `at` (generation, metadata offset and length,
 * root offset and length, file length) if it is valid, else null.
 * @param {Uint8Array} head
 * @param {DataView} view
 * @param {number} at
 * @returns {bigint[] | null}
 */
function parseSlot(head, view, at) {
	const sealed = new Uint8Array(76);
	sealed.set(head.subarray(0, 16));
	sealed.set(head.subarray(at, at + 60), 16);
	if (crc32c(sealed) !== view.getUint32(at + 60, true)) {
		return null;
	}
	const fields = [0, 8, 16, 24, 32, 40].map((offset) => view.getBigUint64(at + offset, true));
	const [generation, metadataOffset, metadataLength, rootOffset, rootLength, fileLength] = fields;
	const first = BigInt(HEADER_SIZE);
	const inside = [
		[metadataOffset, metadataLength],
		[rootOffset, rootLength],
	].every(([offset, length]) => offset >= first && offset + length <= fileLength);
	if (view.getUint32(at + 56, true) !== 0 || generation < 1n || !inside) {
		return null;
	}
	return fields;
}

/** @param {Uint8Array} bytes */
function hex(bytes) {
	return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join(" ");
}
