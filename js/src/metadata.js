// The metadata (docs/spec/container.md, "Metadata", "Variables", "Attributes",
// "Metadata (1.1)"): the tree of groups and their variables, checked against every
// rule and limit of the format before a single chunk is read.

import { CODEC_IDS, codecConfigProblem } from "./codecs.js";
import { elementType, isScalarValue } from "./elements.js";
import { HurrayFormatError, HurrayUnsupportedError } from "./errors.js";
import { describeJson as describe, JsonFloat } from "./json.js";
import { parseLayout } from "./layouts.js";
import {
	ATTRIBUTE_ALLOWANCE,
	ATTRIBUTE_EXPANSION,
	MAX_CHUNK_BYTES,
	MAX_CODECS,
	MAX_EXACT,
	MAX_LENGTH,
	MAX_RANK,
} from "./limits.js";
import { Placement } from "./placement.js";

/**
 * @typedef {object} Variable
 * @property {string} path the variable's path: its groups and name joined with "/"
 * @property {string} name
 * @property {string[]} dims
 * @property {number[]} shape
 * @property {string} dtype
 * @property {number[]} chunks
 * @property {number[]} grid chunks along each axis
 * @property {number} chunkCount
 * @property {import("./layouts.js").Layout} layout
 * @property {{id: string}[]} codecs
 * @property {Placement} placement
 * @property {Record<string, unknown>} attrs
 * @property {Uint8Array} fillBytes the stored bytes of the element missing chunks hold
 * @property {import("./elements.js").ElementType} element
 * @property {number} number the variable's number in depth-first order
 */

/**
 * @typedef {object} Group
 * @property {string} path "" for the root
 * @property {Record<string, unknown>} attrs
 * @property {Variable[]} variables
 * @property {Group[]} groups
 */

const bad = (/** @type {string} */ why) => new HurrayFormatError(`invalid metadata: ${why}`);

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
function isObject(value) {
	return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof JsonFloat);
}

/**
 * @param {Record<string, unknown>} obj
 * @param {string[]} keys
 * @param {string} what
 */
function exactKeys(obj, keys, what) {
	const found = Object.keys(obj).sort();
	if (found.join("\u0000") !== [...keys].sort().join("\u0000")) {
		throw bad(`${what} needs exactly the keys ${[...keys].sort().join(", ")}, got ${found.join(", ")}`);
	}
}

/**
 * @param {unknown} value
 * @param {string} what
 * @param {number} minimum
 * @returns {number[]}
 */
function integers(value, what, minimum) {
	if (!Array.isArray(value)) {
		throw bad(`${what} must be a list of integers, got ${describe(value)}`);
	}
	if (value.length > MAX_RANK) {
		throw bad(`${what} has ${value.length} entries; at most ${MAX_RANK} axes are allowed`);
	}
	return value.map((v) => {
		if (typeof v === "bigint" && v >= BigInt(minimum) && v <= BigInt(MAX_LENGTH)) {
			throw new HurrayUnsupportedError(`${what} holds ${v}, more than this reader counts exactly (2**53)`);
		}
		if (typeof v !== "number" || !Number.isInteger(v) || v < minimum || v > MAX_LENGTH) {
			throw bad(`${what} must be a list of integers from ${minimum} to 2**62, got ${describe(value)}`);
		}
		return v;
	});
}

/**
 * @param {unknown} name
 * @param {string} what
 * @param {boolean} tree whether "/" is refused (names of groups and variables)
 */
function checkName(name, what, tree) {
	if (typeof name !== "string" || name === "") {
		throw bad(`${what} must be a non-empty string, got ${describe(name)}`);
	}
	if (tree && name.includes("/")) {
		throw bad(`${what} ${JSON.stringify(name)} contains '/', which separates groups in a path`);
	}
	return name;
}

/**
 * Parse the metadata's JSON value.
 * @param {unknown} json
 * @param {number} metadataLength bytes of the metadata, which bound its typed attributes
 * @returns {Group}
 */
