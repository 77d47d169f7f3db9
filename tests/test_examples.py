"""Every example runs (a smoke test, so none rots) and prints what it promises."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"


def run_example(name: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_plot_chunk_orders(tmp_path):
    pytest.importorskip("matplotlib")
    output = tmp_path / "orders.png"
    stdout = run_example("plot_chunk_orders.py", "--output", str(output), "--grid", "8", "12")
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    counts = {
        line.split(":")[0].strip(): int(line.split(":")[1].split()[0])
        for line in stdout.splitlines()
        if "byte ranges" in line
    }
    assert set(counts) == {"hilbert", "morton", "row-major"}
    assert counts["hilbert"] <= counts["row-major"]
