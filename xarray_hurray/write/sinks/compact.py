"""``hurray compact``: a file rewritten whole, in placement order."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ...io import UploadTarget
from ..target import WriteTarget
from .choice import choose_sink


def compact(
    location: str | os.PathLike[str] | UploadTarget,
    storage_options: Mapping[str, Any] | None = None,
) -> None:
    """Rewrite the file at ``location`` with every chunk in placement order and no
    unreferenced bytes, atomically, under its writer lock (``hurray compact``).

    Raises
    ------
    FileNotFoundError
        When there is no file.
    """
    target = WriteTarget.resolve(location, storage_options)
    with target.lock(), target.open() as base:
        chosen = choose_sink(target, base, base.metadata, {}, rewrite=True)
        with chosen.open():
            pass
