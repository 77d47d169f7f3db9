"""Longer fuzzing of the Hurray reader than the test suite runs.

Every input is opened and read completely, once as it is and once with its checksums
resealed (so that damage reaches the checks behind them); anything but a
``HurrayFormatError`` is a finding and stops the run with its traceback.

With atheris installed (coverage-guided, seeded with a small valid file)::

    python tools/fuzz_atheris.py -atheris_runs=200000

Without it, or with ``--random N``, a seeded random mutator (the one the tests use)
runs ``N`` inputs and prints a summary::

    python tools/fuzz_atheris.py --random 100000 --seed 1
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def check(blob: bytes) -> str:
    """``"ok"`` or ``"rejected"``; any other exception propagates."""
    from fuzz_cases import read_everything

    from xarray_hurray import HurrayFormatError

    try:
        read_everything(blob)
    except HurrayFormatError:
        return "rejected"
    return "ok"


def one_input(data: bytes) -> None:
    """The atheris target: the raw input and its resealed twin."""
    from fuzz_cases import reseal

    check(data)
    check(reseal(data))


def run_random(count: int, seed: int) -> None:
    """Read ``count`` randomly damaged copies of a small valid file; print the tally."""
    from fuzz_cases import mutate, small_file

    good = small_file(Path(tempfile.mkdtemp()))
    rng = random.Random(seed)
    tally: collections.Counter[str] = collections.Counter()
    start = time.perf_counter()
    for _ in range(count):
        kind, blob = mutate(good, rng)
        tally[f"{kind}: {check(blob)}"] += 1
    elapsed = time.perf_counter() - start
    print(f"{count} inputs in {elapsed:.1f} s, only HurrayFormatError or success:")
    for key, value in sorted(tally.items()):
        print(f"  {value:8d}  {key}")


def run_atheris(argv: list[str]) -> None:
    """Coverage-guided fuzzing from a corpus holding one small valid file."""
    import atheris

    with atheris.instrument_imports(include=["xarray_hurray"]):
        from fuzz_cases import small_file

    corpus = Path(tempfile.mkdtemp())
    (corpus / "small.hurray").write_bytes(small_file(corpus))
    atheris.Setup([sys.argv[0], *argv, str(corpus)], one_input)
    atheris.Fuzz()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--random", type=int, metavar="N", help="run N random mutations")
    parser.add_argument("--seed", type=int, default=0)
    args, rest = parser.parse_known_args()
    if args.random is None:
        try:
            run_atheris(rest)
            return
        except ImportError:
            print("atheris is not installed: running 10000 random mutations instead")
            args.random = 10000
    run_random(args.random, args.seed)


if __name__ == "__main__":
    main()
