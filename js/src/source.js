// Where a file's bytes come from.  A source answers a list of `[start, stop)` byte
// ranges with their bytes (fewer where the file ends first) and knows the file's
// size once it has answered a request.  An URL is read with fetch and Range
// requests, all ranges of one read sent at once (up to the policy's `inFlight`),
// every answer checked against the first one's size, ETag and Last-Modified; in
// Node.js a local path or a file: URL is read by range from the file; bytes in
// memory are read in place; anything with a `read(ranges)` method is used as it is.
// A read may carry a signal that aborts its requests.

import { HurrayChangedError, HurrayIOError, HurrayValueError } from "./errors.js";
import { PLAIN_HTTP } from "./plan.js";

/**
 * @typedef {object} ByteSource
 * @property {string} name how messages name the file
 * @property {(ranges: [number, number][], options?: ReadOptions) => Promise<Uint8Array[]>} read
 * @property {number | undefined} size the file's bytes, once known (undefined: not known)
 * @property {import("./plan.js").MergePolicy} [policy] how its ranges are merged
 * @property {boolean} [pinsContent] whether no answer from another version of the
 *   file can pass for the version first read (bytes that cannot change, or answers
 *   checked against a strong ETag); where not, a replacement of the same size is told
 *   only by the bytes, and the reader checks every chunk's checksum whatever
 *   `verifyChecksums` says
 */

/**
 * @typedef {object} ReadOptions
 * @property {AbortSignal} [signal] aborts the read's requests (its reason is thrown)
 */

/**
 * @typedef {object} SourceOptions
 * @property {typeof fetch} [fetch] the fetch to use (default: the global one)
 * @property {Record<string, string>} [headers] sent with every request
 * @property {number} [timeout] milliseconds one request may take (default 30 000)
 */

/**
 * The source of `target`: in Node.js a string that is no http(s) URL is a path (a
 * `file:` URL too); in a browser a string is a URL, relative to the page.
 * @param {string | URL | ArrayBuffer | Uint8Array | ByteSource} target
 * @param {SourceOptions} [options]
 * @returns {ByteSource}
 */
