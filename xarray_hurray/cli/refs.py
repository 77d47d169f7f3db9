"""``hurray refs``: kerchunk references to a Hurray file, with standard Zarr codecs."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

from ..container import ContainerReader
from ..errors import CliError, HurrayValueError
from ..io import is_url
from .common import add_file_arguments, open_reader, parse_storage_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Give the parser of ``hurray refs`` its description and arguments."""
    parser.description = (
        "Write kerchunk references (Zarr v3 metadata, standard codecs) to "
        "the chunks of a Hurray file, for fsspec's reference file system, zarrita or any "
        "Zarr reader of references. Variables stored in another element layout than "
        "row-major, and text, are left out with a warning naming each. The references "
        "hold for the version of the file they were made from (their root group's "
        "attribute hurray_references names it): hurray compact, a rewrite or a region "
        "write moves or replaces chunks, and Zarr readers check no checksum, so "
        "references made before read wrong values. Make them again after any write, "
        "or check them with --check."
    )
    add_file_arguments(parser)
    parser.add_argument(
        "-o", "--output", metavar="REFS.json", help="where to write them (default: stdout)"
    )
    parser.add_argument(
        "--url",
        help="the file's URL written into the references (default: FILE_OR_URL as given, "
        "a local path as file:// and its absolute path, as fsspec reads it: not "
        "percent-encoded)",
    )
    parser.add_argument(
        "--check",
        metavar="REFS.json",
        help="write nothing; check references made before against the file as it is now "
        "(exit status 1, naming the stale keys, when any no longer gives what the file "
        "holds)",
    )
    parser.set_defaults(run=run)


def local_url(path: str) -> str:
    """The URL of the local file ``path`` in references: ``file://`` and its absolute
    path as it is.  fsspec does not percent-decode a ``file://`` URL, so an encoded one
    (``pathlib``'s ``as_uri``) names another file where the name holds a space, ``+``,
    ``%`` or non-ASCII text."""
    return "file://" + Path(path).resolve().as_posix()


def run(args: argparse.Namespace) -> int:
    """Write the references of ``args.file`` to ``args.output`` or standard output, or
    check those of ``args.check``."""
    # the module needs zarr (a dependency): imported here, so other commands start faster
    from ..zarr.references import UnreferenceableWarning, kerchunk_references

    reader = open_reader(args.file, parse_storage_options(args.storage_option))
    if args.check is not None:
        return check(reader, args.check)
    url = args.url or (args.file if is_url(args.file) else local_url(args.file))
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


def check(reader: ContainerReader, path: str) -> int:
    """Check the references in the file ``path`` against ``reader``'s file: 0 when
    they give what it holds, else 1, naming the keys that do not."""
    from ..zarr.references import stale_references

    try:
        refs = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CliError(f"cannot read references from {path}: {err}", value=path) from err
    try:
        stale = stale_references(reader, refs)
    except HurrayValueError as err:
        raise CliError(f"{path}: {err}", value=path) from err
    if not stale:
        print(f"{path}: the references give what {reader.source.name} holds")
        return 0
    shown = ", ".join(repr(key) for key in stale[:5]) + (", ..." if len(stale) > 5 else "")
    print(
        f"hurray: {path}: {len(stale)} references are stale (made from another version of "
        f"{reader.source.name}): {shown}; make them again",
        file=sys.stderr,
    )
    return 1
