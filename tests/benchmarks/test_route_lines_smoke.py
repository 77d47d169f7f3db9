"""The route-lines count runs a write route traced and lists the lines it ran."""

from __future__ import annotations

import json

import pytest
from scripts import run_script

# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def test_one_route_lists_the_engine_and_the_writer() -> None:
    out = run_script("benchmarks/route_lines.py", "--route", "new local file")
    files = {name for name, _ in json.loads(out)}
    # the route's own call runs the engine and the new file's sink, and no update
    assert {"/write/engine.py", "/container/writer.py"} <= files
    assert "/container/update.py" not in files
