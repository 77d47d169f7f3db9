// Reading a Hurray file by byte range (docs/spec/container.md, "Reading a region"):
// one request for the first 64 KiB (header, metadata and, usually, the index root,
// page tables and pages), then for a read the index pages under it that the head
// does not hold, then its chunks, the requests of each step merged and sent
// together.  The checksums of chunks, pages and page tables are bound to their
// place (placeCrc): a valid part read in another's place fails its check.

import { checkDecodable, decodeChain } from "./codecs.js";
import { crc32c, placeCrc, verify, verifyCrc } from "./crc32c.js";
import { halfToNumber, isScalarValue, isUtf8 } from "./elements.js";
import { HurrayChangedError, HurrayFormatError, HurrayUnsupportedError, HurrayValueError } from "./errors.js";
import { checkVersion, HEADER_SIZE, parseHeader, u64 } from "./header.js";
import { emptyEntries, pageCount, parsePage, parsePageTable } from "./chunk_index.js";
import { parseJson } from "./json.js";
import { MAX_CHUNK_BYTES, MAX_METADATA_CONTAINERS, PAGE_ENTRIES } from "./limits.js";
import { parseMetadata } from "./metadata.js";
import { planReads } from "./plan.js";
import { BytesSource, changed, toSource } from "./source.js";

/** Bytes of the first request. */
export const HEAD_SIZE = 65536;

/** Most bytes of parsed index pages kept (20 per chunk position); the least recently used go first. */
const PAGE_CACHE_BYTES = 64 * 2 ** 20;

/** Page table entries read and checked at once (16 MiB). */
const TABLE_BLOCK = 2 ** 20;

/** Most bytes one result may take. */
const MAX_RESULT_BYTES = 2 ** 32;

/**
 * Most bytes of JavaScript objects the results of one read may take, as
 * `objectCost` estimates them: strings and byte arrays cost far more than the
 * bytes they hold, and a heap that runs out ends the process.
 */
const MAX_RESULT_OBJECT_BYTES = 2 ** 30;

/** Elements of a box of a chunk whose buffer positions are computed together. */
const SLAB = 2 ** 16;

/** UTF-8 decoding as the format defines it: strict, a leading byte-order mark kept. */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

if (new Uint8Array(Uint16Array.of(1).buffer)[0] !== 1) {
	throw new HurrayUnsupportedError("this reader needs a little-endian platform");
}

/**
 * @typedef {object} OpenOptions
 * @property {typeof fetch} [fetch] the fetch a URL is read with (default: the global one)
 * @property {Record<string, string>} [headers] sent with every request of a URL
 * @property {number} [timeout] milliseconds a request may take (default 30 000)
 * @property {import("./plan.js").MergePolicy} [mergePolicy] how byte ranges merge into requests
 * @property {boolean} [verifyChecksums] check every chunk's CRC-32C (default true;
 *   header, metadata and indexes are always checked)
 * @property {number} [maxChunkBytes] most bytes one decoded chunk may take (default 2**31)
 * @property {number} [maxMetadataContainers] most JSON arrays and objects in the metadata (default 2**17)
 */

/**
 * The elements of a read, in row-major order: a typed array for numbers (the
 * variable's own: Float32Array for float16, Uint8Array of 0 and 1 for bool; real
 * and imaginary parts one after the other for complex types; BigInt64Array,
 * BigUint64Array for 64-bit integers), an array of strings for U<n> and string, of
 * Uint8Array for S<n>.
 * @typedef {import("./elements.js").Words | string[] | Uint8Array[]} ReadData
 */

/**
 * @typedef {object} ReadResult
 * @property {ReadData} data the selected elements
 * @property {number[]} shape the box's shape (the lengths of its ranges)
 */

/**
 * A decoded chunk: its buffer's words, or for `string` its strings.
 * @typedef {import("./elements.js").Words | StringChunk} DecodedChunk
 */

/**
 * The copy loops below (fillResult, copyChunk, copyRun) move elements from a
 * DecodedChunk into ReadData of the same element type, dispatching on the type;
 * TypeScript cannot follow that pairing through the unions, so inside them a chunk
 * and a result are typed as `any` (`Slots`), and nowhere else.
 * @typedef {any} Slots
 */

/**
 * Open a Hurray file.
 * @param {string | URL | ArrayBuffer | Uint8Array | import("./source.js").ByteSource} target
 *   a URL, the file's bytes, or a source with `read(ranges)`
 * @param {OpenOptions} [options]
 * @returns {Promise<HurrayFile>}
 */
export async function openHurray(target, options = {}) {
	const file = new HurrayFile(toSource(target, options), options);
	await file.open();
	return file;
}

