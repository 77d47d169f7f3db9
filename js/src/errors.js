// The errors this package throws.  Every one is a HurrayError; the subclass says
// whose fault it is: the file's bytes (HurrayFormatError), the caller's arguments
// (HurrayValueError), or the transport (HurrayIOError; HurrayChangedError when the
// file was replaced or modified after it was first read).

/** Any error this package throws on purpose. */
export class HurrayError extends Error {
	/**
	 * @param {string} message what went wrong, naming the part of the file
	 * @param {{cause?: unknown}} [options]
	 */
	constructor(message, options) {
		super(message, options);
		this.name = new.target.name;
	}
}

/** The file is damaged, truncated, of another version, or breaks a rule or limit of the format. */
export class HurrayFormatError extends HurrayError {}

/** An argument is not what the function takes (an unknown variable, a bad range). */
export class HurrayValueError extends HurrayError {}

/** A request failed: the server refused it, answered something else, or took too long. */
export class HurrayIOError extends HurrayError {}

/**
 * The file was replaced or modified after it was first read: an answer's size, ETag
 * or Last-Modified, or the file's header, is no longer the first one's.  Open it
 * again to read the new version.
 */
export class HurrayChangedError extends HurrayIOError {}

/** The file is valid, but uses something this reader does not implement (a codec, a size past 2**53). */
export class HurrayUnsupportedError extends HurrayError {}
