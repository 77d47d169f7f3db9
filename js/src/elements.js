// Element types (docs/spec/container.md, "Element types"): how many bytes each
// element takes and which typed array holds decoded values.

import { HurrayFormatError } from "./errors.js";
import { describeJson } from "./json.js";

/**
 * A typed array of stored words: the buffer of a chunk, or the values of a read.
 * @typedef {Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array | Float32Array | Float64Array | BigInt64Array | BigUint64Array} Words
 */

/**
 * The constructor of a typed array of words.
 * @typedef {Int8ArrayConstructor | Uint8ArrayConstructor | Int16ArrayConstructor | Uint16ArrayConstructor | Int32ArrayConstructor | Uint32ArrayConstructor | Float32ArrayConstructor | Float64ArrayConstructor | BigInt64ArrayConstructor | BigUint64ArrayConstructor} WordsConstructor
 */

/**
 * @typedef {"bool"|"int"|"uint"|"float"|"complex"|"bytes"|"text"|"string"} ElementKind
 */

/**
 * @typedef {object} ElementType
 * @property {string} name the dtype as the metadata spells it
 * @property {ElementKind} kind
 * @property {number} itemsize bytes of one stored element (4, a length, for `string`)
 * @property {number} units words of `Array` per element: 2 for complex, n for S<n> and U<n>
 * @property {WordsConstructor | null} Array the typed array holding the stored words (null for `string`)
 */

/** @type {Record<string, [ElementKind, number, WordsConstructor]>} */
const FIXED = {
	bool: ["bool", 1, Uint8Array],
	int8: ["int", 1, Int8Array],
	int16: ["int", 2, Int16Array],
	int32: ["int", 4, Int32Array],
	int64: ["int", 8, BigInt64Array],
	uint8: ["uint", 1, Uint8Array],
	uint16: ["uint", 2, Uint16Array],
	uint32: ["uint", 4, Uint32Array],
	uint64: ["uint", 8, BigUint64Array],
	float16: ["float", 2, Uint16Array],
	float32: ["float", 4, Float32Array],
	float64: ["float", 8, Float64Array],
	complex64: ["complex", 8, Float32Array],
	complex128: ["complex", 16, Float64Array],
};

/**
 * The element type `name`.
 * @param {unknown} name
 * @returns {ElementType}
 */
export function elementType(name) {
	if (typeof name === "string" && Object.hasOwn(FIXED, name)) {
		const [kind, itemsize, Array] = FIXED[name];
		const units = kind === "complex" ? 2 : 1;
		return { name, kind, itemsize, units, Array };
	}
	if (name === "string") {
		return { name, kind: "string", itemsize: 4, units: 1, Array: null };
	}
	const text = typeof name === "string" ? /^([SU])([1-9][0-9]*)$/.exec(name) : null;
	if (typeof name === "string" && text !== null) {
		const n = Number(text[2]);
		if (!Number.isSafeInteger(n) || n > 2 ** 31) {
			throw new HurrayFormatError(`invalid metadata: element type ${name} is wider than a chunk may be`);
		}
		return text[1] === "S"
			? { name, kind: "bytes", itemsize: n, units: n, Array: Uint8Array }
			: { name, kind: "text", itemsize: 4 * n, units: n, Array: Uint32Array };
	}
	throw new HurrayFormatError(
		`invalid metadata: unknown element type ${describeJson(name)}; expected one of ` +
			`${Object.keys(FIXED).join(", ")}, S<n>, U<n> or string`,
	);
}

/**
 * A float16's bits as a number.
 * @param {number} bits
 */
export function halfToNumber(bits) {
	const sign = bits & 0x8000 ? -1 : 1;
	const exponent = (bits >>> 10) & 0x1f;
	const fraction = bits & 0x3ff;
	if (exponent === 0) {
		return sign * fraction * 2 ** -24;
	}
	if (exponent === 31) {
		return fraction ? Number.NaN : sign * Number.POSITIVE_INFINITY;
	}
	return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

/**
 * Whether a U<n> word is a Unicode scalar value.
 * @param {number} point
 */
export function isScalarValue(point) {
	return point <= 0x10ffff && (point < 0xd800 || point > 0xdfff);
}

/**
 * Whether `bytes[start..end)` is well-formed UTF-8 (RFC 3629): no overlong form, no
 * surrogate, nothing past U+10FFFF, no sequence cut short.
 * @param {Uint8Array} bytes
 * @param {number} start
 * @param {number} end
 */
export function isUtf8(bytes, start, end) {
	let i = start;
	while (i < end) {
		const b = bytes[i];
		if (b < 0x80) {
			i++;
			continue;
		}
		// the continuation bytes a lead byte needs, and the range of the first of them
		// (narrower after E0, ED, F0 and F4: no overlong form, surrogate or code point
		// past U+10FFFF)
		let n;
		let low = 0x80;
		let high = 0xbf;
		if (b >= 0xc2 && b <= 0xdf) {
			n = 1;
		} else if (b >= 0xe0 && b <= 0xef) {
			n = 2;
			if (b === 0xe0) low = 0xa0;
			if (b === 0xed) high = 0x9f;
		} else if (b >= 0xf0 && b <= 0xf4) {
			n = 3;
			if (b === 0xf0) low = 0x90;
			if (b === 0xf4) high = 0x8f;
		} else {
			return false;
		}
		if (i + n >= end) {
			return false; // cut short
		}
		if (bytes[i + 1] < low || bytes[i + 1] > high) {
			return false;
		}
		for (let k = 2; k <= n; k++) {
			if (bytes[i + k] < 0x80 || bytes[i + k] > 0xbf) {
				return false;
			}
		}
		i += n + 1;
	}
	return true;
}