export function parseMetadata(json, metadataLength) {
	const budget = { left: ATTRIBUTE_EXPANSION * metadataLength + ATTRIBUTE_ALLOWANCE };
	const counter = { next: 0 };
	return parseGroup(json, "", budget, counter);
}

/**
 * @param {unknown} obj
 * @param {string} path the group's path; "" for the root
 * @param {{left: number}} budget
 * @param {{next: number}} counter numbers the variables depth first
 * @returns {Group}
 */
function parseGroup(obj, path, budget, counter) {
	const root = path === "";
	if (!isObject(obj)) {
		throw bad(`${root ? "the metadata" : "a group"} must be an object`);
	}
	const keys = ["attrs", "variables", "groups", ...(root ? [] : ["name"])];
	exactKeys(obj, keys, root ? "the metadata" : "a group");
	if (!isObject(obj.attrs) || !Array.isArray(obj.variables)) {
		throw bad("attrs must be an object and variables a list");
	}
	const groups = obj.groups;
	if (!Array.isArray(groups)) {
		throw bad(`groups must be a list, got ${describe(groups)}`);
	}
	const attrs = decodeAttrs(obj.attrs, budget);
	const variables = obj.variables.map((v) => parseVariable(v, path, budget, counter.next++));
	const sizes = new Map();
	for (const v of variables) {
		v.dims.forEach((dim, k) => {
			if (sizes.has(dim) && sizes.get(dim) !== v.shape[k]) {
				throw bad(`dimension ${JSON.stringify(dim)} has length ${sizes.get(dim)} and, in variable ${JSON.stringify(v.name)}, ${v.shape[k]}`);
			}
			sizes.set(dim, v.shape[k]);
		});
	}
	const children = groups.map((g) => {
		if (!isObject(g)) {
			throw bad("a group must be an object");
		}
		const name = checkName(g.name, "a group name", true);
		return parseGroup(g, path ? `${path}/${name}` : name, budget, counter);
	});
	const names = [...variables.map((v) => v.name), ...children.map((g) => g.path.split("/").pop())];
	if (new Set(names).size !== names.length) {
		throw bad(`variable and group names must be unique${path ? ` in group ${JSON.stringify(path)}` : ""}, got ${describe(names)}`);
	}
	return { path, attrs, variables, groups: children };
}

/**
 * @param {unknown} obj
 * @param {string} groupPath
 * @param {{left: number}} budget
 * @param {number} number
 * @returns {Variable}
 */
function parseVariable(obj, groupPath, budget, number) {
	if (!isObject(obj)) {
		throw bad("a variable must be an object");
	}
	const keys = ["name", "dims", "shape", "dtype", "chunks", "layout", "codecs", "chunk_order", "attrs", "fill_value"];
	exactKeys(obj, keys, "a variable");
	const name = checkName(obj.name, "the variable name", true);
	const path = groupPath ? `${groupPath}/${name}` : name;
	try {
		return variableFields(obj, name, path, budget, number);
	} catch (error) {
		if (error instanceof HurrayFormatError && !error.message.includes(JSON.stringify(path))) {
			error.message = error.message.replace("invalid metadata: ", `invalid metadata: variable ${JSON.stringify(path)}: `);
		}
		throw error;
	}
}

/**
 * @param {Record<string, unknown>} obj
 * @param {string} name
 * @param {string} path
 * @param {{left: number}} budget
 * @param {number} number
 * @returns {Variable}
 */
