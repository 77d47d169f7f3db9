"""What opening, verifying and describing a file of many groups costs, and how much
of ``xr.open_datatree`` is xarray's own ``DataTree``.

Run ``python benchmarks/many_groups.py`` (``--quick`` for 1,000 groups); it prints
Markdown.  For files of N empty groups and of N groups of one variable each
(written by ``to_hurray`` of a ``DataTree``), each step runs in a fresh process
and is timed in wall and CPU seconds (the machine may be shared: CPU time is the
work done):

- ``open_datatree``: ``xr.open_datatree(path, engine="hurray")`` whole;
- ``groups as datasets``: the backend's ``open_groups_as_dict``, every group a
  ``Dataset`` (the container's part, and xarray's decoding of each group);
- ``DataTree.from_dict``: xarray building the tree of those datasets, as the
  backend's ``open_datatree`` does (xarray rebuilds it once more when it has
  applied its own steps, which ``open_datatree`` includes);
- ``verify_file`` and ``hurray info`` (``report``);
- the peer, ``open_datatree (h5netcdf)``: ``xr.open_datatree`` of the same tree
  written as netCDF-4 by ``DataTree.to_netcdf(engine="h5netcdf")``, through xarray's
  own engine (which builds its tree as this package's backend does).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

import xarray_hurray as xh

STEP = """
import json, sys, time
import xarray as xr
from xarray_hurray.cli.info import report
from xarray_hurray.container import open_reader, verify_file
from xarray_hurray.xarray.backend import HurrayBackendEntrypoint
path, step, netcdf = sys.argv[1], sys.argv[2], sys.argv[3]
groups = HurrayBackendEntrypoint().open_groups_as_dict(path)  # imports and caches warm
runs = {
    "open_datatree": lambda: xr.open_datatree(path, engine="hurray"),
    "groups as datasets": lambda: HurrayBackendEntrypoint().open_groups_as_dict(path),
    "DataTree.from_dict": lambda: xr.DataTree.from_dict(groups),
    "verify_file": lambda: verify_file(path),
    "hurray info": lambda: report(open_reader(path)),
    "open_datatree (h5netcdf)": lambda: xr.open_datatree(netcdf, engine="h5netcdf"),
}
wall, cpu = time.perf_counter(), time.process_time()
runs[step]()
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""

STEPS = (
    "open_datatree",
    "groups as datasets",
    "DataTree.from_dict",
    "verify_file",
    "hurray info",
    "open_datatree (h5netcdf)",
)
PEER = "open_datatree (h5netcdf)"
"""The step that reads the netCDF copy of the file."""


def tree(count: int, with_variable: bool) -> xr.DataTree:
    """A root and ``count`` groups below it, empty or of one small variable each."""
    groups = {"/": xr.Dataset()}
    for k in range(count):
        data = {"v": ("x", np.arange(3.0))} if with_variable else {}
        groups[f"/g{k}"] = xr.Dataset(data)
    return xr.DataTree.from_dict(groups)


def run(path: Path, step: str) -> tuple[float, float]:
    """Wall and CPU seconds of ``step`` on ``path`` (its netCDF copy beside it, with
    the suffix ``.nc``) in a fresh process."""
    netcdf = path.with_suffix(".nc")
    done = subprocess.run(
        [sys.executable, "-c", STEP, str(path), step, str(netcdf)],
        capture_output=True,
        text=True,
        check=True,
    )
    wall, cpu = json.loads(done.stdout)
    return float(wall), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 groups only")
    parser.add_argument("--counts", type=int, nargs="*", default=[1000, 4000, 32000])
    parser.add_argument("--steps", nargs="*", default=list(STEPS), choices=STEPS)
    args = parser.parse_args()
    counts = [1000] if args.quick else args.counts
    print("| file | size | " + " | ".join(args.steps) + " |")
    print("|---|---|" + "---|" * len(args.steps))
    with tempfile.TemporaryDirectory() as work:
        for with_variable in (False, True):
            for count in counts:
                if with_variable and count > 7000:
                    continue  # 17 JSON containers a group: more passes the metadata's cap
                path = Path(work) / f"{count}-{with_variable}.hurray"
                groups = tree(count, with_variable)
                xh.to_hurray(groups, path)
                if PEER in args.steps:
                    groups.to_netcdf(path.with_suffix(".nc"), engine="h5netcdf")
                cells = []
                for step in args.steps:
                    wall, cpu = run(path, step)
                    cells.append(f"{wall:.2f} s ({cpu:.2f} s CPU)")
                kind = "groups of one variable" if with_variable else "empty groups"
                size = path.stat().st_size / 1e6
                print(f"| {count} {kind} | {size:.2f} MB | " + " | ".join(cells) + " |")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