/** An open Hurray file (format 1.3). */
export class HurrayFile {
	/**
	 * @param {import("./source.js").ByteSource} source
	 * @param {OpenOptions} options
	 */
	constructor(source, options) {
		this.source = source;
		this.policy = options.mergePolicy ?? source.policy ?? { maxGap: 64 * 1024, maxRequest: 64 * 2 ** 20, inFlight: Infinity, crowdedGap: 0 };
		this.verifyChecksums = options.verifyChecksums ?? true;
		this.maxChunkBytes = options.maxChunkBytes ?? MAX_CHUNK_BYTES;
		this.maxMetadataContainers = options.maxMetadataContainers ?? MAX_METADATA_CONTAINERS;
		/** The format version, as [major, minor]. */
		this.version = [1, 3];
		/** @type {Uint8Array} */
		this.head = new Uint8Array(0);
		this.fileLength = 0;
		/** @type {import("./metadata.js").Group} */
		this.root = { path: "", attrs: {}, variables: [], groups: [] };
		/** @type {Map<string, import("./metadata.js").Variable>} */
		this.byPath = new Map();
		/** @type {Map<string, Promise<unknown>>} work done once: indexes and page tables */
		this.once = new Map();
		/**
		 * @type {Map<string, {entries: Promise<import("./chunk_index.js").Entries | null>, cost: number}>}
		 * index pages read or being read, and the bytes each keeps, least recently used first
		 */
		this.pageCache = new Map();
		this.cachedBytes = 0;
		/** Most bytes of parsed index pages kept. */
		this.pageCacheBytes = PAGE_CACHE_BYTES;
	}

	/** Read and check the head: header, metadata and index root. */
	async open() {
		const [head] = await this.source.read([[0, HEAD_SIZE]]);
		this.head = head;
		this.version = [1, checkVersion(head)];
		await this.guarded(() => this.openHead());
		for (const v of walkVariables(this.root)) {
			this.byPath.set(v.path, v);
		}
	}

	/** Parse the header, metadata and index root. */
	async openHead() {
		const slot = parseHeader(this.head, this.source.size);
		this.fileLength = slot.fileLength;
		const [metadata, root] = await this.regions([
			[slot.metadataOffset, slot.metadataLength, "metadata", slot.metadataCrc],
			[slot.rootOffset, slot.rootLength, "the index root", slot.rootCrc],
		]);
		this.root = parseMetadata(parseJson(metadata, this.maxMetadataContainers), metadata.length);
		this.rootRefs = this.checkRoot(root);
	}

	/**
	 * `work()`, whose errors from the file's bytes (a checksum mismatch, a part cut
	 * short) are checked against a change of the file: a part of another version
	 * fails its checks, and a file whose header is no longer the one read at open is
	 * reported as changed, not as damaged.  (Bytes in memory cannot change.)
	 * @template T
	 * @param {() => Promise<T>} work
	 * @returns {Promise<T>}
	 */
	async guarded(work) {
		try {
			return await work();
		} catch (error) {
			if (error instanceof HurrayFormatError && !(this.source instanceof BytesSource)) {
				await this.raiseIfChanged(error);
			}
			throw error;
		}
	}

	/**
	 * Throw a HurrayChangedError, caused by `damage`, where the header, read again,
	 * is no longer the one read at open (its generation, where its parts lie, their
	 * checksums: a new version changes them).  The source compares the answer's size,
	 * ETag and Last-Modified with its first too, and throws that error itself where
	 * they differ; where the header cannot be read, `damage` stands.
	 * @param {HurrayFormatError} damage
	 */
	async raiseIfChanged(damage) {
		const size = HEADER_SIZE;
		let now;
		try {
			[now] = await this.source.read([[0, size]]);
		} catch (error) {
			if (error instanceof HurrayChangedError) throw error;
			return;
		}
		const then = this.head.subarray(0, size);
		if (now.length !== then.length || now.some((b, i) => b !== then[i])) {
			throw changed(this.source.name, describeChange(then, now), { cause: damage });
		}
	}

	/** Every variable's path, groups included (`"1/temperature"`), in file order. */
	get variables() {
		return [...this.byPath.keys()];
	}

	/** The root group's attributes. */
	get attrs() {
		return this.root.attrs;
	}

	/**
	 * Every group by its path ("" for the root), with its attributes, variables and child groups.
	 * @returns {Map<string, import("./metadata.js").Group>}
	 */
	get groups() {
		const out = new Map();
		const visit = (/** @type {import("./metadata.js").Group} */ g) => {
			out.set(g.path, g);
			g.groups.forEach(visit);
		};
		visit(this.root);
		return out;
	}

	/**
	 * The description of the variable at `path`.
	 * @param {string} path
	 */
	variable(path) {
		const found = this.byPath.get(path) ?? this.byPath.get(path.split("/").filter(Boolean).join("/"));
		if (found === undefined) {
			throw new HurrayValueError(`no variable ${JSON.stringify(path)}; the file holds ${JSON.stringify(this.variables)}`);
		}
		return found;
	}

	/**
	 * The elements of `path` in the box `ranges`: one `[start, stop)` pair per axis
	 * (default: the whole variable).
	 * @param {string} path
	 * @param {[number, number][]} [ranges]
	 * @returns {Promise<ReadResult>}
	 */
	async read(path, ranges) {
		const [result] = await this.readMany(path, [ranges]);
		return result;
	}

