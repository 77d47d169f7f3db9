"""The placement of one chunk on a curve of many axes, in both readers.

A grid of side 2 on ``d`` axes (3 on the last, so that the grid is cut short of the
curve's cube) is a curve over every axis; the position of its last chunk is found by
``xarray_hurray.layout.placement_positions`` (Python) and ``Placement.position``
(``js/src/placement.js``, Node), each timed in a fresh process (the best of 3 calls
after a first).  The figure to compare with is the one before the count by sibling
boxes, which visited the ``2**d - 1`` siblings of every level.

Usage::

    python benchmarks/placement_axes.py                       # 16 to 32 axes
    python benchmarks/placement_axes.py --package DIR --js DIR --ranks 16 18 20
        # the Python package in DIR and the JavaScript reader's src/ in DIR
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PYTHON_STEP = r"""
import json, sys, time
import numpy as np
from xarray_hurray.layout import placement_positions
grid = (2,) * (int(sys.argv[2]) - 1) + (3,)
ids = np.array([np.prod(grid) - 1])
for curve in ("hilbert", "morton"):
    times = []
    for _ in range(4):
        start = time.perf_counter()
        position = int(placement_positions(grid, curve, None, ids)[0])
        times.append(time.perf_counter() - start)
    print(json.dumps({"curve": curve, "position": position, "seconds": min(times[1:])}))
"""

JS_STEP = r"""
const { Placement } = await import(process.argv[1]);
const d = Number(process.argv[2]);
const grid = [...Array(d - 1).fill(2), 3];
const chunk = [...Array(d - 1).fill(1), 2];
for (const curve of ["hilbert", "morton"]) {
    const placement = new Placement(grid, curve, grid.map((_, a) => a));
    const times = [];
    let position;
    for (let k = 0; k < 4; k++) {
        const started = performance.now();
        position = placement.position(chunk);
        times.push((performance.now() - started) / 1000);
    }
    console.log(JSON.stringify({ curve, position, seconds: Math.min(...times.slice(1)) }));
}
"""


def run(command: list[str], env: dict[str, str]) -> list[dict]:
    """The JSON lines a fresh process prints."""
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=3600, cwd=tempfile.gettempdir()
    )
    if done.returncode:
        raise SystemExit(done.stderr)
    return [json.loads(line) for line in done.stdout.splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[16, 18, 20, 22, 32])
    parser.add_argument("--package", help="a folder whose xarray_hurray Python imports")
    parser.add_argument("--js", help="the JavaScript reader's src folder", default=REPO / "js/src")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.package:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.package, env.get("PYTHONPATH")]))
    placement = (Path(args.js) / "placement.js").resolve().as_uri()
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| axes | curve | position | Python ms | JavaScript ms |")
    print("|---:|---|---:|---:|---:|")
    for rank in args.ranks:
        python = run([sys.executable, "-c", PYTHON_STEP, "-", str(rank)], env)
        js = run(["node", "--input-type=module", "-e", JS_STEP, placement, str(rank)], env)
        for p, j in zip(python, js, strict=True):
            same = "" if p["position"] == j["position"] else f" (JavaScript: {j['position']})"
            print(
                f"| {rank} | {p['curve']} | {p['position']}{same} | {p['seconds'] * 1e3:.2f} | "
                f"{j['seconds'] * 1e3:.2f} |"
            )


if __name__ == "__main__":
    main()
