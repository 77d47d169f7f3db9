// The viewer page in headless Chromium (Debian's chromium package, driven through
// playwright-core), served by `hurray view` (the local Range server): it loads a
// pyramid, reaches data-state=ready at the level the zoom calls for, draws the
// colours the values and the colormap give at known pixels, and zooming in switches
// to a finer level.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";

import { chromium } from "playwright-core";

import { fixtures, PYTHON } from "./helpers.js";

/** The browser: $CHROMIUM, else Debian's. */
const BROWSER = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** Flags for a quiet headless browser that asks nothing of the network. */
export const BROWSER_FLAGS = [
	"--headless",
	"--no-sandbox",
	"--disable-gpu",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	"--no-first-run",
];

let server;
let context;
let pageUrl;
let profile;

/**
 * Start `hurray view FILE --no-open`; resolves to the process and the URL it prints.
 * @param {string} file
 */
export function startView(file) {
	const child = spawn(PYTHON, ["-m", "xarray_hurray", "view", file, "--no-open", "--port", "0"], {
		stdio: ["ignore", "pipe", "inherit"],
	});
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

/**
 * A headless Chromium with a fresh profile.
 * @returns {Promise<{context: import("playwright-core").BrowserContext, profile: string}>}
 */
export async function launchBrowser() {
	const profile = fs.mkdtempSync(path.join(os.tmpdir(), "hurray-chromium-"));
	const context = await chromium.launchPersistentContext(profile, {
		executablePath: BROWSER,
		headless: true,
		args: BROWSER_FLAGS,
		viewport: { width: 512, height: 512 },
	});
	return { context, profile };
}

before(async () => {
	const { dir } = fixtures();
	server = await startView(path.join(dir, "quadrants.hurray"));
	pageUrl = `${server.url}&colormap=gray`;
	({ context, profile } = await launchBrowser());
});

after(async () => {
	await context?.close();
	server?.child.kill();
	if (profile) fs.rmSync(profile, { recursive: true, force: true });
});

/**
 * The RGB colour the map canvas holds at each of `points`.
 * @param {import("playwright-core").Page} page
 * @param {[number, number][]} points
 */
function colours(page, points) {
	return page.evaluate((points) => {
		const canvas = document.getElementById("map");
		const g = canvas.getContext("2d");
		return points.map(([x, y]) => Array.from(g.getImageData(x, y, 1, 1).data.slice(0, 3)));
	}, points);
}

// gray over the range [0, 3]: the values 0, 1, 2, 3 at 0, 85, 170, 255
const GRAY = [0, 85, 170, 255].map((v) => [v, v, v]);

test("the viewer draws the pyramid at the level the zoom calls for, and a finer one when zoomed in", async () => {
	const page = await context.newPage();
	const problems = [];
	page.on("pageerror", (error) => problems.push(error.message));
	await page.goto(pageUrl);
	await page.waitForSelector("html[data-state=ready]", { timeout: 30_000 });
	assert.deepEqual(problems, []);
	// 2048 cells on 512 pixels: 4 cells a pixel, level 2 (factor 4)
	assert.equal(await page.getAttribute("html", "data-level"), "2");
	assert.deepEqual(await colours(page, [[128, 128], [384, 128], [128, 384], [384, 384]]), GRAY);
	assert.equal(await page.textContent("#min"), "0");
	assert.equal(await page.textContent("#max"), "3");
	// twice closer, around the centre (the wheel): two cells a pixel, level 1
	await page.mouse.move(256, 256);
	await page.mouse.wheel(0, -Math.log(2) / 0.002);
	await page.waitForSelector("html[data-level='1']", { timeout: 30_000 });
	assert.deepEqual(await colours(page, [[100, 100], [400, 100], [100, 400], [400, 400]]), GRAY);
	// twice closer again (the button): a cell a pixel, level 0
	await page.click("#zoom-in");
	await page.waitForSelector("html[data-level='0']", { timeout: 30_000 });
	assert.deepEqual(await colours(page, [[100, 100], [400, 100], [100, 400], [400, 400]]), GRAY);
	// under the cursor: the coordinates (y = 10 row, x = -column) and the value; the
	// pointer lies on a cell's edge, which the wheel's rounding may put either side of
	await page.mouse.move(400, 100);
	assert.match(await page.textContent("#cursor"), /^y = 86[78]0, x = -116[78]: 1 \(level 0\)$/);
	assert.deepEqual(problems, []);
});
