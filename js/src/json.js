// A strict JSON parser for the metadata (docs/spec/container.md, "Metadata"): valid
// UTF-8, no repeated member names, finite numbers, no escaped lone surrogates, at most
// MAX_NESTING levels and a given number of arrays and objects, counted while parsing
// so that a hostile text is refused before it has been built.  Integer literals
// beyond 2**53 come back as BigInt; a number written with a fraction or exponent
// whose value is an integer (4.0, 1e3) comes back as a JsonFloat, so that the fields
// the format requires to be JSON integers can tell it from 4.

import { HurrayFormatError } from "./errors.js";
import { MAX_NESTING } from "./limits.js";

/** A JSON number written with a fraction or an exponent whose value is an integer. */
export class JsonFloat {
	/** @param {number} value */
	constructor(value) {
		this.value = value;
	}
}

const INTEGER = /-?(?:0|[1-9][0-9]*)/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const PLAIN = /[^"\\\u0000-\u001f]*/y;

/**
 * Parse the metadata bytes.
 * @param {Uint8Array} bytes UTF-8 JSON text
 * @param {number} maxContainers most arrays and objects allowed
 * @returns {unknown}
 */
export function parseJson(bytes, maxContainers) {
	let text;
	try {
		text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
	} catch {
		throw new HurrayFormatError("metadata is not valid UTF-8");
	}
	return new Parser(text, maxContainers).document();
}

class Parser {
	/**
	 * @param {string} text
	 * @param {number} maxContainers
	 */
	constructor(text, maxContainers) {
		this.text = text;
		this.at = 0;
		this.containers = 0;
		this.maxContainers = maxContainers;
	}

	/** @param {string} why */
	fail(why) {
		return new HurrayFormatError(`metadata is not valid JSON: ${why} at character ${this.at}`);
	}

	document() {
		const value = this.value(1);
		this.space();
		if (this.at !== this.text.length) {
			throw this.fail("extra data after the JSON value");
		}
		return value;
	}

	space() {
		const t = this.text;
		while (this.at < t.length) {
			const c = t.charCodeAt(this.at);
			if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
				break;
			}
			this.at++;
		}
	}

	/** @param {number} level nesting of a container starting here */
	enter(level) {
		if (level > MAX_NESTING) {
			throw new HurrayFormatError(`metadata JSON is nested deeper than ${MAX_NESTING} levels`);
		}
		if (++this.containers > this.maxContainers) {
			throw new HurrayFormatError(
				`the metadata holds more than ${this.maxContainers} JSON arrays and objects, ` +
					"the most this reader accepts (maxMetadataContainers)",
			);
		}
	}

	/**
	 * @param {number} level
	 * @returns {unknown}
	 */
	value(level) {
		this.space();
		const c = this.text[this.at];
		if (c === "{") {
			return this.object(level);
		}
		if (c === "[") {
			return this.array(level);
		}
		if (c === '"') {
			return this.string();
		}
		for (const [word, meaning] of /** @type {const} */ ([
			["true", true],
			["false", false],
			["null", null],
		])) {
			if (this.text.startsWith(word, this.at)) {
				this.at += word.length;
				return meaning;
			}
		}
		return this.number();
	}

	/** @param {number} level */
	object(level) {
		this.enter(level);
		this.at++;
		/** @type {Record<string, unknown>} */
		const out = Object.create(null);
		this.space();
		if (this.text[this.at] === "}") {
			this.at++;
			return out;
		}
		for (;;) {
			this.space();
			if (this.text[this.at] !== '"') {
				throw this.fail("expected a member name");
			}
			const key = this.string();
			if (Object.hasOwn(out, key)) {
				throw new HurrayFormatError(`invalid metadata: an object repeats the key ${JSON.stringify(key)}`);
			}
			this.space();
			if (this.text[this.at] !== ":") {
				throw this.fail("expected ':'");
			}
			this.at++;
			// defineProperty: a member named "__proto__" is data, not a prototype
			Object.defineProperty(out, key, {
				value: this.value(level + 1),
				enumerable: true,
				writable: true,
				configurable: true,
			});
			this.space();
			const next = this.text[this.at++];
			if (next === "}") {
				return out;
			}
			if (next !== ",") {
				this.at--;
				throw this.fail("expected ',' or '}'");
			}
		}
	}

	/** @param {number} level */
	array(level) {
		this.enter(level);
		this.at++;
		/** @type {unknown[]} */
		const out = [];
		this.space();
		if (this.text[this.at] === "]") {
			this.at++;
			return out;
		}
		for (;;) {
			out.push(this.value(level + 1));
			this.space();
			const next = this.text[this.at++];
			if (next === "]") {
				return out;
			}
			if (next !== ",") {
				this.at--;
				throw this.fail("expected ',' or ']'");
			}
		}
	}

	string() {
		const t = this.text;
		this.at++; // the opening quote
		let out = "";
		for (;;) {
			PLAIN.lastIndex = this.at;
			PLAIN.exec(t);
			out += t.slice(this.at, PLAIN.lastIndex);
			this.at = PLAIN.lastIndex;
			const c = t[this.at];
			if (c === '"') {
				this.at++;
				return out;
			}
			if (c !== "\\") {
				throw this.fail(c === undefined ? "unterminated string" : "control character in a string");
			}
			const e = t[this.at + 1];
			this.at += 2;
			const simple = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" }[
				/** @type {string} */ (e)
			];
			if (simple !== undefined) {
				out += simple;
				continue;
			}
			if (e !== "u") {
				throw this.fail("invalid escape");
			}
			const unit = this.hex4();
			if (unit >= 0xd800 && unit < 0xdc00 && t.startsWith("\\u", this.at)) {
				this.at += 2;
				const low = this.hex4();
				if (low < 0xdc00 || low >= 0xe000) {
					throw new HurrayFormatError(
						"metadata holds text that is not valid Unicode (an escaped lone surrogate)",
					);
				}
				out += String.fromCharCode(unit, low);
			} else if (unit >= 0xd800 && unit < 0xe000) {
				throw new HurrayFormatError(
					"metadata holds text that is not valid Unicode (an escaped lone surrogate)",
				);
			} else {
				out += String.fromCharCode(unit);
			}
		}
	}

	hex4() {
		const digits = this.text.slice(this.at, this.at + 4);
		if (!/^[0-9a-fA-F]{4}$/.test(digits)) {
			throw this.fail("invalid \\u escape");
		}
		this.at += 4;
		return Number.parseInt(digits, 16);
	}

	number() {
		NUMBER.lastIndex = this.at;
		const match = NUMBER.exec(this.text);
		if (match === null || match[0] === "" || match[0] === "-") {
			throw this.fail("unexpected character");
		}
		const literal = match[0];
		this.at = NUMBER.lastIndex;
		INTEGER.lastIndex = 0;
		const integer = INTEGER.exec(literal);
		if (integer !== null && integer[0].length === literal.length) {
			const value = Number(literal);
			return Number.isSafeInteger(value) ? value : BigInt(literal);
		}
		const value = Number(literal);
		if (!Number.isFinite(value)) {
			throw new HurrayFormatError(`invalid metadata: the number ${literal} is out of range`);
		}
		return Number.isInteger(value) ? new JsonFloat(value) : value;
	}
}

/**
 * `value` (parsed metadata) as JSON text for a message: integers past 2**53 and
 * floats written as the file writes them.
 * @param {unknown} value
 */
export function describeJson(value) {
	return JSON.stringify(value, (_, v) => (typeof v === "bigint" ? String(v) : v instanceof JsonFloat ? v.value : v));
}
