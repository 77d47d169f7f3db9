// Tiles of a pyramid over HTTP from Node.js, through three readers of the same field:
// this package on the Hurray file, zarrita on `hurray refs` references to it, and
// geotiff.js on a Cloud-Optimized GeoTIFF.  For each: a fresh open and one tile at
// every level, then a pan of 16 tiles (4 x 4) of level 0, each step timed and its
// requests counted (every fetch the reader makes, and the waves of them: a request
// sent more than half a latency after the first of its wave starts a new one).
// Run by benchmarks/js_tiles.py, which serves the files with latency and passes
// the settings as JSON: {hurray, refs, cog, levels: [[ny, nx], ...], tile, latency, runs}.
// `--browser` instead times the viewer page to its first drawn view in headless
// Chromium: {page, browser, latency}.

import { ReferenceStore } from "@zarrita/storage";
import { fromUrl } from "geotiff";
import * as zarr from "zarrita";

import { openHurray } from "../src/hurray.js";

const settings = JSON.parse(process.argv[process.argv.length - 1]);

/** Every request a reader sends: when, and which bytes. */
const sent = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
	sent.push({ at: performance.now(), range: new Headers(init?.headers ?? (input instanceof Request ? input.headers : {})).get("Range") });
	return realFetch(input, init);
};

/**
 * Time `step` and count the requests it sends.
 * @param {() => Promise<unknown>} step
 */
async function measure(step) {
	const first = sent.length;
	const start = performance.now();
	await step();
	const seconds = (performance.now() - start) / 1000;
	const mine = sent.slice(first);
	let waves = 0;
	let waveStart = Number.NEGATIVE_INFINITY;
	for (const request of mine) {
		if (request.at - waveStart > (settings.latency * 1000) / 2) {
			waves++;
			waveStart = request.at;
		}
	}
	return { seconds, requests: mine.length, waves };
}

/** The tile at the centre of a level of `ny` by `nx` cells: [row, col] of the tile grid. */
function centreTile([ny, nx]) {
	return [Math.floor((ny - 1) / settings.tile / 2), Math.floor((nx - 1) / settings.tile / 2)];
}

/** [[y0, y1], [x0, x1]] of tiles rows r0..r0+nr, cols c0..c0+nc of a level. */
function box([ny, nx], r, c, nr = 1, nc = 1) {
	const t = settings.tile;
	return [
		[r * t, Math.min((r + nr) * t, ny)],
		[c * t, Math.min((c + nc) * t, nx)],
	];
}

/** The pan: 16 tiles of level 0 around its centre. */
function pan() {
	const [r, c] = centreTile(settings.levels[0]);
	return box(settings.levels[0], r - 2, c - 2, 4, 4);
}

const readers = {
	async hurray() {
		const open = [];
		for (let k = 0; k < settings.levels.length; k++) {
			open.push(
				await measure(async () => {
					const file = await openHurray(settings.hurray);
					const [r, c] = centreTile(settings.levels[k]);
					await file.read(`${k}/t`, box(settings.levels[k], r, c));
				}),
			);
		}
		const file = await openHurray(settings.hurray);
		const [[y0, y1], [x0, x1]] = pan();
		const boxes = [];
		for (let y = y0; y < y1; y += settings.tile) {
			for (let x = x0; x < x1; x += settings.tile) {
				boxes.push([[y, y + settings.tile], [x, x + settings.tile]]);
			}
		}
		return { open, pan: await measure(() => file.readMany("0/t", boxes)) };
	},

	async zarrita() {
		const openRefs = async () => {
			const refs = await (await fetch(settings.refs)).json();
			return zarr.root(ReferenceStore.fromSpec(refs));
		};
		const open = [];
		for (let k = 0; k < settings.levels.length; k++) {
			open.push(
				await measure(async () => {
					const array = await zarr.open.v3((await openRefs()).resolve(`${k}/t`), { kind: "array" });
					const [r, c] = centreTile(settings.levels[k]);
					await zarr.get(array, box(settings.levels[k], r, c).map(([a, b]) => zarr.slice(a, b)));
				}),
			);
		}
		const array = await zarr.open.v3((await openRefs()).resolve("0/t"), { kind: "array" });
		return { open, pan: await measure(() => zarr.get(array, pan().map(([a, b]) => zarr.slice(a, b)))) };
	},

	async geotiff() {
		const open = [];
		for (let k = 0; k < settings.levels.length; k++) {
			open.push(
				await measure(async () => {
					const tiff = await fromUrl(settings.cog);
					const image = await tiff.getImage(k);
					const [[y0, y1], [x0, x1]] = box(settings.levels[k], ...centreTile(settings.levels[k]));
					await image.readRasters({ window: [x0, y0, x1, y1] });
				}),
			);
		}
		const image = await (await fromUrl(settings.cog)).getImage(0);
		const [[y0, y1], [x0, x1]] = pan();
		return { open, pan: await measure(() => image.readRasters({ window: [x0, y0, x1, y1] })) };
	},
};

async function browser() {
	const { chromium } = await import("playwright-core");
	const os = await import("node:os");
	const fs = await import("node:fs");
	const path = await import("node:path");
	const profile = fs.mkdtempSync(path.join(os.tmpdir(), "hurray-bench-"));
	const context = await chromium.launchPersistentContext(profile, {
		executablePath: settings.browser,
		headless: true,
		args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
		viewport: { width: 1024, height: 768 },
	});
	try {
		const runs = [];
		for (let k = 0; k < settings.runs; k++) {
			const page = await context.newPage();
			await page.goto(settings.page);
			await page.waitForSelector("html[data-state=ready]", { timeout: 60_000 });
			const [ready, data, firstData] = await page.evaluate(() => {
				const entries = performance.getEntriesByType("resource").filter((e) => e.name.includes("/data/"));
				return [Number(document.documentElement.dataset.readyMs), entries.length, Math.min(...entries.map((e) => e.startTime))];
			});
			runs.push({ seconds: ready / 1000, fileSeconds: (ready - firstData) / 1000, dataRequests: data, level: await page.getAttribute("html", "data-level") });
			await page.close();
		}
		return runs;
	} finally {
		await context.close();
		fs.rmSync(profile, { recursive: true, force: true });
	}
}

if (process.argv.includes("--browser")) {
	console.log(JSON.stringify(await browser()));
} else {
	// each reader `runs` times in turn; each step's fastest run (the first run of a
	// process also pays for its connections and for compiling the decoder's code)
	const out = {};
	for (let k = 0; k < (settings.runs ?? 1); k++) {
		for (const [name, run] of Object.entries(readers)) {
			const result = await run();
			const best = out[name];
			if (best === undefined) {
				out[name] = result;
			} else {
				result.open.forEach((step, j) => {
					best.open[j].seconds = Math.min(best.open[j].seconds, step.seconds);
				});
				best.pan.seconds = Math.min(best.pan.seconds, result.pan.seconds);
			}
		}
	}
	console.log(JSON.stringify(out));
}