	/**
	 * Several boxes of `path` at once: their index pages, then their chunks, are each
	 * fetched in one set of merged requests.  `signal` aborts the requests for the
	 * chunks (index pages, which other reads may share, are read to the end).
	 * @param {string} path
	 * @param {([number, number][] | undefined)[]} boxes
	 * @param {{signal?: AbortSignal}} [options]
	 * @returns {Promise<ReadResult[]>}
	 */
	async readMany(path, boxes, options = {}) {
		const v = this.variable(path);
		checkDecodable(v.codecs, `variable ${JSON.stringify(v.path)}`);
		const full = v.layout.bufferSize * v.element.itemsize;
		if (v.element.kind !== "string" && full > this.maxChunkBytes) {
			throw new HurrayFormatError(
				`a chunk of variable ${JSON.stringify(v.path)} decodes to ${full} bytes, more than maxChunkBytes=${this.maxChunkBytes}; raise it to read this variable`,
			);
		}
		const selections = boxes.map((box) => selectBox(v, box));
		const objects = selections.reduce((total, s) => total + s.count * objectCost(v.element), 0);
		if (objects > MAX_RESULT_OBJECT_BYTES) {
			const count = selections.reduce((total, s) => total + s.count, 0);
			throw new HurrayValueError(
				`a read of ${count} elements of ${JSON.stringify(v.path)} (${v.dtype}) builds about ${objects} bytes of JavaScript objects, more than ${MAX_RESULT_OBJECT_BYTES}; read it in parts`,
			);
		}
		return this.guarded(() => this.readSelections(v, selections, options));
	}

	/**
	 * The results of the checked `selections` of `v`.
	 * @param {import("./metadata.js").Variable} v
	 * @param {Selection[]} selections
	 * @param {{signal?: AbortSignal}} options
	 * @returns {Promise<ReadResult[]>}
	 */
	async readSelections(v, selections, options) {
		/** @type {Map<number, number[]>} chunk number -> grid coordinates */
		const chunks = new Map();
		for (const s of selections) {
			for (const coords of s.chunks) {
				chunks.set(coords.reduce((n, c, a) => n * v.grid[a] + c, 0), coords);
			}
		}
		const ids = [...chunks.keys()];
		const entries = await this.entries(v, ids, [...chunks.values()]);
		const outs = selections.map((s) => newResult(v, s.count));
		// a chunk of no bytes is a missing chunk
		const missing = (/** @type {number} */ k) => entries.sizes[k] === 0;
		if (ids.some((_, k) => missing(k))) {
			const fill = fillElement(v);
			outs.forEach((out) => fillResult(out, fill, v));
		}
		const stored = ids.map((_, k) => k).filter((k) => !missing(k));
		const plan = planReads(
			stored.map((k) => entries.offsets[k]),
			stored.map((k) => entries.offsets[k] + entries.sizes[k]),
			this.policy,
		);
		options.signal?.throwIfAborted();
		const answers = await this.fetchWhole(plan.requests, options.signal);
		// from a source that cannot tell another version of the file of the same size
		// from the first, only the checksums keep that version's chunks out of a read
		const checked = this.verifyChecksums || !this.source.pinsContent;
		for (let j = 0; j < stored.length; j++) {
			const k = stored[j];
			const [first] = plan.requests[plan.requestOf[j]];
			const at = entries.offsets[k] - first;
			const bytes = answers[plan.requestOf[j]].subarray(at, at + entries.sizes[k]);
			const what = `chunk ${ids[k]} of variable ${JSON.stringify(v.path)}`;
			const coords = /** @type {number[]} */ (chunks.get(ids[k]));
			if (checked) {
				verify(bytes, (entries.crcs[k] ^ placeCrc("C", v.path, coords)) >>> 0, what, true);
			}
			const chunk = this.decodeChunk(v, bytes, what);
			selections.forEach((s, b) => {
				if (s.touches(coords)) {
					copyChunk(v, chunk, coords, s, outs[b]);
				}
			});
		}
		return outs.map((data, b) => ({ data, shape: selections[b].shape }));
	}

	/**
	 * The checked bytes of each `[offset, length, what, crc]` part: from the head where
	 * it holds them, the others in merged requests.
	 * @param {[number, number, string, number][]} parts
	 * @returns {Promise<Uint8Array[]>}
	 */
	async regions(parts) {
		const outside = parts.filter(([offset, length]) => offset + length > this.head.length);
		const plan = planReads(
			outside.map(([offset]) => offset),
			outside.map(([offset, length]) => offset + length),
			this.policy,
		);
		const answers = outside.length ? await this.source.read(plan.requests) : [];
		return parts.map(([offset, length, what, crc]) => {
			let data;
			const k = outside.findIndex((p) => p[0] === offset && p[1] === length);
			if (k < 0) {
				data = this.head.subarray(offset, offset + length);
			} else {
				const [first] = plan.requests[plan.requestOf[k]];
				data = answers[plan.requestOf[k]].subarray(offset - first, offset - first + length);
			}
			if (data.length !== length) {
				throw new HurrayFormatError(
					`truncated file ${this.source.name}: ${what} needs bytes [${offset}, ${offset + length}), got ${data.length}`,
				);
			}
			verify(data, crc, what);
			return data;
		});
	}

