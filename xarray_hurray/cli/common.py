"""What the subcommands share: the user-error type and opening a file named on the
command line."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..container import MAGIC, ContainerReader, has_magic
from ..container.tempfiles import leftovers
from ..errors import CliError
from ..io import ByteSource, is_url, open_source


def add_file_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``FILE_OR_URL`` argument and the repeatable ``--storage-option KEY=VALUE``."""
    parser.add_argument("file", metavar="FILE_OR_URL", help="a path or fsspec URL")
    parser.add_argument(
        "--storage-option",
        action="append",
        metavar="KEY=VALUE",
        help="fsspec storage option (VALUE parsed as JSON where it can be); repeatable",
    )


def parse_storage_options(items: Sequence[str] | None) -> dict[str, Any] | None:
    """``["key=value", ...]`` to a dict; values are JSON where they parse, else strings.

    Raises
    ------
    CliError
        For an item without ``=``.
    """
    if not items:
        return None
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"storage option {item!r} is not of the form key=value")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def open_checked_source(target: str, storage_options: dict[str, Any] | None) -> ByteSource:
    """The byte source of ``target`` once it is known to exist and to be a Hurray file.

    Raises
    ------
    CliError
        For a missing or unreadable file, or one that does not start with the magic.
    """
    if not is_url(target) and storage_options is None:
        if not os.path.exists(target):
            raise CliError(f"no such file: {target}")
        if os.path.isdir(target):
            raise CliError(f"{target} is a directory, not a Hurray file")
    source = open_source(target, storage_options)
    try:
        found = has_magic(source)
    except FileNotFoundError as err:
        raise CliError(f"no such file: {target}", value=target) from err
    except OSError as err:
        raise CliError(f"cannot read {target}: {err}", value=target) from err
    if not found:
        raise CliError(f"{target} is not a Hurray file (it does not start with {MAGIC!r})")
    return source


def unfinished_writes(target: str) -> list[str]:
    """The temporary files that unfinished writes to the local file ``target`` left
    beside it (writers no longer running, and version 0.1.0 writers of any age); the
    next write to ``target`` removes them (those of 0.1.0 once a day old)."""
    if is_url(target):
        return []
    return sorted(os.fspath(path) for path in leftovers(Path(target), legacy_age=0))


def unfinished_writes_note(found: list[str]) -> str | None:
    """A line naming the files ``found`` by :func:`unfinished_writes`, or None."""
    if not found:
        return None
    return (
        f"note: {len(found)} temporary file(s) of unfinished writes to this file: "
        f"{', '.join(found)}; the next write to it removes them, or delete them when "
        "no writer runs"
    )


def open_reader(target: str, storage_options: dict[str, Any] | None = None) -> ContainerReader:
    """The container reader of the Hurray file at ``target`` (a path or URL)."""
    return ContainerReader(open_checked_source(target, storage_options))


def variable_names(reader: ContainerReader, names: Sequence[str] | None) -> list[str]:
    """``names``, each checked to be the path of a variable of the file (as ``hurray
    info`` prints it: ``group/name``, ``name`` in the root; a leading ``/`` is taken
    too), or every variable's path.

    Raises
    ------
    CliError
        Naming the unknown variable and the ones the file holds.
    """
    known = [path for path, _ in reader.metadata.all_variables()]
    if not names:
        return known
    found = []
    for name in names:
        path = name if name in known else name.lstrip("/")
        if path not in known:
            raise CliError(f"no variable {name!r} in {reader.source.name}; it holds {known}")
        found.append(path)
    return found
