"""The round-trip and small-chunk benchmarks run end to end on small data (subprocesses)."""

from __future__ import annotations

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_round_trips_benchmark_quick():
    stdout = run_script(
        "benchmarks/round_trips.py", "--quick", "--latency", "0.002", "--cpu", timeout=120
    )
    # one request opens a Hurray file; every step has a row per reader
    assert "| first open | hurray | 1 |" in stdout
    for peer in ("unsharded", "sharded"):
        assert f" {peer} | 3 |" in stdout  # zarr opens with three requests
    latency, no_latency = stdout.split("the client's own time")
    # four boxes for three readers, and again for Hurray's file with index pages
    assert latency.count("| read ") == 4 * 3 + 4
    assert "index pages outside the first 64 KiB" in latency
    # --cpu: Hurray's six steps again for each file, without latency
    assert no_latency.count(".hurray | ") == 2 * 6


def test_small_chunks_benchmark_quick():
    stdout = run_script("benchmarks/small_chunks.py", "--quick", timeout=120)
    assert "| write from numpy |" in stdout
    assert "| full read |" in stdout
    assert "us per chunk" in stdout


def test_chunk_scaling_benchmark_quick():
    stdout = run_script("benchmarks/chunk_scaling.py", "--quick", "--numpy", "--zarr-up-to", "1e4")
    # one row per writer, each from a child process that checked the file it wrote
    assert "| 10,000 | 400x400 | hurray |" in stdout
    assert "| 10,000 | 400x400 | hurray from numpy |" in stdout
    assert "| 10,000 | 400x400 | zarr sharded |" in stdout


def test_reorder_benchmark_quick():
    stdout = run_script("benchmarks/reorder.py", "--quick", timeout=120)
    for dtype in ("uint8", "int16", "float32", "float64"):
        assert f"{dtype} (" in stdout
    # 2-D, 3-D and 4-D chunks of each type
    assert stdout.count("| hilbert |") == stdout.count("| morton |") == 12
