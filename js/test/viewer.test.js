// The viewer page in headless Chromium (Debian's chromium package, driven through
// playwright-core), served by `hurray view` (the local Range server):
// - a pyramid without a CRS, placed by its coordinates (y grows up, x here to the
//   left), at the level the zoom calls for and a finer one zoomed in;
// - the global field of fixtures.py (latitudes stored south to north, longitudes
//   0 to 360) north up, each pixel the colour of its cell's value as numpy has it,
//   the NaN box transparent; another day from its selector, kept in the URL with the
//   view, and the same page again from that URL; the colour bar's title, the cursor,
//   the metadata panel;
// - a screenshot under a virtual time budget (the page's clock runs ahead of the
//   network) drawn whole, the reader's timeouts counting real time.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";

import { chromium } from "playwright-core";

import { fixtures, PYTHON } from "./helpers.js";

/** The browser: $CHROMIUM, else Debian's. */
const BROWSER = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** Flags for a quiet headless browser that asks nothing of the network. */
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

/** The page's background, where nothing is drawn. */
const BACKGROUND = [216, 216, 216];

const servers = [];
let context;
let profile;

/**
 * Start `hurray view FILE --no-open`; resolves to the process and the URL it prints.
 * @param {string} file
 * @returns {Promise<{child: import("node:child_process").ChildProcess, url: string}>}
 */
function startView(file) {
	const child = spawn(PYTHON, ["-m", "xarray_hurray", "view", file, "--no-open", "--port", "0"], {
		stdio: ["ignore", "pipe", "inherit"],
	});
	servers.push(child);
	return new Promise((resolve, reject) => {
		let out = "";
		child.stdout.on("data", (chunk) => {
			out += chunk;
			const url = /http:\/\/\S+/.exec(out);
			if (url) resolve({ child, url: url[0] });
		});
		child.on("exit", (code) => reject(new Error(`hurray view exited with ${code}: ${out}`)));
	});
}

before(async () => {
	profile = fs.mkdtempSync(path.join(os.tmpdir(), "hurray-chromium-"));
	context = await chromium.launchPersistentContext(profile, {
		executablePath: BROWSER,
		headless: true,
		args: FLAGS,
		viewport: { width: 512, height: 512 },
	});
});

after(async () => {
	await context?.close();
	servers.forEach((child) => child.kill());
	if (profile) fs.rmSync(profile, { recursive: true, force: true });
});

/**
 * The page, once it has drawn its first view whole (no error thrown on it meanwhile).
 * @param {string} url
 */
async function openPage(url) {
	const page = await context.newPage();
	const problems = [];
	page.on("pageerror", (error) => problems.push(error.message));
	await page.goto(url);
	await page.waitForSelector("html[data-state=ready], html[data-state=error]", { timeout: 30_000 });
	assert.equal(await page.getAttribute("html", "data-error"), null);
	assert.deepEqual(problems, []);
	return page;
}

/**
 * The RGB colour the map canvas holds at each of `points`.
 * @param {import("playwright-core").Page} page
 * @param {[number, number][]} points
 */
function colours(page, points) {
	return page.evaluate((points) => {
		const canvas = document.getElementById("map");
		const g = canvas.getContext("2d");
		return points.map(([x, y]) => {
			const [r, gr, b, a] = g.getImageData(x, y, 1, 1).data;
			return a === 0 ? [216, 216, 216] : [r, gr, b];
		});
	}, points);
}

// gray over the range [0, 3]: the values 0, 1, 2, 3 at 0, 85, 170, 255
const GRAY = [0, 85, 170, 255].map((v) => [v, v, v]);

test("a pyramid without a CRS: placed by its coordinates, at the level the zoom calls for, a finer one zoomed in", async () => {
	const { dir } = fixtures();
	const server = await startView(path.join(dir, "quadrants.hurray"));
	const page = await openPage(`${server.url}&colormap=gray`);
	// 2048 cells on 512 pixels: 4 cells a pixel, level 2 (factor 4)
	assert.equal(await page.getAttribute("html", "data-level"), "2");
	// y = 10 row grows up, x = -column grows to the left: the array's rows < 1024 and
	// columns < 1024 (value 0) at the bottom right, 3 at the top left
	const corners = [
		[128, 128],
		[384, 128],
		[128, 384],
		[384, 384],
	];
	assert.deepEqual(await colours(page, corners), [GRAY[3], GRAY[2], GRAY[1], GRAY[0]]);
	assert.equal(await page.textContent("#min"), "0");
	assert.equal(await page.textContent("#max"), "3");
	// twice closer, around the centre (the wheel): two cells a pixel, level 1
	await page.mouse.move(256, 256);
	await page.mouse.wheel(0, -Math.log(2) / 0.002);
	await page.waitForSelector("html[data-level='1']", { timeout: 30_000 });
	assert.deepEqual(await colours(page, corners), [GRAY[3], GRAY[2], GRAY[1], GRAY[0]]);
	// twice closer again (the button): a cell a pixel, level 0
	await page.click("#zoom-in");
	await page.waitForSelector("html[data-level='0']", { timeout: 30_000 });
	// under the cursor, a cell up and to the left of the centre: the coordinates of its
	// corner region (y = 10 row, x = -column) and the value
	await page.mouse.move(250, 250);
	assert.match(await page.textContent("#cursor"), /^y = 102[3-9]\d(\.\d+)?, x = -102\d(\.\d+)?: 3 \(level 0\)$/);
	await page.close();
});

