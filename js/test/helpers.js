// What the tests share: the files the Python writer makes for this run (made once,
// by fixtures.py, into a temporary folder) and a local HTTP server of Range requests
// that counts what it answers.

import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/** The Python interpreter that writes the fixtures: $PYTHON, else python3. */
export const PYTHON = process.env.PYTHON ?? "python3";

let made = null;

/**
 * The folder of this run's fixtures and its manifest: $HURRAY_JS_FIXTURES where set
 * (made there before the run: `python test/fixtures.py DIR`, so that the test files,
 * each run in a process of its own, share one), else made at the first call.
 * @returns {{dir: string, manifest: any}}
 */
export function fixtures() {
	const given = process.env.HURRAY_JS_FIXTURES;
	if (made === null && given) {
		made = { dir: given, manifest: JSON.parse(fs.readFileSync(path.join(given, "manifest.json"), "utf8")) };
	}
	if (made === null) {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), "hurray-js-"));
		execFileSync(PYTHON, [path.join(here, "fixtures.py"), dir], { stdio: ["ignore", "ignore", "inherit"] });
		process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
		made = { dir, manifest: JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")) };
	}
	return made;
}

/**
 * What the server does with a request for bytes [start, stop) of file `name` (the
 * `count`-th Range request it gets, from 0): answer `status` with no body instead,
 * wait `delay` milliseconds first, and send `headers` with the answer.
 * @typedef {(request: {name: string, start: number, stop: number, count: number}) =>
 *   {status?: number, delay?: number, headers?: Record<string, string>} | undefined} Intercept
 */

/**
 * Serve the files of `dir` on 127.0.0.1 with single Range requests, counting them;
 * `server.intercept`, when set, chooses what an answer is (see Intercept).  A file
 * is read again for every request: a test may replace it.
 * @param {string} dir
 * @returns {Promise<{url: (name: string) => string, log: {start: number, stop: number}[], intercept: Intercept | null, close: () => Promise<void>}>}
 */
export async function rangeServer(dir) {
	const log = [];
	const served = {
		url: (name) => `http://127.0.0.1:${port}/${name}`,
		log,
		/** @type {Intercept | null} */
		intercept: null,
		close: () => new Promise((resolve) => server.close(resolve)),
	};
	const server = http.createServer(async (request, response) => {
		const name = decodeURIComponent(new URL(request.url, "http://x").pathname).slice(1);
		const file = path.join(dir, name);
		if (!file.startsWith(dir) || !fs.existsSync(file)) {
			response.writeHead(404).end();
			return;
		}
		const data = fs.readFileSync(file);
		const match = /^bytes=(\d+)-(\d+)$/.exec(request.headers.range ?? "");
		if (match === null) {
			response.writeHead(200, { "Content-Length": data.length }).end(data);
			return;
		}
		const start = Number(match[1]);
		const stop = Math.min(Number(match[2]) + 1, data.length);
		const chosen = served.intercept?.({ name, start, stop, count: log.length }) ?? {};
		log.push({ start, stop });
		if (chosen.delay) {
			await new Promise((resolve) => setTimeout(resolve, chosen.delay));
		}
		if (chosen.status) {
			response.writeHead(chosen.status).end();
			return;
		}
		if (start >= data.length) {
			response.writeHead(416, { "Content-Range": `bytes */${data.length}` }).end();
			return;
		}
		response
			.writeHead(206, {
				"Content-Range": `bytes ${start}-${stop - 1}/${data.length}`,
				"Content-Length": stop - start,
				...chosen.headers,
			})
			.end(data.subarray(start, stop));
	});
	await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address();
	return served;
}