	/**
	 * The answers to `requests`, each checked to be whole.
	 * @param {[number, number][]} requests
	 * @param {AbortSignal} [signal]
	 */
	async fetchWhole(requests, signal) {
		const answers = requests.length ? await this.source.read(requests, signal ? { signal } : undefined) : [];
		answers.forEach((blob, k) => {
			const [start, stop] = requests[k];
			if (blob.length !== stop - start) {
				throw new HurrayFormatError(
					`truncated file ${this.source.name}: bytes [${start}, ${stop}) returned ${blob.length} bytes`,
				);
			}
		});
		return answers;
	}

	/**
	 * The root's reference to each variable's page table, checked.
	 * @param {Uint8Array} root
	 */
	checkRoot(root) {
		const variables = [...walkVariables(this.root)];
		if (root.length !== 12 * variables.length) {
			throw new HurrayFormatError(
				`the index root has ${root.length} bytes; the ${variables.length} variables need ${12 * variables.length}`,
			);
		}
		const view = new DataView(root.buffer, root.byteOffset, root.length);
		return variables.map((v, k) => {
			const what = `the page table of variable ${JSON.stringify(v.path)}`;
			const offset = u64(view, 12 * k, what);
			const crc = view.getUint32(12 * k + 8, true);
			const length = Math.ceil(v.chunkCount / PAGE_ENTRIES) * 16;
			// a page table of more bytes than the file holds is refused before anything is
			// sized by the chunk count: that bounds the chunks a file may declare by its size
			const none = offset === 0;
			if ((none && (crc !== 0 || length !== 0)) || (!none && (length === 0 || offset < HEADER_SIZE || offset + length > this.fileLength))) {
				throw new HurrayFormatError(
					`${what} refers to bytes [${offset}, ${offset + length}) (crc32c ${crc}), not a part of the file's ${this.fileLength} bytes`,
				);
			}
			return { offset, crc, length };
		});
	}

	/**
	 * `make()`, run once for `key` for the life of the file.
	 * @template T
	 * @param {string} key
	 * @param {() => Promise<T>} make
	 * @returns {Promise<T>}
	 */
	cached(key, make) {
		let found = this.once.get(key);
		if (found === undefined) {
			const made = make();
			this.once.set(key, made);
			// a failure is not kept: the next read tries again (and fails again if the bytes are bad)
			made.catch(() => {
				if (this.once.get(key) === made) this.once.delete(key);
			});
			found = made;
		}
		return /** @type {Promise<T>} */ (found);
	}

	/**
	 * The checked entries of chunks `ids` (row-major numbers at grid coordinates `coords`).
	 * @param {import("./metadata.js").Variable} v
	 * @param {number[]} ids
	 * @param {number[][]} coords
	 * @returns {Promise<import("./chunk_index.js").Entries>}
	 */
	async entries(v, ids, coords) {
		const out = emptyEntries(ids.length);
		const positions = coords.map((c) => v.placement.position(c));
		const pages = [...new Set(positions.map((p) => Math.floor(p / PAGE_ENTRIES)))];
		const found = await this.pages(v, pages);
		positions.forEach((p, k) => {
			const page = found.get(Math.floor(p / PAGE_ENTRIES));
			if (page) {
				const j = p % PAGE_ENTRIES;
				out.offsets[k] = page.offsets[j];
				out.sizes[k] = page.sizes[j];
				out.crcs[k] = page.crcs[j];
			}
		});
		return out;
	}

	/**
	 * The checked page table of `v`: its present pages.
	 * @param {import("./metadata.js").Variable} v
	 * @returns {Promise<Map<number, import("./chunk_index.js").PageRef>>}
	 */
	pageTable(v) {
		return this.cached(`table ${v.path}`, async () => {
			const ref = /** @type {{offset: number, crc: number, length: number}[]} */ (this.rootRefs)[v.number];
			const size = 16;
			const count = Math.ceil(v.chunkCount / PAGE_ENTRIES);
			/** @type {Map<number, import("./chunk_index.js").PageRef>} */
			const present = new Map();
			let running = 0;
			/** @type {unknown} */
			let problem = null;
			for (let first = 0; first < count; first += TABLE_BLOCK) {
				const n = Math.min(TABLE_BLOCK, count - first);
				const start = ref.offset + first * size;
				const [data] =
					start + n * size <= this.head.length ? [this.head.subarray(start, start + n * size)] : await this.fetchWhole([[start, start + n * size]]);
				running = crc32c(data, running);
				// a structural problem is raised only once the checksum matched, so
				// that damage is reported as damage
				if (problem === null) {
					try {
						parsePageTable(data, first, v.path, this.fileLength, present);
					} catch (error) {
						problem = error;
					}
				}
			}
			if (count) {
				// a variable without chunks has no table: its reference is all zero
				verifyCrc(running, (ref.crc ^ placeCrc("T", v.path)) >>> 0, `the page table of ${JSON.stringify(v.path)}`, true);
			}
			if (problem !== null) {
				throw problem;
			}
			return present;
		});
	}

