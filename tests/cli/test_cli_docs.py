"""The code in docs/getting-started.md runs as written."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import xarray as xr

from xarray_hurray.cli import main

PAGE = Path(__file__).parents[2] / "docs" / "getting-started.md"


def blocks(language: str) -> list[str]:
    """The fenced code blocks of ``language`` on the page, in order."""
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)


@pytest.mark.slow
def test_python_blocks_run_in_order(tmp_path):
    # The S3 block needs a bucket and credentials; examples/s3_region_read.py runs the
    # same calls against a local server in test_examples.py.
    code = "\n".join(block for block in blocks("python") if "s3://" not in block)
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "temperature.hurray").exists() and (tmp_path / "anomaly.hurray").exists()
    xr.testing.assert_identical(
        xr.open_dataset(tmp_path / "anomaly.hurray", engine="hurray"),
        xr.open_dataset(tmp_path / "anomaly-later.hurray", engine="hurray"),
    )


def test_command_lines_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks("python")[0], "getting-started", "exec"), {})
    xr.open_dataset("temperature.hurray", engine="hurray").to_netcdf("input.nc", engine="h5netcdf")
    commands = [
        line.split("#")[0].strip()
        for block in blocks("bash")
        for line in block.splitlines()
        if line.startswith("hurray ") and line.split()[1] != "demo"
    ]
    assert len(commands) == 7
    for command in commands * 2:  # the block runs again as it is, over its own outputs
        assert main(shlex.split(command)[1:]) == 0, capsys.readouterr().err
    assert Path("output.hurray").exists() and Path("output.zarr").is_dir()
    assert Path("refs.json").exists()
