"""Structure-aware fuzzing of Hurray files, with figures.

Each input is a valid seed file with one parsed field changed (a metadata value or
its type, a field of either header slot, a root, page table or index entry, a page's
length or a bit of its bitmap, the bytes of a chunk, the names of groups and
variables, the layout of pages and slots) and every checksum recomputed, bound to
the place of its part, so that the change reaches the checks behind the checksums;
or valid chunks put in another place with the checksums of the places they came
from, which a reader must refuse.  Each input is
read whole and in part by the container reader (with and without chunk checksums),
checked by ``verify_file`` and by ``hurray verify``, opened and loaded by xarray, and,
when xarray could load it, written again.  The mutations and the classes of outcome
are in ``tests/fuzz_structure.py``::

    python tools/fuzz_structure.py --inputs 3000 --seed 1
    python tools/fuzz_structure.py --inputs 3000 --seed 1 --file pyramid

prints, per run: inputs, outcomes by class (overall and per step), the kinds of
change, peak RSS growth and the input that grew it most, the slowest input in
seconds and in seconds per MiB (inputs under 1 MiB counted as 1 MiB) with its CPU
time, and the most CPU time one input took.  Exit status 1
when any input is a finding (a wrong value or an exception the documentation does not
list), each printed with its seed and index so that it can be replayed::

    python tools/fuzz_structure.py --replay 1:1234 [--file pyramid]

``--bombs`` runs the hostile files of issue 18 instead, each in a fresh process, and
prints the time and peak RSS growth of reading (and verifying) each.
"""

from __future__ import annotations

import argparse
import collections
import random
import re
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

MIB = 2**20


def _status(field: str) -> int:
    """A memory figure of this process from /proc/self/status (Linux), in bytes."""
    match = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    if match is None:
        raise OSError(f"no {field} in /proc/self/status")
    return int(match[1]) * 1024