	/**
	 * The checked entries of `pages` of `v` (null for a page of missing chunks only):
	 * those not read or being read before fetched in merged requests, those in the
	 * head cut from it.  Each page this read waits for is taken from the cache once,
	 * at the start: a page another read evicts or fails to read meanwhile is still
	 * this read's to await, and its failure this read's failure, never a page of
	 * missing chunks.
	 * @param {import("./metadata.js").Variable} v
	 * @param {number[]} pages
	 * @returns {Promise<Map<number, import("./chunk_index.js").Entries | null>>}
	 */
	async pages(v, pages) {
		const table = await this.pageTable(v);
		const key = (/** @type {number} */ p) => `${v.number} ${p}`;
		/** @type {Map<number, Promise<import("./chunk_index.js").Entries | null>>} */
		const wanted = new Map();
		const todo = [];
		for (const p of new Set(pages)) {
			const found = this.pageCache.get(key(p));
			if (!table.has(p)) {
				continue; // an absent page: every chunk of it missing
			}
			if (found === undefined) {
				todo.push(p);
			} else {
				// least recently used first: a page read again moves to the end
				this.pageCache.delete(key(p));
				this.pageCache.set(key(p), found);
				wanted.set(p, found.entries);
			}
		}
		const refs = todo.map((p) => /** @type {import("./chunk_index.js").PageRef} */ (table.get(p)));
		const outside = todo.map((_, k) => k).filter((k) => refs[k].offset + refs[k].length > this.head.length);
		const plan = planReads(
			outside.map((k) => refs[k].offset),
			outside.map((k) => refs[k].offset + refs[k].length),
			this.policy,
		);
		const fetched = outside.length ? this.fetchWhole(plan.requests) : Promise.resolve([]);
		todo.forEach((p, k) => {
			const entries = (async () => {
				const ref = refs[k];
				let data;
				const j = outside.indexOf(k);
				if (j < 0) {
					data = this.head.subarray(ref.offset, ref.offset + ref.length);
				} else {
					const answers = await fetched;
					const [first] = plan.requests[plan.requestOf[j]];
					data = answers[plan.requestOf[j]].subarray(ref.offset - first, ref.offset - first + ref.length);
				}
				const what = `index page ${p} of ${JSON.stringify(v.path)}`;
				return parsePage(data, ref, pageCount(v.chunkCount, p), placeCrc("P", v.path, [p]), what, this.fileLength);
			})();
			const entry = { entries, cost: 20 * pageCount(v.chunkCount, p) };
			this.pageCache.set(key(p), entry);
			this.cachedBytes += entry.cost;
			// a failed page is not kept: the next read tries again
			entries.catch(() => this.forgetPage(key(p), entry));
			wanted.set(p, entries);
		});
		for (const [oldest, entry] of this.pageCache) {
			if (this.cachedBytes <= this.pageCacheBytes) break;
			this.forgetPage(oldest, entry);
		}
		const found = await Promise.all(pages.map((p) => wanted.get(p) ?? null));
		return new Map(pages.map((p, k) => [p, found[k]]));
	}

	/**
	 * Drop the cached page `key` if it is still `entry`.
	 * @param {string} key
	 * @param {{entries: Promise<unknown>, cost: number}} entry
	 */
	forgetPage(key, entry) {
		if (this.pageCache.get(key) === entry) {
			this.pageCache.delete(key);
			this.cachedBytes -= entry.cost;
		}
	}

	/**
	 * The buffer of one stored chunk, decoded and checked, as the words of its element type.
	 * @param {import("./metadata.js").Variable} v
	 * @param {Uint8Array} bytes
	 * @param {string} what
	 * @returns {DecodedChunk}
	 */
	decodeChunk(v, bytes, what) {
		const e = v.element;
		const expected = v.layout.bufferSize * e.itemsize;
		const limit = e.kind === "string" ? this.maxChunkBytes : expected;
		let raw;
		try {
			raw = decodeChain(v.codecs, bytes, limit);
		} catch (error) {
			if (error instanceof HurrayFormatError) {
				error.message = `cannot decode ${what}: ${error.message}`;
			}
			throw error;
		}
		if (e.kind === "string") {
			return decodeStrings(raw, v.layout.bufferSize, what);
		}
		if (raw.length !== expected) {
			throw new HurrayFormatError(`cannot decode ${what}: it decodes to ${raw.length} bytes, one buffer is ${expected}`);
		}
		// a typed view needs its element alignment: a chunk stored without a codec is a
		// slice of its request, anywhere
		const aligned = raw.byteOffset % 8 === 0 ? raw : raw.slice();
		const words = new (wordsOf(e))(bufferOf(aligned), aligned.byteOffset, v.layout.bufferSize * e.units);
		// every element of the buffer is checked, padding included, as the Python
		// reader checks it: a chunk is refused whichever of its elements a read takes
		if (e.kind === "bool" && raw.some((b) => b > 1)) {
			throw new HurrayFormatError(`cannot decode ${what}: a bool element holds a byte other than 0 or 1`);
		}
		if (e.kind === "text") {
			const point = /** @type {Uint32Array} */ (words).find((w) => !isScalarValue(w));
			if (point !== undefined) {
				throw new HurrayFormatError(`cannot decode ${what}: a U element holds ${point}, not a Unicode scalar value`);
			}
		}
		return words;
	}
}

