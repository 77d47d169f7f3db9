"""Running the project's scripts (benchmarks, examples) and code as real subprocesses."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_script(relative_path: str, *args: object, timeout: float = 300) -> str:
    """Run ``ROOT / relative_path`` with this interpreter; return its standard output.

    Fails the test, showing standard error, when the script exits non-zero.
    """
    return _run([str(ROOT / relative_path), *map(str, args)], timeout=timeout)


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
