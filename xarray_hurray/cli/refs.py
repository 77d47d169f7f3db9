"""``hurray refs``: kerchunk references to a Hurray file, with standard Zarr codecs."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

from ..errors import CliError
from ..io import is_url
from .common import add_file_arguments, open_reader, parse_storage_options


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``hurray refs``."""
    parser = commands.add_parser(
        "refs",
        help="write kerchunk references that Zarr readers open without this package",
        description="Write kerchunk references (Zarr v3 metadata, standard codecs) to "
        "the chunks of a Hurray file, for fsspec's reference file system, zarrita or any "
        "Zarr reader of references. Variables stored in another element layout than "
        "row-major, and text, are left out with a warning naming each.",
    )
    add_file_arguments(parser)
    parser.add_argument(
        "-o", "--output", metavar="REFS.json", help="where to write them (default: stdout)"
    )
    parser.add_argument(
        "--url",
        help="the file's URL written into the references (default: FILE_OR_URL as given, "
        "a local path as an absolute file:// URL)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Write the references of ``args.file`` to ``args.output`` or standard output."""
    # the module needs zarr (a dependency): imported here, so other commands start faster
    from ..zarr.references import UnreferenceableWarning, kerchunk_references

    reader = open_reader(args.file, parse_storage_options(args.storage_option))
    url = args.url or (args.file if is_url(args.file) else Path(args.file).resolve().as_uri())
    with warnings.catch_warnings(record=True, category=UnreferenceableWarning) as caught:
        refs = kerchunk_references(reader, url)
    for warning in caught:
        print(f"hurray: warning: {warning.message}", file=sys.stderr)
    text = json.dumps(refs)
    if args.output is None:
        print(text)
        return 0
    if os.path.isdir(args.output):
        raise CliError(f"{args.output} is a directory; name the references file")
    Path(args.output).write_text(text + "\n", encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