/**
 * Every variable of the tree in variable number order (depth first).
 * @param {import("./metadata.js").Group} group
 * @returns {Generator<import("./metadata.js").Variable>}
 */
function* walkVariables(group) {
	yield* group.variables;
	for (const child of group.groups) {
		yield* walkVariables(child);
	}
}

/**
 * @typedef {object} Selection
 * @property {number[]} lo
 * @property {number[]} hi
 * @property {number[]} shape
 * @property {number} count
 * @property {number[][]} chunks grid coordinates of the chunks the box touches
 * @property {(coords: number[]) => boolean} touches
 */

/**
 * The box `ranges` of `v`, checked.
 * @param {import("./metadata.js").Variable} v
 * @param {[number, number][] | undefined} ranges
 * @returns {Selection}
 */
function selectBox(v, ranges) {
	const box = ranges ?? v.shape.map((n) => [0, n]);
	if (!Array.isArray(box) || box.length !== v.shape.length) {
		throw new HurrayValueError(`a read of ${JSON.stringify(v.path)} needs one [start, stop] range per axis of shape [${v.shape}]`);
	}
	/** @type {number[]} */
	const lo = [];
	/** @type {number[]} */
	const hi = [];
	for (let a = 0; a < box.length; a++) {
		const [start, stop] = Array.isArray(box[a]) ? box[a] : [Number.NaN, Number.NaN];
		if (!Number.isInteger(start) || !Number.isInteger(stop) || start < 0 || stop < start || stop > v.shape[a]) {
			throw new HurrayValueError(`range ${JSON.stringify(box[a])} of axis ${a} (${v.dims[a]}) is not within [0, ${v.shape[a]}]`);
		}
		lo.push(start);
		hi.push(stop);
	}
	const shape = lo.map((l, a) => hi[a] - l);
	const count = shape.reduce((x, y) => x * y, 1);
	if (count * v.element.itemsize > MAX_RESULT_BYTES) {
		throw new HurrayValueError(`a read of ${count} elements of ${JSON.stringify(v.path)} is larger than ${MAX_RESULT_BYTES} bytes; read it in parts`);
	}
	const first = lo.map((l, a) => Math.floor(l / v.chunks[a]));
	const last = hi.map((h, a) => Math.ceil(h / v.chunks[a]));
	/** @type {number[][]} */
	const chunks = [];
	if (count > 0) {
		const c = first.slice();
		for (;;) {
			chunks.push(c.slice());
			let a = c.length - 1;
			while (a >= 0 && ++c[a] === last[a]) {
				c[a] = first[a];
				a--;
			}
			if (a < 0) break;
		}
	}
	const touches = (/** @type {number[]} */ coords) => coords.every((x, a) => x >= first[a] && x < last[a]);
	return { lo, hi, shape, count, chunks, touches };
}

/**
 * Bytes of JavaScript objects one element of type `e` takes in a result, at most
 * (0 for the types held in typed arrays): its slot in the array and its object, a
 * byte array of its own for S<n>, a string of up to two UTF-16 units a code point
 * for U<n> (a `string` element's text is bounded by the bytes stored).
 * @param {import("./elements.js").ElementType} e
 */
function objectCost(e) {
	switch (e.kind) {
		case "bytes":
			return 224 + e.units;
		case "text":
			return 32 + 4 * e.units;
		case "string":
			return 32;
		default:
			return 0;
	}
}

/**
 * The typed array of the words of `e`, which is not `string`.
 * @param {import("./elements.js").ElementType} e
 * @returns {import("./elements.js").WordsConstructor}
 */
function wordsOf(e) {
	if (e.Array === null) {
		throw new TypeError(`${e.name} elements are not stored as words`);
	}
	return e.Array;
}

/**
 * The buffer under `bytes`: an ArrayBuffer, as every buffer this reader makes or
 * receives (fetch, a file read, a decoder) is; never a shared one.
 * @param {Uint8Array} bytes
 * @returns {ArrayBuffer}
 */
function bufferOf(bytes) {
	return /** @type {ArrayBuffer} */ (bytes.buffer);
}

/**
 * A result of `count` elements of `v`.
 * @param {import("./metadata.js").Variable} v
 * @param {number} count
 * @returns {ReadData}
 */
function newResult(v, count) {
	const e = v.element;
	if (e.kind === "float" && e.name === "float16") {
		return new Float32Array(count);
	}
	if (e.Array === null || e.kind === "bytes" || e.kind === "text") {
		return new Array(count);
	}
	return new e.Array(count * e.units);
}

/**
 * The fill value as a result holds it: a number, a bigint, a boolean byte, a pair
 * (complex), a string, or bytes.
 * @param {import("./metadata.js").Variable} v
 */
