// The package's interface: openHurray and the errors it throws.
export { HurrayFile, openHurray } from "./reader.js";
export {
	HurrayChangedError,
	HurrayError,
	HurrayFormatError,
	HurrayIOError,
	HurrayUnsupportedError,
	HurrayValueError,
} from "./errors.js";
export { PLAIN_HTTP, planReads } from "./plan.js";
export { BytesSource, FileSource, HttpSource } from "./source.js";

// The types of the interface, for JSDoc and TypeScript users (types/hurray.d.ts)
/** @typedef {import("./reader.js").OpenOptions} OpenOptions */
/** @typedef {import("./reader.js").ReadResult} ReadResult */
/** @typedef {import("./reader.js").ReadData} ReadData */
/** @typedef {import("./metadata.js").Variable} Variable */
/** @typedef {import("./metadata.js").Group} Group */
/** @typedef {import("./elements.js").ElementType} ElementType */
/** @typedef {import("./source.js").ByteSource} ByteSource */
/** @typedef {import("./plan.js").MergePolicy} MergePolicy */
