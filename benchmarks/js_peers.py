"""What the JavaScript benchmarks share: the Cloud-Optimized GeoTIFF their GDAL peers
read, and the run of a script of ``js/bench``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

JS = Path(__file__).resolve().parents[1] / "js"


def write_cog(values: np.ndarray, path: Path, tile: int, levels: int, **georeference: Any) -> None:
    """``values`` as a Cloud-Optimized GeoTIFF by GDAL's COG driver (rasterio's
    wheels): zstd, tiles of ``tile``, ``levels`` average overviews; ``georeference``
    holds the ``crs``, ``transform`` and ``nodata`` of the raster, if any."""
    import rasterio
    from rasterio.shutil import copy

    plain = path.with_suffix(".plain.tif")
    profile = {
        "driver": "GTiff",
        "width": values.shape[1],
        "height": values.shape[0],
        "count": 1,
        "dtype": "float32",
        **georeference,
    }
    with rasterio.open(plain, "w", **profile) as dst:
        dst.write(values, 1)
    copy(
        plain,
        path,
        driver="COG",
        BLOCKSIZE=tile,
        COMPRESS="ZSTD",
        OVERVIEWS="AUTO",
        OVERVIEW_COUNT=levels,
        OVERVIEW_RESAMPLING="AVERAGE",
    )
    plain.unlink()


def run_bench(script: str, *args: str) -> Any:
    """Run ``js/bench/<script>`` in Node.js with ``args``; the JSON of the last line it
    prints."""
    done = subprocess.run(
        ["node", str(JS / "bench" / script), *args], capture_output=True, text=True, cwd=JS
    )
    if done.returncode:
        raise RuntimeError(f"js/bench/{script} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def step_row(who: str, step: str, seconds: float, latency: float, counts: dict[str, int]) -> str:
    """A row of a JavaScript benchmark's table: who took the step (30 wide), the step
    (26 wide), its milliseconds, its round trips (its time over ``latency``), and the
    ``requests`` and ``waves`` of ``counts``."""
    return (
        f"{who:30} {step:26} {1000 * seconds:8.0f} {seconds / latency:6.1f} "
        f"{counts['requests']:9d} {counts['waves']:6d}"
    )


HEADER = f"{'':30} {'step':26} {'ms':>8} {'trips':>6} {'requests':>9} {'waves':>6}"
"""The header of :func:`step_row`'s rows, but for the first column's title."""
