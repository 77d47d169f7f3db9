"""``hurray verify``: check every checksum of a Hurray file."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

import numpy as np

from ..container import ContainerReader, HurrayFormatError
from .common import CliError, open_checked_source, parse_storage_options

BATCH = 256
"""Chunks checked per batch; a failing batch is checked again chunk by chunk."""


@dataclass
class Verdict:
    """What :func:`verify_file` found."""

    chunks_checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every checksum matched and every chunk decoded."""
        return not self.problems


def _check_chunks(reader: ContainerReader, name: str, chunk_ids: np.ndarray) -> list[str]:
    try:
        for _ in reader.iter_chunks(name, chunk_ids):
            pass
    except HurrayFormatError as err:
        if len(chunk_ids) == 1:
            return [str(err)]
        return [p for cid in chunk_ids for p in _check_chunks(reader, name, cid.reshape(1))]
    return []


def verify_file(reader: ContainerReader) -> Verdict:
    """Check the indexes and every chunk of an opened file (opening checked the header
    and the metadata): each checksum, and that each chunk decodes to a full chunk."""
    verdict = Verdict()
    for var in reader.metadata.variables:
        try:
            reader.index(var.name)
        except HurrayFormatError as err:
            verdict.problems.append(str(err))
            continue
        placement = var.placement
        for start in range(0, len(placement), BATCH):
            batch = placement[start : start + BATCH]
            verdict.problems.extend(_check_chunks(reader, var.name, batch))
            verdict.chunks_checked += len(batch)
    return verdict


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register ``hurray verify``."""
    parser = commands.add_parser(
        "verify",
        help="check every checksum; exit status 0 when all match, 1 when not",
        description="Check the header, metadata and index checksums and the checksum of "
        "every chunk, and that every chunk decodes. Exit status 0 when the file is intact, "
        "1 when it is not.",
    )
    parser.add_argument("file", metavar="FILE_OR_URL", help="a path or fsspec URL")
    parser.add_argument(
        "--storage-option", action="append", metavar="KEY=VALUE", help="fsspec storage option"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Verify ``args.file`` and print a one-line summary (and each problem on stderr)."""
    source = open_checked_source(args.file, parse_storage_options(args.storage_option))
    try:
        reader = ContainerReader(source)
    except HurrayFormatError as err:
        raise CliError(f"{args.file}: corrupt: {err}", status=1) from None
    verdict = verify_file(reader)
    for problem in verdict.problems:
        print(f"  {problem}", file=sys.stderr)
    if not verdict.ok:
        raise CliError(
            f"{args.file}: corrupt: {len(verdict.problems)} problem(s) in "
            f"{verdict.chunks_checked} chunks checked",
            status=1,
        )
    print(f"{args.file}: ok ({verdict.chunks_checked} chunks, every checksum matches)")
    return 0
