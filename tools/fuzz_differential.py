"""The two readers on the same mutants, with counts.

Mutants of the structure fuzzer's seed files (the tree and the file with overviews;
``tests/fuzz_structure.py``) are read whole, variable by variable, by the
Python reader (``ContainerReader``) and by the JavaScript reader in ``js/`` (one
Node.js process for all of them, ``js/tools/outcomes.js``), and their outcomes
compared (``tests/differential.py``): a file one reader refuses and the other
reads, or reads to other values, is a disagreement.  The JavaScript reader refusing
as unsupported what Python reads (a Blosc frame of blosclz, sizes past 2**53, both
documented) is counted apart::

    python tools/fuzz_differential.py --per-seed 1000 --seed 1

prints the mutants tried per seed file, how many both readers opened, read and
refused, the unsupported, and every disagreement with the mutant's name (its seed
file, run seed and number) and kind of change; ``--keep DIR`` keeps the files.  Exit
status 1 when any disagreement is found.  Needs ``node`` (Node.js 20) on PATH.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

BATCH = 500
"""Mutants read by one Node.js process."""


def run(per_seed: int, seed: int, keep: Path | None) -> int:
    """Read ``per_seed`` mutants of each seed file from ``seed`` with both readers;
    print the counts; return the number of disagreements."""
    from differential import corpus, disagreement, js_outcomes, python_outcome

    warnings.simplefilter("ignore")
    work = keep or Path(tempfile.mkdtemp(prefix="hurray-differential-"))
    work.mkdir(parents=True, exist_ok=True)
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    found = []
    start = time.perf_counter()
    batch: list[tuple[str, str, Path, dict]] = []

    def compare() -> None:
        outcomes = js_outcomes([path for _, _, path, _ in batch])
        for (name, kind, path, python), js in zip(batch, outcomes, strict=True):
            group = counts[name.rsplit("-", 2)[0]]
            group["tried"] += 1
            why = disagreement(python, js)
            if why is not None:
                group["disagree"] += 1
                found.append(f"{name} ({kind}): {why}")
                continue
            states = [python["open"]] + [outcome for _, outcome in python["variables"]]
            group["opened" if python["open"] == "ok" else "refused at open"] += 1
            if python["open"] == "ok":
                refused = any(s == "refused" for s in states[1:])
                group["a variable refused" if refused else "every variable read"] += 1
            mine = [js["open"]] + [outcome for _, outcome in js["variables"]]
            group["unsupported in JavaScript"] += "unsupported" in mine
            if keep is None:
                path.unlink()
        batch.clear()

    for mutant in corpus(per_seed, seed):
        path = work / f"{mutant.name}.hurray"
        path.write_bytes(mutant.blob)
        batch.append((mutant.name, mutant.kind, path, python_outcome(mutant.blob)))
        if len(batch) == BATCH:
            compare()
    if batch:
        compare()
    elapsed = time.perf_counter() - start
    tried = sum(c["tried"] for c in counts.values())
    print(f"{tried} mutants from seed {seed} in {elapsed:.0f} s")
    for name, group in counts.items():
        print(f"  {name}: {dict(group)}")
    held = tried - len(found)
    print(f"held: {held} of {tried}; disagreements: {len(found)}")
    for line in found:
        print(f"DISAGREE {line}")
    return len(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-seed", type=int, default=1000, help="mutants of each seed file")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="keep the mutants in this folder")
    args = parser.parse_args()
    return 1 if run(args.per_seed, args.seed, args.keep) else 0


if __name__ == "__main__":
    sys.exit(main())
