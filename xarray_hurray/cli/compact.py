"""``hurray compact``: rewrite a file in full curve order, without unreferenced bytes."""

from __future__ import annotations

import argparse

from ..write.sinks import compact
from .common import add_file_arguments, parse_storage_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Give the parser of ``hurray compact`` its description and arguments."""
    parser.description = (
        "Rewrite a Hurray file after appends and region writes: every chunk in "
        "the placement order of its curve, the bytes earlier versions used dropped.  "
        "Chunks are copied as stored (checked, never re-encoded); the file is replaced "
        "at one instant under its writer lock."
    )
    add_file_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Compact ``args.file``."""
    compact(args.file, parse_storage_options(args.storage_option))
    print(f"{args.file}: compacted")
    return 0