function variableFields(obj, name, path, budget, number) {
	const shape = integers(obj.shape, "shape", 0);
	if (!Array.isArray(obj.dims) || obj.dims.length !== shape.length) {
		throw bad(`dims must be a list of one name per axis of [${shape}]`);
	}
	const dims = obj.dims.map((d) => checkName(d, "a dimension name", false));
	if (new Set(dims).size !== dims.length) {
		throw bad(`dims ${describe(dims)} must be distinct`);
	}
	const element = elementType(obj.dtype);
	const chunks = integers(obj.chunks, "chunks", 1);
	if (chunks.length !== shape.length) {
		throw bad(`chunks [${chunks}] must have one entry per axis of shape [${shape}]`);
	}
	const layout = parseLayout(obj.layout, chunks);
	if (layout.bufferSize * element.itemsize > MAX_CHUNK_BYTES) {
		throw bad(`a chunk of shape [${chunks}] holds more than ${MAX_CHUNK_BYTES} bytes, the largest chunk allowed`);
	}
	const codecs = obj.codecs;
	if (!Array.isArray(codecs) || codecs.length > MAX_CODECS) {
		throw bad(`codecs must be a list of at most ${MAX_CODECS} codecs`);
	}
	for (const codec of codecs) {
		if (!isObject(codec) || !CODEC_IDS.includes(/** @type {string} */ (codec.id))) {
			throw bad(`unsupported codec ${describe(codec)}; the format allows ${CODEC_IDS.join(", ")}`);
		}
		const problem = codecConfigProblem(codec);
		if (problem !== null) {
			throw bad(`invalid ${codec.id} codec configuration ${describe(codec)}: ${problem}`);
		}
	}
	const order = obj.chunk_order;
	if (!isObject(order)) {
		throw bad("chunk_order must be an object");
	}
	exactKeys(order, ["curve", "axes"], "chunk_order");
	if (!["hilbert", "morton", "row-major"].includes(/** @type {string} */ (order.curve))) {
		throw bad(`chunk order ${describe(order.curve)} is not one of hilbert, morton, row-major`);
	}
	const axes = integers(order.axes, "chunk axes", 0);
	if (new Set(axes).size !== axes.length || axes.some((a) => a >= shape.length)) {
		throw bad(`chunk axes [${axes}] must be distinct axes of [${shape}]`);
	}
	if (!isObject(obj.attrs)) {
		throw bad("attrs must be an object");
	}
	const attrs = decodeAttrs(obj.attrs, budget);
	const grid = shape.map((n, k) => Math.ceil(n / chunks[k]));
	const chunkCount = grid.reduce((a, b) => a * b, 1);
	if (chunkCount > MAX_EXACT) {
		throw new HurrayUnsupportedError(`variable ${JSON.stringify(path)} has ${chunkCount} chunks, more than this reader counts exactly (2**53)`);
	}
	const fill = obj.fill_value;
	if (typeof fill !== "string" || !/^(?:[0-9a-f]{2})*$/.test(fill)) {
		throw bad(`fill_value must be lowercase hexadecimal bytes, got ${describe(fill)}`);
	}
	const fillBytes = Uint8Array.from(fill.match(/../g) ?? [], (h) => Number.parseInt(h, 16));
	checkFill(fillBytes, element);
	return {
		path,
		name,
		dims,
		shape,
		dtype: element.name,
		chunks,
		grid,
		chunkCount,
		layout,
		codecs: /** @type {{id: string}[]} */ (codecs),
		placement: new Placement(grid, /** @type {string} */ (order.curve), axes),
		attrs,
		fillBytes,
		element,
		number,
	};
}

/**
 * @param {Uint8Array} fill
 * @param {import("./elements.js").ElementType} element
 */
function checkFill(fill, element) {
	if (element.kind === "string") {
		try {
			new TextDecoder("utf-8", { fatal: true }).decode(fill);
		} catch {
			throw bad("fill_value is not valid UTF-8");
		}
		return;
	}
	if (fill.length !== element.itemsize) {
		throw bad(`fill_value has ${fill.length} bytes, an element of ${element.name} has ${element.itemsize}`);
	}
	if (element.kind === "bool" && fill[0] > 1) {
		throw bad("a bool fill_value is 00 or 01");
	}
	if (element.kind === "text") {
		const view = new DataView(fill.buffer, fill.byteOffset, fill.length);
		for (let i = 0; i < fill.length; i += 4) {
			if (!isScalarValue(view.getUint32(i, true))) {
				throw bad("fill_value holds a code point that is not a Unicode scalar value");
			}
		}
	}
}

