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