def _peak_rss() -> int:
    """Peak resident set size of this process since :func:`_start_peak`, in bytes."""
    try:
        return _status("VmHWM")
    except OSError:  # not Linux: the peak of the whole process (macOS counts bytes)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def _start_peak() -> int:
    """Measure the peak RSS afresh from now where Linux allows it (the high-water mark
    set to the current RSS, so that an earlier, higher peak hides nothing); the RSS to
    measure growth from, in bytes.  Elsewhere the peak so far."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status("VmRSS")
    except OSError:
        return _peak_rss()


def run(inputs: int, seed: int, replay: int | None = None, name: str = "tree") -> int:
    """Run ``inputs`` mutants of the seed file ``name`` (the tree, or the file with
    overviews, ``"pyramid"``) from ``seed`` (or only input ``replay``); print the
    figures; return the number of findings."""
    from fuzz_structure import mutant, overall, run_input, seed_file, truth_of, work_directory

    warnings.simplefilter("ignore")
    work = work_directory()
    good = seed_file(name)
    truth = truth_of(good)
    pyramid = name == "pyramid"
    run_input(good, "preserving", truth, work, pyramid)  # warm up imports and caches
    rng = random.Random(seed)
    classes: collections.Counter[str] = collections.Counter()
    steps: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    kinds: collections.Counter[str] = collections.Counter()
    findings = []
    baseline = run_peak = _start_peak()
    grew, grew_at = 0, -1
    slowest, slowest_at, slowest_per_mib, slowest_cpu = 0.0, -1, 0.0, 0.0
    busiest, busiest_at = 0.0, -1  # CPU time: wall time on a shared machine waits too
    start = time.perf_counter()
    for number in range(inputs):
        kind, blob = mutant(good, rng)
        if replay is not None and number != replay:
            continue
        before = _start_peak()
        began, cpu = time.perf_counter(), time.process_time()
        outcome = run_input(blob, kind, truth, work, pyramid)
        took, cpu = time.perf_counter() - began, time.process_time() - cpu
        peak = _peak_rss()
        run_peak = max(run_peak, peak)
        if peak - before > grew:
            grew, grew_at = peak - before, number
        per_mib = took / max(len(blob) / MIB, 1.0)
        if per_mib > slowest_per_mib:
            slowest, slowest_at, slowest_per_mib, slowest_cpu = took, number, per_mib, cpu
        if cpu > busiest:
            busiest, busiest_at = cpu, number
        verdict = overall(outcome)
        classes[verdict] += 1
        kinds[kind] += 1
        for step, result in outcome.items():
            steps[step][result] += 1
        if verdict not in ("ok", "rejected"):
            findings.append((number, kind, outcome))
    elapsed = time.perf_counter() - start
    print(
        f"seed file {name}, seed {seed}: {sum(classes.values())} inputs in "
        f"{elapsed:.0f} s (seed file {len(good)} B)"
    )
    print("outcomes:", dict(sorted(classes.items())))
    for step, counts in steps.items():
        print(f"  {step:7s}", dict(sorted(counts.items())))
    print("changes:", dict(sorted(kinds.items())))
    print(
        f"peak RSS growth over the run: {(run_peak - baseline) / MIB:.1f} MiB; "
        f"largest by one input: {grew / MIB:.1f} MiB (input {grew_at})"
    )
    print(
        f"slowest input: {slowest:.3f} s, {slowest_per_mib:.3f} s per MiB, CPU {slowest_cpu:.3f} s "
        f"(input {slowest_at}); most CPU time: {busiest:.3f} s (input {busiest_at})"
    )
    for number, kind, outcome in findings:
        print(f"FINDING {seed}:{number} ({kind}): {outcome}")
    return len(findings)


def bomb(name: str) -> bytes:
    """The hostile file ``name`` of :data:`BOMBS`, made from the seed file."""
    import numcodecs
    from fuzz_structure import build, parse, seed_file

    parsed = parse(seed_file())
    names = [v["name"] for v in parsed.meta["variables"]]  # the root's: numbered first
    if name == "3e6-empty-lists":
        parsed.meta["attrs"]["junk"] = [[]] * 3_000_000
    elif name == "130000-empty-lists":  # just under the limit on arrays and objects
        parsed.meta["attrs"]["junk"] = [[]] * 130_000
    elif name == "4e6-integers":
        parsed.meta["attrs"]["junk"] = [0] * 4_000_000
    elif name == "U536870911-attribute":
        parsed.meta["attrs"]["wide"] = {"dtype": "U536870911", "shape": [], "data": ["a"]}
    elif name == "zstd-second-frame":
        parsed.chunks[names.index("z")][0] += zstd_zeros(2**30)
    elif name == "morton-bits-30":
        b = names.index("b")
        parsed.meta["variables"][b]["layout"] = {"name": "morton", "morton_bits": [30]}
        parsed.meta["variables"][b]["codecs"] = [numcodecs.Zstd().get_config()]
        parsed.chunks[b] = [zstd_zeros(2**30)] * 2
    return build(parsed)


def zstd_zeros(size: int) -> bytes:
    """A Zstandard frame of ``size`` zero bytes made of RLE blocks (4 bytes per
    128 KiB), built without allocating ``size`` bytes."""
    block = 2**17
    frame = bytearray(b"\x28\xb5\x2f\xfd\xe0" + size.to_bytes(8, "little"))
    for start in range(0, size, block):
        length, last = min(block, size - start), start + block >= size
        frame += ((length << 3) | (1 << 1) | last).to_bytes(3, "little") + b"\0"
    return bytes(frame)


BOMBS = (
    "3e6-empty-lists",
    "130000-empty-lists",
    "4e6-integers",
    "U536870911-attribute",
    "zstd-second-frame",
    "morton-bits-30",
)


def run_bomb(name: str, path: Path) -> None:
    """Open and read the hostile file ``name`` at ``path`` (timed), then run every
    step of a fuzz input on it; print its figures."""
    from fuzz_structure import overall, read_all, run_input, seed_file, work_directory

    from xarray_hurray.errors import HurrayError

    warnings.simplefilter("ignore")
    blob = path.read_bytes()
    work = work_directory()
    # as in a fuzz run: imports (xarray's backends, dask's schedulers) and caches come
    # first, so that the growth measured is this file's
    run_input(seed_file(), "preserving", {}, work)
    baseline = _start_peak()
    began, cpu = time.perf_counter(), time.process_time()
    try:
        read_all(blob)
        read = "read"
    except HurrayError as err:
        read = f"refused ({str(err)[:60]}...)"
    took, took_cpu = time.perf_counter() - began, time.process_time() - cpu
    began, cpu = time.perf_counter(), time.process_time()
    outcome = run_input(blob, "bomb", {}, work)
    every, every_cpu = time.perf_counter() - began, time.process_time() - cpu
    mib = max(len(blob) / MIB, 1.0)
    print(
        f"{name}: {len(blob) / MIB:.2f} MiB; {read} in {took:.2f} s ({took / mib:.2f} s per "
        f"MiB; CPU {took_cpu:.2f} s); all steps: {overall(outcome)} in {every:.2f} s "
        f"({every / mib:.2f} s per MiB; CPU {every_cpu:.2f} s); peak RSS growth "
        f"{(_peak_rss() - baseline) / MIB:.0f} MiB"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--file",
        choices=["tree", "pyramid"],
        default="tree",
        help="the seed file: tree (a tree of groups, index pages, missing chunks), or "
        "pyramid (a file with overviews: its records and multiscales text mutated too, "
        "and levels picked, referenced and appended to)",
    )
    parser.add_argument("--replay", metavar="SEED:INDEX", help="run one input of a seed again")
    parser.add_argument("--bombs", action="store_true", help="run the hostile files of issue 18")
    parser.add_argument("--bomb", nargs=2, metavar=("NAME", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bomb:
        run_bomb(args.bomb[0], Path(args.bomb[1]))
        return 0
    if args.bombs:
        from fuzz_structure import work_directory

        work = work_directory()
        for name in BOMBS:  # made here, read in a fresh process: peak RSS is per process
            path = work / f"{name}.hurray"
            path.write_bytes(bomb(name))
            subprocess.run([sys.executable, __file__, "--bomb", name, str(path)], check=True)
        return 0
    if args.replay:
        seed, index = (int(x) for x in args.replay.split(":"))
        return 1 if run(index + 1, seed, replay=index, name=args.file) else 0
    return 1 if run(args.inputs, args.seed, name=args.file) else 0


if __name__ == "__main__":
    sys.exit(main())
