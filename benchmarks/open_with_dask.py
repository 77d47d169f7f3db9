"""A fresh process that opens an ERA5-like store with dask: ``open_dataset(chunks={})``
through this engine against consolidated Zarr.

The store holds 40 float32 variables of (time, latitude, longitude) = (30, 128, 256)
in chunks of 1 x 64 x 64 (240 chunks each, 9,600 in all), with CF coordinates, written
with the same chunks as a Hurray file (``to_hurray``) and as a consolidated Zarr v3
store, unsharded (``Dataset.to_zarr``).  Each row is a new interpreter that runs

    import xarray as xr
    ds = xr.open_dataset(PATH, engine=..., chunks={})

and is timed by its parent from start to exit; the child also times its import of
xarray and its open (the open includes the imports it causes: dask.array for
``chunks={}``, which xarray imports for any engine, and the engine's own; for an
engine named by a string that is not one of xarray's own, xarray also imports the
engine module of every installed package that has one, rioxarray's and cfgrib's
among them).  A third row gives this package's engine as its class, which xarray
takes without loading the others; ``--hide-other-engines`` keeps the other packages'
engines from being imported at all, as where they are not installed.  A second
pair of rows imports ``dask.array`` before the open (``--warm-dask``), to show the
engines' own cost.  The rows take turns, round after round (each preceded once by an
untimed run that writes the bytecode caches); the best and the median are given, and
each engine's time as a ratio to Zarr's.  ``--profile`` prints the modules each
engine's open imports that the Zarr open does not, and the reverse.

Usage::

    python benchmarks/open_with_dask.py               # 9 rounds
    python benchmarks/open_with_dask.py --quick       # 2 rounds
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

VARIABLES, STEPS, LAT, LON, CHUNK = 40, 30, 128, 256, 64

ENGINES = {"hurray": "data.hurray", "hurray, engine class": "data.hurray", "zarr": "data.zarr"}
"""What each row opens: ``engine="hurray"``, the same engine given as its class
(``engine=HurrayBackendEntrypoint``: xarray then loads no other package's engine), and
consolidated Zarr."""

HIDE_OTHER_ENGINES = """
import importlib.metadata, sys
OTHERS = {
    entry.value.partition(":")[0].split(".")[0]
    for entry in importlib.metadata.entry_points(group="xarray.backends")
    if not entry.value.startswith("xarray_hurray")
}
class HideOtherEngines:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in OTHERS:
            raise ImportError(f"{name}: another package's xarray engine, hidden")
sys.meta_path.insert(0, HideOtherEngines())
"""
"""Code that keeps the packages of other xarray engines (rioxarray, cfgrib, ...) from
being imported, as if they were not installed (``--hide-other-engines``)."""


def write_store(directory: Path) -> None:
    """The ERA5-like dataset as a Hurray file and a consolidated Zarr store."""
    import pandas as pd
    import xarray as xr

    import xarray_hurray as xh

    rng = np.random.default_rng(0)
    base = rng.standard_normal((STEPS, LAT, LON)).astype("f4")
    dims = ("time", "latitude", "longitude")
    names = [f"var{k:02d}" for k in range(VARIABLES)]
    ds = xr.Dataset(
        {name: (dims, base + k, {"units": "K", "long_name": name}) for k, name in enumerate(names)},
        coords={
            "time": pd.date_range("2020-01-01", periods=STEPS, freq="h"),
            "latitude": (
                "latitude",
                np.linspace(90, -90, LAT),
                {"units": "degrees_north", "standard_name": "latitude"},
            ),
            "longitude": (
                "longitude",
                np.linspace(0, 360, LON, endpoint=False),
                {"units": "degrees_east", "standard_name": "longitude"},
            ),
        },
    )
    encoding = {name: {"chunks": (1, CHUNK, CHUNK)} for name in names}
    xh.to_hurray(ds, directory / ENGINES["hurray"], encoding=encoding)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on consolidated metadata
        ds.to_zarr(directory / ENGINES["zarr"], encoding=encoding, consolidated=True, zarr_format=3)


def child_code(
    path: Path, engine: str, warm_dask: bool, hide: bool = False, modules: bool = False
) -> str:
    """The code of one child: its times (and with ``modules``, the modules its open
    imported) as JSON on its last line; with ``hide``, the other packages' engines
    hidden first."""
    kwargs = "consolidated=True, " if engine == "zarr" else ""
    if engine == "hurray, engine class":
        given = "__import__('xarray_hurray.xarray.backend').xarray.backend.HurrayBackendEntrypoint"
    else:
        given = repr(engine)
    return (
        (HIDE_OTHER_ENGINES if hide else "") + "import time\n"
        "start = time.perf_counter()\n"
        "import json, sys, warnings\n"
        "import xarray as xr\n"
        + ("import dask.array\n" if warm_dask else "")
        + "imported = time.perf_counter()\n"
        "before = set(sys.modules)\n"
        "warnings.simplefilter('ignore')\n"
        f"ds = xr.open_dataset({str(path)!r}, engine={given}, {kwargs}chunks={{}})\n"
        "opened = time.perf_counter()\n"
        "assert len(ds.data_vars) == 40 and ds['var00'].data.numblocks == (30, 2, 4)\n"
        "print(json.dumps({'import': imported - start, 'open': opened - imported"
        + (", 'modules': sorted(set(sys.modules) - before)" if modules else "")
        + "}))\n"
    )


def run_once(code: str, env: dict[str, str]) -> dict[str, float]:
    """One child: its wall time from start to exit, and the times it reports."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"child failed:\n{done.stderr}")
    found: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return {**found, "process": elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="two rounds")
    parser.add_argument("--profile", action="store_true", help="the modules each open imports")
    parser.add_argument(
        "--hide-other-engines",
        action="store_true",
        help="keep other packages' xarray engines from being imported",
    )
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="hurray-open-") as tmp:
        root = Path(tmp)
        write_store(root)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        hide = args.hide_other_engines
        rows = {
            (engine, warm): child_code(root / name, engine, warm, hide)
            for warm in (False, True)
            for engine, name in ENGINES.items()
        }
        if args.profile:
            imported = {
                engine: set(
                    run_once(child_code(root / name, engine, False, hide, True), env)["modules"]
                )  # type: ignore[arg-type]
                for engine, name in ENGINES.items()
            }
            for engine, other in (("hurray", "zarr"), ("zarr", "hurray")):
                extra = sorted(imported[engine] - imported[other])
                print(f"modules the {engine} open imports and the {other} open does not:")
                print(f"  {len(extra)}: {', '.join(extra)}\n")
        for code in rows.values():  # untimed: the bytecode caches, the page cache
            run_once(code, env)
        load_before = os.getloadavg()[0]
        found: dict[tuple[str, bool], list[dict[str, float]]] = {row: [] for row in rows}
        for _ in range(rounds):
            for row, code in rows.items():
                found[row].append(run_once(code, env))
        load_after = os.getloadavg()[0]
    print(
        f"{VARIABLES} variables, {VARIABLES * STEPS * (LAT // CHUNK) * (LON // CHUNK)} chunks; "
        f"{rounds} rounds; load average {load_before:.2f} before, {load_after:.2f} after"
        + ("; other packages' engines hidden" if hide else "")
        + "\n"
    )
    print(
        "| engine | dask.array imported first | process s (best) | process s (median) "
        "| import xarray s (median) | open s (median) | process / zarr's (median) "
        "| open / zarr's (median) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for (engine, warm), runs in found.items():
        zarr = found["zarr", warm]
        median = {k: statistics.median(r[k] for r in runs) for k in ("process", "import", "open")}
        zarr_median = {k: statistics.median(r[k] for r in zarr) for k in ("process", "open")}
        print(
            f"| {engine} | {'yes' if warm else 'no'} | {min(r['process'] for r in runs):.3f} "
            f"| {median['process']:.3f} | {median['import']:.3f} | {median['open']:.3f} "
            f"| {median['process'] / zarr_median['process']:.2f} "
            f"| {median['open'] / zarr_median['open']:.2f} |"
        )


if __name__ == "__main__":
    main()
