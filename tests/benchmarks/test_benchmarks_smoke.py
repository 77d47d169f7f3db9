"""The layout benchmark runs end to end in its quick mode.

The peer packages (the ``bench`` extra) are optional: without them the peer
columns read ``n/a`` and the script still succeeds.
"""

from __future__ import annotations

import pytest
from scripts import run_script

HEADERS = (
    "| r | p | direction | ours | numpy-hilbert-curve | hilbertcurve | ours / fastest peer |",
    "| chunk | layout | encode | decode | copy | encode / copy | decode / copy |",
    "## Permutation cache",
)


# a run of a benchmark script: slow, left out of CI's lowest-versions run
pytestmark = pytest.mark.slow


def run(*args: str) -> str:
    return run_script("benchmarks/layouts.py", "--quick", *args)


@pytest.mark.parametrize("args", [(), ("--no-peers",)], ids=["peers-if-installed", "no-peers"])
def test_quick_run_prints_tables(args: tuple[str, ...]) -> None:
    out = run(*args)
    for header in HEADERS:
        assert header in out
    assert "| NO |" not in out  # any installed peer agrees with our keys
    if args:
        assert "Peers installed: none." in out
