// Merging byte ranges into few requests, under the policy the Python reader uses for
// plain HTTP (xarray_hurray/io/plan.py and io/costs.py, PLAIN_HTTP): ranges taken in
// order of their start join the current request across gaps of up to `maxGap` bytes
// while it spans at most `maxRequest`; overlapping ranges always share one.  A read
// needing more than `inFlight` requests is grouped again across `crowdedGap`, as a
// request saved then also saves a share of a round trip.

/**
 * @typedef {object} MergePolicy
 * @property {number} maxGap largest gap read through to save a request
 * @property {number} maxRequest largest request built by merging
 * @property {number} inFlight requests sent at once
 * @property {number} crowdedGap largest gap read through when a read needs more requests than inFlight
 */

/**
 * The Python reader's policy for plain HTTP: 20 ms to the first byte, 100 MB/s,
 * 32 requests in flight and 0.5 ms of work per request.
 * @type {MergePolicy}
 */
export const PLAIN_HTTP = Object.freeze({
	maxGap: 50_000,
	maxRequest: 64_000_000,
	inFlight: 32,
	crowdedGap: 112_500,
});

/**
 * @typedef {object} ReadPlan
 * @property {[number, number][]} requests `[start, stop)` byte ranges, sorted and disjoint
 * @property {number[]} requestOf for each range asked for, the request that holds it
 */

/**
 * Group the byte ranges `[starts[i], stops[i])` into requests under `policy`.
 * @param {number[]} starts
 * @param {number[]} stops
 * @param {MergePolicy} policy
 * @returns {ReadPlan}
 */
export function planReads(starts, stops, policy) {
	if (starts.length === 1) {
		return { requests: [[starts[0], stops[0]]], requestOf: [0] };
	}
	let plan = groupRuns(starts, stops, policy.maxGap, policy.maxRequest);
	if (plan.requests.length > policy.inFlight && policy.crowdedGap > policy.maxGap) {
		plan = groupRuns(starts, stops, policy.crowdedGap, policy.maxRequest);
	}
	return plan;
}

/**
 * @param {number[]} starts
 * @param {number[]} stops
 * @param {number} maxGap
 * @param {number} maxRequest
 * @returns {ReadPlan}
 */
function groupRuns(starts, stops, maxGap, maxRequest) {
	const order = starts.map((_, i) => i).sort((a, b) => starts[a] - starts[b] || a - b);
	/** @type {[number, number][]} */
	const requests = [];
	const requestOf = new Array(starts.length);
	let groupStart = 0;
	let reach = -1;
	for (const i of order) {
		const start = starts[i];
		const stop = stops[i];
		const overlaps = requests.length > 0 && start < reach;
		const joins =
			requests.length > 0 &&
			(overlaps || (start - reach <= maxGap && Math.max(reach, stop) - groupStart <= maxRequest));
		if (!joins) {
			requests.push([start, stop]);
			groupStart = start;
			reach = stop;
		} else {
			reach = Math.max(reach, stop);
			requests[requests.length - 1][1] = reach;
		}
		requestOf[i] = requests.length - 1;
	}
	return { requests, requestOf };
}