function fillElement(v) {
	const e = v.element;
	const bytes = v.fillBytes;
	if (e.kind === "string") {
		return UTF8.decode(bytes);
	}
	const copy = bytes.slice();
	if (e.kind === "bytes") {
		return trimZeros(copy);
	}
	if (e.kind === "text") {
		return textOf(new Uint32Array(copy.buffer), 0, e.units);
	}
	const words = new (wordsOf(e))(copy.buffer);
	if (e.name === "float16") {
		return [halfToNumber(/** @type {Uint16Array} */ (words)[0])];
	}
	return [...words];
}

/**
 * @param {Slots} out
 * @param {unknown} fill
 * @param {import("./metadata.js").Variable} v
 */
function fillResult(out, fill, v) {
	const e = v.element;
	if (Array.isArray(fill) && e.kind !== "string") {
		if (fill.length === 1) {
			out.fill(fill[0]);
		} else {
			for (let i = 0; i < out.length; i += fill.length) {
				out[i] = fill[0];
				out[i + 1] = fill[1];
			}
		}
	} else {
		out.fill(fill);
	}
}

/**
 * Copy the elements of decoded chunk `chunk` (at grid `coords`) that selection `s`
 * holds into `out`.  In row-major order, runs along the last axis are copied whole;
 * otherwise the box is taken in slabs of at most SLAB elements, the buffer positions
 * of each slab's elements computed at once.
 * @param {import("./metadata.js").Variable} v
 * @param {Slots} chunk the buffer's words (for `string`, a StringChunk)
 * @param {number[]} coords
 * @param {Selection} s
 * @param {Slots} out
 */
function copyChunk(v, chunk, coords, s, out) {
	const rank = v.shape.length;
	const e = v.element;
	if (rank === 0) {
		copyRun(e, chunk, Uint32Array.of(0), 0, out, 0, 1);
		return;
	}
	const origin = coords.map((c, a) => c * v.chunks[a]);
	const lo = origin.map((o, a) => Math.max(o, s.lo[a]));
	const hi = origin.map((o, a) => Math.min(o + v.chunks[a], s.hi[a]));
	if (lo.some((l, a) => l >= hi[a])) {
		return;
	}
	const outStride = strides(s.shape);
	const last = rank - 1;
	const resultAt = (/** @type {number[]} */ x) => x.reduce((o, xa, a) => o + (xa - s.lo[a]) * outStride[a], 0);
	if (v.layout.name === "row-major" && ["int", "uint", "float", "complex"].includes(e.kind) && e.name !== "float16") {
		// the run along the last axis is contiguous in the buffer too
		const units = e.units;
		const chunkStride = strides(v.chunks);
		const run = hi[last] - lo[last];
		eachRow(lo, hi, (x) => {
			const c = x.reduce((n, xa, a) => n + (xa - origin[a]) * chunkStride[a], 0);
			out.set(chunk.subarray(c * units, (c + run) * units), resultAt(x) * units);
		});
		return;
	}
	// slabs: the box cut along axis `a`, the outermost whose inner axes hold at most
	// SLAB elements, into pieces of `step` along it (and single indices before it)
	const shape = lo.map((l, d) => hi[d] - l);
	let a = 0;
	while (shape.slice(a + 1).reduce((x, y) => x * y, 1) > SLAB) a++;
	const inner = shape.slice(a + 1).reduce((x, y) => x * y, 1);
	const step = Math.max(1, Math.floor(SLAB / inner));
	const positions = new Uint32Array(Math.min(SLAB, shape.reduce((x, y) => x * y, 1)));
	const outer = lo.slice(0, a + 1);
	const outerHi = hi.slice(0, a + 1);
	outer[a] = lo[a];
	for (;;) {
		// the slab: single indices `outer` before axis a, [outer[a], stop) along it, whole after
		const stop = Math.min(outer[a] + step, hi[a]);
		const slabLo = [...outer, ...lo.slice(a + 1)];
		const slabHi = [...outer.slice(0, a).map((x) => x + 1), stop, ...hi.slice(a + 1)];
		const local = (/** @type {number[]} */ x) => x.map((xa, d) => xa - origin[d]);
		const count = slabHi.reduce((n, h, d) => n * (h - slabLo[d]), 1);
		v.layout.positions(local(slabLo), local(slabHi), positions.subarray(0, count));
		const run = slabHi[last] - slabLo[last];
		let at = 0;
		eachRow(slabLo, slabHi, (x) => {
			copyRun(e, chunk, positions, at, out, resultAt(x), run);
			at += run;
		});
		// the next slab: along axis a, then the indices before it
		outer[a] = stop;
		let d = a;
		while (d >= 0 && outer[d] === outerHi[d]) {
			outer[d] = lo[d];
			d--;
			if (d >= 0) outer[d]++;
		}
		if (d < 0) break;
	}
}

/**
 * Call `row(x)` with the first point `x` of each run along the last axis of the box
 * `[lo, hi)`, in row-major order (`x` is reused: copy it to keep it).
 * @param {number[]} lo
 * @param {number[]} hi
 * @param {(x: number[]) => void} row
 */
