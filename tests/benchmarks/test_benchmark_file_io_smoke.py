"""The Hurray-vs-Zarr file benchmark runs end to end in its quick mode."""

from __future__ import annotations

from scripts import run_script


def test_quick_run_prints_both_tables() -> None:
    stdout = run_script("benchmarks/file_io.py", "--quick")
    assert "| operation | hurray MB/s | zarr MB/s | hurray / zarr |" in stdout
    assert "| box side | reader | requests / read | MB / read |" in stdout
