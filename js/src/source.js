// Where a file's bytes come from.  A source answers a list of `[start, stop)` byte
// ranges with their bytes (fewer where the file ends first) and knows the file's
// size once it has answered a request.  An URL is read with fetch and Range
// requests, all ranges of one read sent at once (up to the policy's `inFlight`),
// every answer checked against the first one's size, ETag and Last-Modified;
// bytes in memory are read in place; anything with a `read(ranges)` method is used
// as it is.

import { HurrayChangedError, HurrayIOError, HurrayValueError } from "./errors.js";
import { PLAIN_HTTP } from "./plan.js";

/**
 * @typedef {object} ByteSource
 * @property {string} name how messages name the file
 * @property {(ranges: [number, number][]) => Promise<Uint8Array[]>} read
 * @property {number | undefined} size the file's bytes, once known (undefined: not known)
 * @property {import("./plan.js").MergePolicy} [policy] how its ranges are merged
 * @property {boolean} [pinsContent] whether no answer from another version of the
 *   file can pass for the version first read (bytes that cannot change, or answers
 *   checked against a strong ETag); where not, a replacement of the same size is told
 *   only by the bytes, and the reader checks every chunk's checksum whatever
 *   `verifyChecksums` says
 */

/**
 * @typedef {object} SourceOptions
 * @property {typeof fetch} [fetch] the fetch to use (default: the global one)
 * @property {Record<string, string>} [headers] sent with every request
 * @property {number} [timeout] milliseconds one request may take (default 30 000)
 */

/**
 * The source of `target`.
 * @param {string | URL | ArrayBuffer | Uint8Array | ByteSource} target
 * @param {SourceOptions} [options]
 * @returns {ByteSource}
 */
export function toSource(target, options = {}) {
	if (typeof target === "string" || target instanceof URL) {
		return new HttpSource(String(target), options);
	}
	if (target instanceof ArrayBuffer) {
		return new BytesSource(new Uint8Array(target));
	}
	if (target instanceof Uint8Array) {
		return new BytesSource(target);
	}
	if (target && typeof (/** @type {ByteSource} */ (target).read) === "function") {
		return /** @type {ByteSource} */ (target);
	}
	throw new HurrayValueError("openHurray takes a URL, bytes (ArrayBuffer, Uint8Array) or a source with read(ranges)");
}

/** Bytes in memory. */
export class BytesSource {
	/**
	 * @param {Uint8Array} bytes
	 * @param {string} [name]
	 */
	constructor(bytes, name = "the bytes given") {
		this.bytes = bytes;
		this.name = name;
		this.size = bytes.length;
		this.pinsContent = true;
	}

	/** @param {[number, number][]} ranges */
	async read(ranges) {
		return ranges.map(([start, stop]) => this.bytes.subarray(start, Math.min(stop, this.bytes.length)));
	}
}

/** A file at an http(s) URL, read by Range requests. */
export class HttpSource {
	/**
	 * @param {string} url
	 * @param {SourceOptions} options
	 */
	constructor(url, options) {
		this.url = url;
		this.name = url;
		this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
		this.headers = options.headers ?? {};
		this.timeout = options.timeout ?? 30_000;
		this.policy = PLAIN_HTTP;
		/** @type {number | undefined} */
		this.size = undefined;
		/** @type {string | null | undefined} the first answer's ETag */
		this.etag = undefined;
		/** @type {string | null | undefined} the first answer's Last-Modified */
		this.modified = undefined;
		/** Requests sent so far, and the bytes of their answers. */
		this.stats = { requests: 0, bytes: 0 };
	}

	/** @param {[number, number][]} ranges */
	async read(ranges) {
		const out = new Array(ranges.length);
		let next = 0;
		const worker = async () => {
			while (next < ranges.length) {
				const k = next++;
				out[k] = await this.fetchRange(ranges[k][0], ranges[k][1]);
			}
		};
		await Promise.all(Array.from({ length: Math.min(this.policy.inFlight, ranges.length) }, worker));
		return out;
	}

