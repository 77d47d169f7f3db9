// The structure fuzzer's mutants (fixtures.py, mutants; tests/differential.py): each
// is refused by this reader where the Python reader refuses it, and read to the same
// values where it reads it, variable by variable.  The long runs are
// tools/fuzz_differential.py.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { outcomeOf } from "../tools/outcomes.js";
import { fixtures } from "./helpers.js";

const { dir } = fixtures();
const mutants = JSON.parse(fs.readFileSync(path.join(dir, "mutants.json"), "utf8"));

/**
 * Whether the outcome `mine` of a file or variable agrees with the Python reader's:
 * the same, or refused here as unsupported (documented) where Python reads it.
 * @param {string} python
 * @param {string} mine
 */
function agrees(python, mine) {
	return !python.startsWith("error:") && (mine === python || mine === "unsupported");
}

for (const { file, kind, python } of mutants) {
	test(`mutant ${file} (${kind}) reads as in Python`, async () => {
		const mine = await outcomeOf(new Uint8Array(fs.readFileSync(path.join(dir, "mutants", file))));
		assert.ok(agrees(python.open, mine.open), `open: Python ${python.open}, here ${mine.open}`);
		if (mine.open !== "ok") return;
		assert.deepEqual(
			mine.variables.map(([p]) => p),
			python.variables.map(([p]) => p),
		);
		mine.variables.forEach(([p, outcome], k) => {
			assert.ok(agrees(python.variables[k][1], outcome), `variable ${p}: Python ${python.variables[k][1]}, here ${outcome}`);
		});
	});
}

test("the mutants are both read and refused", () => {
	const opened = mutants.filter((m) => m.python.open === "ok").length;
	assert.ok(opened > 20 && opened < mutants.length, `${opened} of ${mutants.length} open`);
});