export function toSource(target, options = {}) {
	if (typeof target === "string" || target instanceof URL) {
		const text = String(target);
		if (text.startsWith("file:")) {
			return new FileSource(target);
		}
		if (IN_NODE && !/^https?:\/\//i.test(text)) {
			return new FileSource(text);
		}
		return new HttpSource(text, options);
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

/** Whether this is Node.js (where a string that is not an http(s) URL is a path). */
const IN_NODE = typeof process !== "undefined" && typeof process.versions?.node === "string" && typeof window === "undefined";

/** Closes the descriptors of local files no longer referenced. */
const closeLost = typeof FinalizationRegistry === "function" ? new FinalizationRegistry((/** @type {() => void} */ close) => close()) : null;

/** A local file, read by range (Node.js); `close()` lets go of it (else it is let go of with the source). */
export class FileSource {
	/** @param {string | URL} target a path, or a file: URL */
	constructor(target) {
		this.target = target;
		this.name = String(target);
		/** @type {number | undefined} */
		this.size = undefined;
		/**
		 * @private
		 * @type {Promise<{fs: typeof import("node:fs"), fd: number}> | null}
		 */
		this.opened = null;
		/** Reads made so far (one per range), and the bytes they returned. */
		this.stats = { requests: 0, bytes: 0 };
		// every read goes through the descriptor first opened: a file put in its place
		// meanwhile is another file, never read
		this.pinsContent = true;
	}

	/**
	 * The open file: node:fs and its descriptor.
	 * @private
	 */
	open() {
		if (this.opened === null) {
			this.opened = (async () => {
				// Node's modules named by a variable: a bundler for the browser leaves the
				// import alone (this source is never made there) instead of failing on it
				const [fsModule, urlModule] = ["node:fs", "node:url"];
				/** @type {typeof import("node:fs")} */
				const fs = await import(fsModule);
				/** @type {typeof import("node:url")} */
				const { fileURLToPath } = await import(urlModule);
				const path = String(this.target).startsWith("file:") ? fileURLToPath(this.target) : String(this.target);
				/** @type {number} */
				const fd = await new Promise((resolve, reject) => fs.open(path, "r", (error, fd) => (error ? reject(error) : resolve(fd))));
				closeLost?.register(this, () => fs.close(fd, () => {}), this);
				return { fs, fd };
			})();
			this.opened.catch(() => {
				this.opened = null;
			});
		}
		return this.opened;
	}

	/**
	 * @param {[number, number][]} ranges
	 * @param {ReadOptions} [options]
	 */
	async read(ranges, options = {}) {
		options.signal?.throwIfAborted();
		/** @type {typeof import("node:fs")} */
		let fs;
		/** @type {number} */
		let fd;
		try {
			({ fs, fd } = await this.open());
			/** @type {import("node:fs").Stats} */
			const stat = await new Promise((resolve, reject) => fs.fstat(fd, (error, stat) => (error ? reject(error) : resolve(stat))));
			this.size = stat.size;
		} catch (error) {
			throw new HurrayIOError(`${this.name}: ${describe(error)}`, { cause: error });
		}
		const size = /** @type {number} */ (this.size);
		const readAt = (/** @type {Uint8Array} */ out, /** @type {number} */ at, /** @type {number} */ position) =>
			new Promise((resolve, reject) => fs.read(fd, out, at, out.length - at, position, (error, n) => (error ? reject(error) : resolve(n))));
		return Promise.all(
			ranges.map(async ([start, stop]) => {
				this.stats.requests++;
				const out = new Uint8Array(Math.max(0, Math.min(stop, size) - start));
				let at = 0;
				while (at < out.length) {
					const n = await readAt(out, at, start + at);
					if (n === 0) {
						break; // the file got shorter meanwhile
					}
					at += n;
				}
				this.stats.bytes += at;
				return out.subarray(0, at);
			}),
		);
	}

	/** Let go of the file. */
	async close() {
		const opened = this.opened;
		this.opened = null;
		if (opened !== null) {
			const { fs, fd } = await opened;
			closeLost?.unregister(this);
			await new Promise((resolve) => fs.close(fd, resolve));
		}
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

	/**
	 * @param {[number, number][]} ranges
	 * @param {ReadOptions} [options]
	 */
	async read(ranges, options = {}) {
		const out = new Array(ranges.length);
		let next = 0;
		const worker = async () => {
			while (next < ranges.length) {
				const k = next++;
				out[k] = await this.fetchRange(ranges[k][0], ranges[k][1], options.signal);
			}
		};
		await Promise.all(Array.from({ length: Math.min(this.policy.inFlight, ranges.length) }, worker));
		return out;
	}

	/**
	 * Bytes `[start, stop)`, fewer where the file ends first.
	 * @param {number} start
	 * @param {number} stop
	 * @param {AbortSignal} [abort] the caller's signal
	 * @returns {Promise<Uint8Array>}
	 */
	async fetchRange(start, stop, abort) {
		abort?.throwIfAborted();
		if (stop <= start) {
			return new Uint8Array(0);
		}
		this.stats.requests++;
		const timer = timeoutSignal(this.timeout);
		try {
			return await this.answer(start, stop, abort ? AbortSignal.any([abort, timer.signal]) : timer.signal);
		} catch (error) {
			abort?.throwIfAborted();
			throw error;
		} finally {
			timer.clear();
		}
	}

	/**
	 * The answer to the request for bytes `[start, stop)`.
	 * @param {number} start
	 * @param {number} stop
	 * @param {AbortSignal} signal
	 */
	async answer(start, stop, signal) {
		let response;
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
		const body = response.status === 206 ? new Uint8Array(await response.arrayBuffer()) : await readBody(response, skip + (stop - start), this.name, signal);
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
 * The body of `response`, at most `limit` bytes of it.  A whole answer (206: the
 * bytes asked for) is read as one buffer, which a headless browser's virtual time
 * waits for as a pending fetch (read as a stream, the page looks idle between its
 * pieces, and a virtual time budget runs out before the data is in); a 200 (a server
 * that ignored Range) is read as a stream and cut at `limit`: the rest is not downloaded.
 * @param {Response} response
 * @param {number} limit
 * @param {string} name
 * @param {AbortSignal} signal
 */
async function readBody(response, limit, name, signal) {
	if (response.body === null) {
		return new Uint8Array(0);
	}
	const failed = (/** @type {unknown} */ error) =>
		new HurrayIOError(`${name}: reading an answer failed${signal.aborted ? ` (${describe(signal.reason)})` : ""}: ${describe(error)}`, { cause: error });
	if (response.status === 206) {
		try {
			return new Uint8Array(await response.arrayBuffer()).subarray(0, limit);
		} catch (error) {
			throw failed(error);
		}
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
		throw failed(error);
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
 * @param {{cause?: unknown}} [options]
 */
export function changed(name, what, options) {
	return new HurrayChangedError(
		`${name} was replaced or modified after it was first read (${what}); open it again to read the new version`,
		options,
	);
}

/**
 * A signal that aborts after `ms` milliseconds of real time, and the function that
 * lets go of its timer.  In a page the timer runs in a worker: the page's own timers
 * follow its clock, which a headless browser's virtual time budget runs ahead of the
 * network whenever the page looks idle (a 30 s timeout then fires while an answer is
 * still arriving); a worker's timers keep real time.  Elsewhere, or where no worker
 * may start, `AbortSignal.timeout`.
 * @param {number} ms
 * @returns {{signal: AbortSignal, clear: () => void}}
 */
export function timeoutSignal(ms) {
	const worker = timerWorker();
	if (worker === null) {
		return { signal: AbortSignal.timeout(ms), clear: () => {} };
	}
	const controller = new AbortController();
	const id = nextTimer++;
	timers.set(id, () => controller.abort(new DOMException("signal timed out", "TimeoutError")));
	worker.postMessage([id, ms]);
	return {
		signal: controller.signal,
		clear: () => {
			if (timers.delete(id)) {
				worker.postMessage([id, -1]);
			}
		},
	};
}

/** What a timer worker runs: `[id, ms]` starts timer `id`, `[id, -1]` stops it; it posts `id` when one fires. */
const TIMER_CODE = "const t=new Map();onmessage=({data:[id,ms]})=>{if(ms<0){clearTimeout(t.get(id));t.delete(id)}else{t.set(id,setTimeout(()=>{t.delete(id);postMessage(id)},ms))}}";

/** @type {Worker | null | undefined} the page's timer worker (null: none can start) */
let timerWorkerOf;
let nextTimer = 0;
/** @type {Map<number, () => void>} what each running timer does when it fires */
const timers = new Map();

function timerWorker() {
	if (timerWorkerOf === undefined) {
		timerWorkerOf = null;
		if (!IN_NODE && typeof Worker === "function" && typeof Blob === "function" && typeof URL.createObjectURL === "function") {
			try {
				const worker = new Worker(URL.createObjectURL(new Blob([TIMER_CODE], { type: "text/javascript" })));
				worker.onmessage = ({ data }) => {
					timers.get(data)?.();
					timers.delete(data);
				};
				timerWorkerOf = worker;
			} catch {
				// a page whose policy forbids workers from blobs keeps the page's clock
			}
		}
	}
	return timerWorkerOf;
}

/** @param {string | null} header */
function totalOf(header) {
	const match = /\/(\d+)$/.exec(header ?? "");
	return match === null ? undefined : Number(match[1]);
}

/**
 * @param {unknown} error
 * @returns {string}
 */
function describe(error) {
	return error instanceof Error ? `${error.name}: ${error.message}${error.cause ? ` (${describe(error.cause)})` : ""}` : String(error);
}
