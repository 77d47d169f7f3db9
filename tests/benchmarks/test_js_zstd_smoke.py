"""The comparison of zstd decoders (``js/bench/zstd.js``) runs end to end on few
rounds and mutants, and holds what js/README.md says of ours: every chunk decoded,
and no damaged frame read where the Python reader refuses it, nor to other bytes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow

JS = Path(__file__).resolve().parents[2] / "js"


def test_js_zstd_benchmark_quick() -> None:
    if shutil.which("node") is None or not (JS / "node_modules").is_dir():
        pytest.skip("needs Node.js and `npm ci` in js/")
    result = subprocess.run(
        ["node", "bench/zstd.js", "--repeats", "1", "--cold", "1", "--mutants", "400"],
        cwd=JS,
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    speeds = re.findall(r"^\| (smooth|noisy) (64 KiB|4 MiB) \| (\d) \|", result.stdout, re.M)
    assert len(speeds) == 12  # two fields, two sizes, three levels
    damaged = {
        name: tuple(map(int, counts))
        for name, *counts in re.findall(
            r"^\| (\w+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| [\d.]+ \|$", result.stdout, re.M
        )
    }
    assert set(damaged) == {"ours", "zstddec", "fzstd"}
    agree, refused, read_refused, read_other = damaged["ours"]
    assert agree + refused == 400 and read_refused == 0 and read_other == 0
