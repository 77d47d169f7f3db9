"""The JavaScript Hilbert-chunk benchmark runs end to end on a small chunk: both
readers, in fresh processes, read its tiles and the whole field."""

from __future__ import annotations

import re
import shutil

import pytest
from scripts import run_script

# a run of a benchmark script: slow
pytestmark = pytest.mark.slow


def test_js_hilbert_chunk_benchmark_small() -> None:
    if shutil.which("node") is None:
        pytest.skip("needs Node.js")
    stdout = run_script(
        "benchmarks/js_hilbert_chunk.py", "--sides", "512", "--tile", "64", "--runs", "1"
    )
    steps = re.findall(r"^512\^2, (tile|another tile|whole): JavaScript [\d.]+ s", stdout, re.M)
    assert steps == ["tile", "another tile", "whole"]
