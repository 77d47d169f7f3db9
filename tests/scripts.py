"""Running the project's scripts (benchmarks, examples) and code as real subprocesses."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_script(relative_path: str, *args: object, timeout: float = 300) -> str:
    """Run ``ROOT / relative_path`` with this interpreter; return its standard output.

    Fails the test, showing standard error, when the script exits non-zero.
    """
    return _run([str(ROOT / relative_path), *map(str, args)], timeout=timeout)


def table_rows(stdout: str) -> list[list[str]]:
    """The body rows of the Markdown tables in ``stdout`` (a table's header and its
    separator row left out), each the list of its cells, stripped."""
    rows: list[list[str]] = []
    in_body = False
    for line in stdout.splitlines():
        if not line.startswith("|"):
            in_body = False
        elif re.fullmatch(r"\|[-:| ]+\|", line.strip()):
            in_body = True  # the separator: the rows after it are the body
        elif in_body:
            rows.append([cell.strip() for cell in line.strip()[1:-1].split("|")])
    return rows


def run_js_benchmark(relative_path: str, *args: object) -> str:
    """Run a benchmark of the JavaScript reader against its peers (GDAL's COG among
    them) as :func:`run_script` does; skip where the bench extra's rasterio, Node.js or
    ``npm ci`` in js/ is missing."""
    pytest.importorskip("rasterio")
    if shutil.which("node") is None or not (ROOT / "js" / "node_modules").is_dir():
        pytest.skip("needs Node.js and `npm ci` in js/")
    return run_script(relative_path, *args, timeout=600)


def run_code(
    code: str,
    *,
    flags: Sequence[str] = (),
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> str:
    """Run ``code`` in a new interpreter (this one's, with the interpreter ``flags``);
    return its standard output, failing the test as :func:`run_script` does."""
    return _run([*flags, "-c", code], cwd=cwd, env=env, timeout=timeout)


def _run(
    arguments: list[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float,
) -> str:
    result = subprocess.run(
        [sys.executable, *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