const INTEGER_RANGES = {
	int8: [-(2n ** 7n), 2n ** 7n - 1n],
	int16: [-(2n ** 15n), 2n ** 15n - 1n],
	int32: [-(2n ** 31n), 2n ** 31n - 1n],
	int64: [-(2n ** 63n), 2n ** 63n - 1n],
	uint8: [0n, 2n ** 8n - 1n],
	uint16: [0n, 2n ** 16n - 1n],
	uint32: [0n, 2n ** 32n - 1n],
	uint64: [0n, 2n ** 64n - 1n],
};

const NON_FINITE = { NaN: Number.NaN, Infinity: Number.POSITIVE_INFINITY, "-Infinity": Number.NEGATIVE_INFINITY };

/**
 * Attribute values as JavaScript values: plain JSON as itself (numbers written 4.0 as
 * numbers), lists item by item, a typed scalar as its value and a typed array as
 * `{dtype, shape, data}` with `data` its items in C order.
 * @param {Record<string, unknown>} attrs
 * @param {{left: number}} budget bytes the typed attributes may still decode to
 * @returns {Record<string, unknown>}
 */
function decodeAttrs(attrs, budget) {
	/** @type {Record<string, unknown>} */
	const out = Object.create(null);
	for (const [key, value] of Object.entries(attrs)) {
		Object.defineProperty(out, key, { value: decodeAttr(value, budget, key), enumerable: true, writable: true, configurable: true });
	}
	return out;
}

/**
 * @param {unknown} value
 * @param {{left: number}} budget
 * @param {string} key
 * @returns {unknown}
 */
function decodeAttr(value, budget, key) {
	if (value instanceof JsonFloat) {
		return value.value;
	}
	if (Array.isArray(value)) {
		return value.map((item) => decodeAttr(item, budget, key));
	}
	if (!isObject(value)) {
		return value;
	}
	const where = `attribute ${JSON.stringify(key)}`;
	exactKeys(value, ["dtype", "shape", "data"], `the typed ${where}`);
	const element = elementType(value.dtype);
	if (element.kind === "string" || element.kind === "bytes") {
		throw bad(`the typed ${where} has element type ${element.name}, which typed attributes do not take`);
	}
	const shape = integers(value.shape, `the shape of ${where}`, 0);
	const count = shape.reduce((a, b) => a * b, 1);
	const bytes = count * element.itemsize;
	if (bytes > budget.left) {
		throw bad(`typed attributes decode to more bytes than the metadata's size allows (${where} needs ${bytes}, ${budget.left} are left)`);
	}
	budget.left -= bytes;
	if (!Array.isArray(value.data) || value.data.length !== count) {
		throw bad(`the data of ${where} must list ${count} items`);
	}
	const data = value.data.map((item) => typedItem(item, element, where));
	return shape.length === 0 ? data[0] : { dtype: element.name, shape, data };
}

/**
 * @param {unknown} item
 * @param {import("./elements.js").ElementType} element
 * @param {string} where
 */
function typedItem(item, element, where) {
	const wrong = () => bad(`${where}: ${describe(item)} is not an item of ${element.name}`);
	const float = (/** @type {unknown} */ x) => {
		if (x instanceof JsonFloat) return x.value;
		if (typeof x === "number") return x;
		if (typeof x === "bigint") return Number(x);
		if (typeof x === "string" && Object.hasOwn(NON_FINITE, x)) return NON_FINITE[/** @type {keyof NON_FINITE} */ (x)];
		throw wrong();
	};
	switch (element.kind) {
		case "bool":
			if (typeof item !== "boolean") throw wrong();
			return item;
		case "int":
		case "uint": {
			if (!(typeof item === "bigint" || (typeof item === "number" && Number.isInteger(item)))) throw wrong();
			const [lo, hi] = INTEGER_RANGES[/** @type {keyof INTEGER_RANGES} */ (element.name)];
			const big = BigInt(item);
			if (big < lo || big > hi) throw wrong();
			return item;
		}
		case "float":
			return float(item);
		case "complex":
			if (!Array.isArray(item) || item.length !== 2) throw wrong();
			return [float(item[0]), float(item[1])];
		default:
			if (typeof item !== "string" || [...item].length > element.units) throw wrong();
			return item;
	}
}