	/**
	 * Bytes `[start, stop)`, fewer where the file ends first.
	 * @param {number} start
	 * @param {number} stop
	 * @returns {Promise<Uint8Array>}
	 */
	async fetchRange(start, stop) {
		if (stop <= start) {
			return new Uint8Array(0);
		}
		this.stats.requests++;
		let response;
		const signal = AbortSignal.timeout(this.timeout);
		try {
			response = await this.fetch(this.url, {
				headers: { ...this.headers, Range: `bytes=${start}-${stop - 1}` },
				signal,
			});
		} catch (error) {
			throw new HurrayIOError(`${this.name}: the request for bytes [${start}, ${stop}) failed: ${describe(error)}`, {
				cause: error,
			});
		}
		if (response.status === 416) {
			// the range starts at or after the end of the file: no bytes
			this.learnSize(totalOf(response.headers.get("Content-Range")));
			await response.body?.cancel();
			return new Uint8Array(0);
		}
		if (response.status !== 206 && response.status !== 200) {
			await response.body?.cancel();
			throw new HurrayIOError(`${this.name}: bytes [${start}, ${stop}) answered HTTP ${response.status} ${response.statusText}`);
		}
		this.checkVersion(response.headers.get("ETag"), response.headers.get("Last-Modified"));
		let skip = 0;
		if (response.status === 206) {
			const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(response.headers.get("Content-Range") ?? "");
			if (range === null || Number(range[1]) !== start) {
				await response.body?.cancel();
				throw new HurrayIOError(`${this.name}: bytes [${start}, ${stop}) answered the range ${response.headers.get("Content-Range")}`);
			}
			this.learnSize(range[3] === "*" ? undefined : Number(range[3]));
		} else {
			// a server that ignores Range sends the whole file: read only up to `stop`
			const length = response.headers.get("Content-Length");
			this.learnSize(length === null ? undefined : Number(length));
			skip = start;
		}
		const body = await readBody(response, skip + (stop - start), this.name, signal);
		this.stats.bytes += body.length;
		return body.subarray(Math.min(skip, body.length));
	}

	/** @param {number | undefined} size */
	learnSize(size) {
		if (size === undefined || !Number.isSafeInteger(size)) {
			return;
		}
		if (this.size !== undefined && this.size !== size) {
			throw changed(this.name, `its size ${this.size} became ${size}`);
		}
		this.size = size;
	}

	/**
	 * Whether every answer is checked against a version tag: the first answer had a
	 * strong ETag.  (A weak one may stand for other bytes, and a Last-Modified of
	 * whole seconds cannot tell two versions of one second apart.)
	 */
	get pinsContent() {
		return typeof this.etag === "string" && !this.etag.startsWith("W/");
	}

	/**
	 * Throw unless an answer's ETag and Last-Modified are the first answer's (each
	 * compared where both answers have it).
	 * @param {string | null} etag
	 * @param {string | null} modified
	 */
	checkVersion(etag, modified) {
		if (this.etag === undefined) {
			this.etag = etag;
			this.modified = modified;
			return;
		}
		if (etag !== null && this.etag !== null && etag !== this.etag) {
			throw changed(this.name, `ETag ${this.etag} became ${etag}`);
		}
		if (modified !== null && this.modified && modified !== this.modified) {
			throw changed(this.name, `Last-Modified ${this.modified} became ${modified}`);
		}
	}
}

/**
 * The body of `response`, at most `limit` bytes of it: the rest is not downloaded.
 * @param {Response} response
 * @param {number} limit
 * @param {string} name
 * @param {AbortSignal} signal
 */
async function readBody(response, limit, name, signal) {
	if (response.body === null) {
		return new Uint8Array(0);
	}
	const out = new Uint8Array(limit);
	let at = 0;
	const reader = response.body.getReader();
	try {
		while (at < limit) {
			const { done, value } = await reader.read();
			if (done) {
				break;
			}
			const take = Math.min(value.length, limit - at);
			out.set(value.subarray(0, take), at);
			at += take;
		}
	} catch (error) {
		throw new HurrayIOError(`${name}: reading an answer failed${signal.aborted ? " (timed out)" : ""}: ${describe(error)}`, {
			cause: error,
		});
	} finally {
		if (at >= limit) {
			await reader.cancel().catch(() => {});
		}
		reader.releaseLock();
	}
	return out.subarray(0, at);
}

/**
 * The error for the file `name`, whose version changed as `what` says.
 * @param {string} name
 * @param {string} what
 */
export function changed(name, what) {
	return new HurrayChangedError(`${name} was replaced or modified after it was first read (${what}); open it again to read the new version`);
}

/** @param {string | null} header */
function totalOf(header) {
	const match = /\/(\d+)$/.exec(header ?? "");
	return match === null ? undefined : Number(match[1]);
}

/** @param {unknown} error */
function describe(error) {
	return error instanceof Error ? `${error.name}: ${error.message}${error.cause ? ` (${describe(error.cause)})` : ""}` : String(error);
}
