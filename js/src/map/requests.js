// The reads of the tiles a map asks for at once, gathered into one `readMany` per
// variable: a map library asks for the tiles of a view one by one, in the same task
// (or over a few frames: a batch is sent once `wait` ms pass without a new tile, at
// most `MAX_WAIT` after its first), and read together their chunks' byte ranges merge
// into few requests and a chunk that two tiles share is fetched and decoded once.
//
// A tile whose signal aborts before its batch is sent leaves the batch; once sent,
// the batch's requests are aborted when every tile of it has been.

/**
 * @typedef {object} Job
 * @property {string} path
 * @property {[number, number][][]} boxes
 * @property {(results: import("../reader.js").ReadResult[]) => void} resolve
 * @property {(error: unknown) => void} reject
 * @property {Batch | null} batch the batch it was sent in (null: not sent yet)
 * @property {boolean} settled
 */

/**
 * @typedef {object} Batch
 * @property {AbortController} controller
 * @property {number} live its jobs not aborted
 */

/** The longest a batch waits for more tiles, in milliseconds. */
const MAX_WAIT = 100;

/** Gathers reads into batches, one `readMany` per variable and batch. */
export class TileRequests {
	/**
	 * @param {import("../reader.js").HurrayFile} file
	 * @param {object} [options]
	 * @param {number} [options.wait] milliseconds without a new tile after which a
	 *   batch is sent (default 0: the tiles asked for in the same task)
	 */
	constructor(file, options = {}) {
		this.file = file;
		this.wait = options.wait ?? 0;
		/** @type {Job[]} */
		this.pending = [];
		/** @type {ReturnType<typeof setTimeout> | null} */
		this.timer = null;
		/** when the pending batch's first tile came */
		this.since = 0;
		/** Batches sent, and the readMany calls they made (one per variable). */
		this.stats = { batches: 0, reads: 0 };
	}

	/**
	 * The values in `boxes` of variable `path`, read with the other tiles of the batch.
	 * @param {string} path
	 * @param {[number, number][][]} boxes
	 * @param {AbortSignal} [signal] aborts this tile's part
	 * @returns {Promise<import("../reader.js").ReadResult[]>}
	 */
	read(path, boxes, signal) {
		if (signal?.aborted) {
			return Promise.reject(signal.reason);
		}
		return new Promise((resolve, reject) => {
			/** @type {Job} */
			const job = { path, boxes, resolve, reject, batch: null, settled: false };
			this.pending.push(job);
			signal?.addEventListener("abort", () => this.abort(job, signal.reason), { once: true });
			if (this.timer === null) {
				this.since = Date.now();
			} else if (this.wait > 0 && Date.now() - this.since < MAX_WAIT) {
				clearTimeout(this.timer); // another tile: wait for more
				this.timer = null;
			}
			this.timer ??= setTimeout(() => this.flush(), this.wait);
		});
	}

	/** Send the pending jobs: one readMany per variable. */
	flush() {
		this.timer = null;
		const jobs = this.pending;
		this.pending = [];
		if (jobs.length === 0) {
			return;
		}
		this.stats.batches++;
		/** @type {Map<string, Job[]>} */
		const byPath = new Map();
		for (const job of jobs) {
			byPath.set(job.path, [...(byPath.get(job.path) ?? []), job]);
		}
		for (const [path, group] of byPath) {
			/** @type {Batch} */
			const batch = { controller: new AbortController(), live: group.length };
			group.forEach((job) => {
				job.batch = batch;
			});
			this.stats.reads++;
			this.file
				.readMany(
					path,
					group.flatMap((job) => job.boxes),
					{ signal: batch.controller.signal },
				)
				.then(
					(results) => {
						let at = 0;
						for (const job of group) {
							const mine = results.slice(at, at + job.boxes.length);
							at += job.boxes.length;
							settle(job, () => job.resolve(mine));
						}
					},
					(error) => group.forEach((job) => settle(job, () => job.reject(error))),
				);
		}
	}

	/**
	 * A tile no longer wanted: out of its batch, or its batch aborted once no tile wants it.
	 * @param {Job} job
	 * @param {unknown} reason
	 */
	abort(job, reason) {
		if (job.settled) {
			return;
		}
		settle(job, () => job.reject(reason));
		if (job.batch === null) {
			this.pending = this.pending.filter((j) => j !== job);
		} else if (--job.batch.live === 0) {
			job.batch.controller.abort(reason);
		}
	}
}

/**
 * Run `action` once for `job`.
 * @param {Job} job
 * @param {() => void} action
 */
function settle(job, action) {
	if (!job.settled) {
		job.settled = true;
		action();
	}
}