function eachRow(lo, hi, row) {
	const x = lo.slice();
	for (;;) {
		row(x);
		let a = x.length - 2;
		while (a >= 0 && ++x[a] === hi[a]) {
			x[a] = lo[a];
			a--;
		}
		if (a < 0) break;
	}
}

/**
 * Copy `n` elements of `chunk` at the buffer positions `positions[at...]` to `out`
 * from result position `o` on.
 * @param {import("./elements.js").ElementType} e
 * @param {Slots} chunk
 * @param {Uint32Array} positions
 * @param {number} at
 * @param {Slots} out
 * @param {number} o
 * @param {number} n
 */
function copyRun(e, chunk, positions, at, out, o, n) {
	const units = e.units;
	switch (e.kind) {
		case "string":
			for (let i = 0; i < n; i++) out[o + i] = chunk.get(positions[at + i]);
			return;
		case "bytes":
			for (let i = 0; i < n; i++) {
				const p = positions[at + i];
				out[o + i] = trimZeros(chunk.slice(p * units, (p + 1) * units));
			}
			return;
		case "text":
			for (let i = 0; i < n; i++) out[o + i] = textOf(chunk, positions[at + i] * units, units);
			return;
		default:
			if (e.name === "float16") {
				for (let i = 0; i < n; i++) out[o + i] = halfToNumber(chunk[positions[at + i]]);
			} else if (units === 1) {
				for (let i = 0; i < n; i++) out[o + i] = chunk[positions[at + i]];
			} else {
				for (let i = 0; i < n; i++) {
					const p = positions[at + i];
					out[2 * (o + i)] = chunk[2 * p];
					out[2 * (o + i) + 1] = chunk[2 * p + 1];
				}
			}
	}
}

/** Code points made into a string at once: a call's arguments live on the stack. */
const TEXT_PIECE = 8192;

/**
 * The U<n> element of `units` code points at `start` of `words` (checked when the
 * chunk was decoded), its trailing zeros dropped.
 * @param {Uint32Array} words
 * @param {number} start
 * @param {number} units
 */
function textOf(words, start, units) {
	let end = start + units;
	while (end > start && words[end - 1] === 0) end--;
	let text = "";
	for (let i = start; i < end; i += TEXT_PIECE) {
		text += String.fromCodePoint(...words.subarray(i, Math.min(end, i + TEXT_PIECE)));
	}
	return text;
}

/** @param {Uint8Array} bytes */
function trimZeros(bytes) {
	let end = bytes.length;
	while (end > 0 && bytes[end - 1] === 0) end--;
	return bytes.subarray(0, end);
}

/** @param {number[]} shape */
function strides(shape) {
	const out = new Array(shape.length);
	let s = 1;
	for (let a = shape.length - 1; a >= 0; a--) {
		out[a] = s;
		s *= shape[a];
	}
	return out;
}

/**
 * The strings of a decoded `string` buffer, each made when a read takes it.
 * @typedef {object} StringChunk
 * @property {(i: number) => string} get string `i` of the buffer
 */

/**
 * A `string` buffer of `n` strings: n u32 byte lengths, then the UTF-8 bytes, all
 * checked here (as the Python reader checks them); a string is made only when a
 * read takes it.
 * @param {Uint8Array} raw
 * @param {number} n
 * @param {string} what
 * @returns {StringChunk}
 */
function decodeStrings(raw, n, what) {
	if (raw.length < 4 * n) {
		throw new HurrayFormatError(`cannot decode ${what}: ${raw.length} bytes hold no ${n} string lengths`);
	}
	const view = new DataView(raw.buffer, raw.byteOffset, raw.length);
	// starts[i] to starts[i + 1]: the bytes of string i (a buffer is below 2**32 bytes)
	const starts = new Uint32Array(n + 1);
	let at = 4 * n;
	for (let i = 0; i < n; i++) {
		starts[i] = at;
		const length = view.getUint32(4 * i, true);
		if (at + length > raw.length) {
			throw new HurrayFormatError(`cannot decode ${what}: its string lengths add up to more than the bytes that follow them`);
		}
		if (!isUtf8(raw, at, at + length)) {
			throw new HurrayFormatError(`cannot decode ${what}: string ${i} is not valid UTF-8`);
		}
		at += length;
	}
	starts[n] = at;
	if (at !== raw.length) {
		throw new HurrayFormatError(`cannot decode ${what}: its string lengths add up to ${at - 4 * n} bytes, ${raw.length - 4 * n} follow them`);
	}
	return { get: (i) => UTF8.decode(raw.subarray(starts[i], starts[i + 1])) };
}

/**
 * How the header `then` (read at open) differs from `now` (read again), in the
 * Python reader's words.
 * @param {Uint8Array} then
 * @param {Uint8Array} now
 */
function describeChange(then, now) {
	if (now.length === then.length) {
		try {
			const was = parseHeader(then, undefined).generation;
			const found = parseHeader(now, undefined).generation;
			return found === was
				? `its header changed, at generation ${was}: another file in its place`
				: `its header's generation ${was} became ${found}`;
		} catch {
			// a header that no longer parses: changed, no more said
		}
	}
	return "its header changed";
}
