"""Properties run at two depths: a short run in the default suite, a long one with the
slow tests (``python -m pytest -m slow``), so that the default suite stays fast and the
long run still looks for rare cases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis.strategies import SearchStrategy


def depths(short: int, long: int) -> pytest.MarkDecorator:
    """Parametrize a test over ``examples``: ``short`` in the default suite, ``long``
    marked slow."""
    return pytest.mark.parametrize(
        "examples",
        [
            pytest.param(short, id=f"{short} examples"),
            pytest.param(long, id=f"{long} examples", marks=pytest.mark.slow),
        ],
    )


def check_property(
    examples: int, check: Callable[..., None], *strategies: SearchStrategy[Any]
) -> None:
    """Run ``check`` on ``examples`` examples drawn from ``strategies`` (no deadline:
    a loaded machine runs some examples slowly)."""
    settings(max_examples=examples, deadline=None)(given(*strategies)(check))()
