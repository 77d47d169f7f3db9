"""What opening, verifying, describing and reading a file costs whose variable
declares a giant grid of chunks, all missing.

Run ``python benchmarks/sparse_grids.py`` (``--exponents 22 26`` for the small
ones; ``--json`` prints the figures as JSON instead of Markdown).  For a uint8
variable of ``2**e`` one-element chunks (a map), all missing, written as a format
1.2 file by :func:`xarray_hurray.testing.sparse.write_sparse_file` (its page table
of absent pages is the whole index: 16 bytes per 1024 chunks), each step runs in a
fresh process after a first small read (imports, thread pools): its wall and CPU
seconds and how far it raised the process's peak RSS.  Steps: ``open``
(``open_reader``), ``verify`` (``verify_file``), ``info`` (``hurray info``'s
report), ``region`` (a 200 x 200 read) and, up to ``2**26`` chunks (a 64 MiB
result), ``whole`` (the whole variable).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from xarray_hurray.container import DatasetMeta, VariableMeta
from xarray_hurray.layout import RowMajorLayout
from xarray_hurray.testing.sparse import write_sparse_file

STEP = """
import json, resource, sys, time
from xarray_hurray.cli.info import report
from xarray_hurray.container import open_reader, verify_file
path, step = sys.argv[1], sys.argv[2]
open_reader(path).read("v", (slice(0, 1), slice(0, 1)))  # imports and first use
runs = {
    "open": lambda: open_reader(path),
    "verify": lambda: verify_file(path),
    "info": lambda: report(open_reader(path)),
    "region": lambda: open_reader(path).read("v", (slice(100, 300), slice(5, 205))),
    "whole": lambda: open_reader(path).read("v"),
}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
wall, cpu = time.perf_counter(), time.process_time()
value = runs[step]()
figures = [time.perf_counter() - wall, time.process_time() - cpu]
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
if step == "verify":
    assert value == [], value
print(json.dumps([*figures, grown]))
"""

STEPS = ("open", "verify", "info", "region", "whole")

MIB = 2**20


def grid_file(path: Path, exponent: int) -> int:
    """Write the file of ``2**exponent`` missing chunks; its size."""
    rows = 2 ** (exponent // 2)
    var = VariableMeta(
        name="v",
        dims=("y", "x"),
        shape=(rows, 2**exponent // rows),
        dtype="uint8",
        chunks=(1, 1),
        layout=RowMajorLayout(),
    )
    return write_sparse_file(path, DatasetMeta(attrs={}, variables=(var,)))


def run(path: Path, step: str) -> tuple[float, float, int]:
    """Wall and CPU seconds and peak RSS growth (bytes) of ``step`` in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", STEP, str(path), step], capture_output=True, text=True, check=True
    )
    wall, cpu, grown = json.loads(done.stdout)
    return float(wall), float(cpu), int(grown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exponents", type=int, nargs="*", default=[22, 26, 30, 34])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures: dict[int, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as work:
        for exponent in args.exponents:
            path = Path(work) / f"{exponent}.hurray"
            size = grid_file(path, exponent)
            steps = [s for s in STEPS if s != "whole" or exponent <= 26]
            figures[exponent] = {"file_bytes": size} | {s: run(path, s) for s in steps}
            path.unlink()
    if args.json:
        print(json.dumps(figures))
        return
    print("| chunks | file | " + " | ".join(STEPS) + " |")
    print("|---|---|" + "---|" * len(STEPS))
    for exponent, row in figures.items():
        cells = [
            f"{row[s][0]:.2f} s ({row[s][1]:.2f} s CPU), {row[s][2] / MIB:.0f} MiB"  # type: ignore[index]
            if s in row
            else "-"
            for s in STEPS
        ]
        size = int(row["file_bytes"])  # type: ignore[call-overload]
        print(f"| 2**{exponent} | {size / MIB:.2f} MiB | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
