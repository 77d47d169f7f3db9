"""Running the project's scripts (benchmarks, examples) as real subprocesses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_script(relative_path: str, *args: object, timeout: float = 300) -> str:
    """Run ``ROOT / relative_path`` with this interpreter; return its standard output.

    Fails the test, showing standard error, when the script exits non-zero.
    """
    result = subprocess.run(
        [sys.executable, str(ROOT / relative_path), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