test("the global field: north up, the colours of numpy's values, NaN transparent; another day kept in the URL", async () => {
	const { dir } = fixtures();
	const map = JSON.parse(fs.readFileSync(path.join(dir, "map.json"), "utf8")).global;
	const bytes = fs.readFileSync(path.join(dir, map.levels[0].bin));
	const values = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
	const [, rows, cols] = map.levels[0].shape;
	const server = await startView(path.join(dir, map.file));
	// 0.05 degrees a pixel (5 pixels a cell, level 0) around the NaN box (10-20 N, 140-160 E)
	const [cx, cy, res] = [150, 15, 0.05];
	const page = await openPage(`${server.url}&colormap=gray&min=-40&max=80&view=${cx},${cy},${res}`);
	assert.equal(await page.getAttribute("html", "data-level"), "0");
	/** Cell centres in the view, their pixels, and the colour of each on day `time`. */
	const cells = (time) => {
		const out = [];
		for (let r = 384; r < 456; r += 6) {
			for (let c = 562; c < 638; c += 8) {
				const [lon, lat] = [map.west + (c + 0.5) * map.cell, map.south + (r + 0.5) * map.cell];
				const v = values[time * rows * cols + r * cols + c];
				const g = Math.min(255, Math.max(0, Math.round(((v - -40) * 255) / 120)));
				out.push({ pixel: [Math.floor(256 + (lon - cx) / res), Math.floor(256 - (lat - cy) / res)], want: Number.isNaN(v) ? BACKGROUND : [g, g, g] });
			}
		}
		return out;
	};
	const day0 = cells(0);
	assert.ok(day0.some(({ want }) => want === BACKGROUND) && day0.some(({ want }) => want !== BACKGROUND));
	assert.deepEqual(await colours(page, day0.map((c) => c.pixel)), day0.map((c) => c.want));
	// north up: the field grows to the north (lat / 3), and so does the gray up the page
	const [[top], [bottom]] = await colours(page, [
		[20, 40],
		[20, 470],
	]);
	assert.ok(top > bottom + 10, `gray ${top} at the top, ${bottom} at the bottom`);
	assert.equal(await page.textContent("#title"), "test field (K)");
	assert.deepEqual(
		await page.$$eval("#dim-time option", (options) => options.map((o) => o.textContent)),
		["2024-01-01", "2024-01-02", "2024-01-03"],
	);
	// another day: the pixels are that day's
	await page.selectOption("#dim-time", "2");
	const day2 = cells(2);
	await page.waitForFunction((want) => {
		const g = document.getElementById("map").getContext("2d");
		const [x, y] = want.pixel;
		return g.getImageData(x, y, 1, 1).data[0] === want.want[0];
	}, day2.find(({ want }) => want !== BACKGROUND));
	assert.deepEqual(await colours(page, day2.map((c) => c.pixel)), day2.map((c) => c.want));
	// the cursor: the place and the value, with its units
	const [lon, lat] = [map.west + 600.5 * map.cell, map.south + 380.5 * map.cell];
	await page.mouse.move(256 + (lon - cx) / res, 256 - (lat - cy) / res);
	const v = values[2 * rows * cols + 380 * cols + 600];
	assert.match(await page.textContent("#cursor"), new RegExp(`^5\\.1\\d*°N, 150\\.1\\d*°E: ${Number(v.toPrecision(6))} K \\(level 0\\)$`));
	// the metadata: the CRS, the variable's attributes and the file's
	await page.click("#show-metadata");
	const panel = await page.textContent("#metadata");
	assert.match(panel, /CRSEPSG:4326/);
	assert.match(panel, /long_nametest field/);
	assert.match(panel, /multiscales/);
	// the state in the URL (kept once it has stayed a moment): the same page from it
	await page.waitForFunction(() => location.search.includes("select=time%3A2"));
	const again = await openPage(page.url());
	assert.equal(await again.inputValue("#dim-time"), "2");
	assert.deepEqual(await colours(again, day2.map((c) => c.pixel)), day2.map((c) => c.want));
	await again.close();
	await page.close();
});

test("a screenshot under a virtual time budget shows the view drawn (the reader's timeouts count real time)", async () => {
	const { dir } = fixtures();
	const server = await startView(path.join(dir, "map_global.hurray"));
	const out = fs.mkdtempSync(path.join(os.tmpdir(), "hurray-shot-"));
	try {
		const dom = await new Promise((resolve, reject) =>
			execFile(
				BROWSER,
				[...FLAGS, `--user-data-dir=${out}`, "--virtual-time-budget=60000", "--window-size=900,600", "--dump-dom", server.url],
				{ timeout: 60_000 },
				(error, stdout) => (error ? reject(error) : resolve(stdout)),
			),
		);
		assert.match(dom, /<html[^>]* data-state="ready"/);
	} finally {
		fs.rmSync(out, { recursive: true, force: true });
	}
});
