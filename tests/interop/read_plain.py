"""Read what ``test_interop_write.py`` wrote with zarr, xarray and fsspec alone, and
compare every value, bit for bit, with what the manifest expects.

Run in an environment without xarray-hurray (CI makes one)::

    python tests/interop/read_plain.py DIRECTORY

Exits with status 1 when a value differs or the package is importable (it must not be,
for the check to mean anything); prints ``N passed, M failed``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import fsspec
import xarray as xr
import zarr
from interop_cases import load_manifest, load_values, same_bits


def open_store(directory: Path, kind: str, path: str) -> zarr.abc.store.Store:
    """The zarr store of a store directory (``"zarr"``) or of kerchunk references (``"refs"``)."""
    if kind == "zarr":
        return zarr.storage.LocalStore(directory / path, read_only=True)
    fs = fsspec.filesystem("reference", fo=str(directory / path), asynchronous=True)
    return zarr.storage.FsspecStore(fs, read_only=True, path="")


def main(directory: Path) -> int:
    """Check every case; return the exit status."""
    if importlib.util.find_spec("xarray_hurray") is not None:
        print("xarray_hurray is importable here: this must run without it")
        return 1
    passed = failed = 0
    for case in load_manifest(directory):
        store = open_store(directory, case["kind"], case["path"])
        name = case["variable"]
        with xr.open_zarr(store, consolidated=False, zarr_format=3) as ds:
            decoded = ds[name].values
        want = load_values(directory, case["decoded"], case["decoded_dtype"], case["shape"])
        checks = [("decoded by xarray", same_bits(decoded, want))]
        if "region" in case:
            box = tuple(slice(a, b) for a, b in case["region"])
            shape = [b - a for a, b in case["region"]]
            raw = zarr.open_array(store, path=name, mode="r")[box]
            want = load_values(directory, case["raw"], case["raw_dtype"], shape)
            checks.append((f"region {case['region']} by zarr", same_bits(raw, want)))
        for what, ok in checks:
            passed += ok
            failed += not ok
            print(f"{'ok' if ok else 'FAILED'}: {case['kind']} {case['path']} {name}, {what}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
