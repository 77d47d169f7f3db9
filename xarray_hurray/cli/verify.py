"""``hurray verify``: check every checksum of a Hurray file."""

from __future__ import annotations

import argparse
import sys

from ..container import ContainerReader, verify_file
from ..container.limits import MAX_CHUNK_BYTES, MAX_METADATA_CONTAINERS
from ..errors import CliError, HurrayFormatError
from .common import (
    add_file_arguments,
    open_checked_source,
    parse_storage_options,
    unfinished_writes,
    unfinished_writes_note,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Give the parser of ``hurray verify`` its description and arguments."""
    parser.description = (
        "Check the header, metadata and index checksums, the checksum and "
        "decoding of every chunk and where each chunk lies. Exit status 0 when the file is "
        "intact, 1 when it is not."
    )
    add_file_arguments(parser)
    parser.add_argument(
        "--max-chunk-bytes",
        type=int,
        default=MAX_CHUNK_BYTES,
        metavar="N",
        help="most bytes one decoded chunk may take (default: the format's limit, 2 GiB); "
        "a chunk that needs more is a problem. Lower it to check untrusted files in less "
        "memory",
    )
    parser.add_argument(
        "--max-metadata-containers",
        type=int,
        default=MAX_METADATA_CONTAINERS,
        metavar="N",
        help=f"most JSON arrays and objects the metadata may hold (default: "
        f"{MAX_METADATA_CONTAINERS}); a file with more is refused. Raise it for a file "
        "whose attributes hold more lists",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Verify ``args.file`` and print a one-line summary (and each problem on stderr)."""
    source = open_checked_source(args.file, parse_storage_options(args.storage_option))
    try:
        # parsed once, then verified
        reader = ContainerReader(
            source,
            max_chunk_bytes=args.max_chunk_bytes,
            max_metadata_containers=args.max_metadata_containers,
        )
    except HurrayFormatError as err:
        problems = [str(err)]
    else:
        problems = verify_file(reader)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    if problems:
        raise CliError(f"{args.file}: corrupt: {len(problems)} problem(s) found", status=1)
    paths = [path for path, _ in reader.metadata.all_variables()]
    chunks = sum(reader.variable(path).chunk_count for path in paths)
    stored = sum(len(entries) for path in paths for _, _, entries in reader.stored_chunks(path))
    print(f"{args.file}: ok ({chunks} chunks, {stored} stored, every checksum matches)")
    note = unfinished_writes_note(unfinished_writes(args.file))
    if note:
        print(note)
    return 0
