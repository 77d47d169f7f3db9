"""The code in README.md and docs/getting-started.md runs as written, and the home page
of the documentation names every command and every page."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import xarray as xr
from scripts import run_code

from xarray_hurray.cli import main
from xarray_hurray.cli.main import COMMANDS

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "getting-started.md"


def blocks(language: str, page: Path = PAGE) -> list[str]:
    """The fenced code blocks of ``language`` on ``page``, in order."""
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(), flags=re.DOTALL)


@pytest.mark.slow
def test_the_readmes_use_block_runs_as_pasted(tmp_path):
    """In an empty folder, in a process of its own, without a warning."""
    (code,) = [b for b in blocks("python", ROOT / "README.md") if "to_hurray" in b]
    run_code(code, flags=["-W", "error::UserWarning", "-W", "error::RuntimeWarning"], cwd=tmp_path)
    with xr.open_dataset(tmp_path / "field.hurray", engine="hurray") as field:
        assert field.sizes["time"] == 4  # the two days and the two appended
    with xr.open_datatree(tmp_path / "tree.hurray", engine="hurray") as tree:
        assert set(tree.children) == {"first", "later"}
    assert (tmp_path / "field.zarr" / "zarr.json").is_file()
    with xr.open_datatree(tmp_path / "map.hurray", engine="hurray") as pyramid:
        assert set(pyramid.children) == {"0", "1", "2"}


@pytest.mark.slow
def test_python_blocks_run_in_order(tmp_path):
    # The S3 block needs a bucket and credentials; examples/s3_region_read.py runs the
    # same calls against a local server in test_examples.py.
    code = "\n".join(block for block in blocks("python") if "s3://" not in block)
    run_code(code, cwd=tmp_path)
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


HOME = ROOT / "docs" / "index.md"


def test_the_home_page_names_every_command():
    listed = re.findall(r"^  - `(\w+)`:", HOME.read_text(), flags=re.MULTILINE)
    assert listed == list(COMMANDS)


def test_the_home_page_links_every_page():
    linked = set(re.findall(r"\]\(([\w/-]+\.md)(?:#[\w-]+)?\)", HOME.read_text()))
    pages = {path.relative_to(HOME.parent).as_posix() for path in HOME.parent.glob("*.md")}
    # the specification's pages are linked from its own README
    assert pages - {"index.md"} | {"spec/README.md"} <= linked
