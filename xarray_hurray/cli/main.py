"""The ``hurray`` command line: argument parsing, dispatch, and errors as one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from ..container import HurrayFormatError
from ..layout import LayoutError
from . import convert, demo, info, plan, verify
from .common import CliError

USER_ERRORS = (CliError, HurrayFormatError, LayoutError, ValueError, TypeError, KeyError, OSError)
"""Exceptions reported as one line and exit status 2 (or the :class:`CliError`'s own)."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see: {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``hurray`` and its subcommands."""
    parser = Parser(
        prog="hurray",
        description="Hilbert- and Morton-ordered N-D array storage: write, inspect, "
        "convert, plan and verify Hurray files.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for module in (demo, info, convert, plan, verify):
        module.add_parser(commands)
    return parser


def _message(err: BaseException) -> str:
    text = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
    if isinstance(err, OSError) and err.filename is not None:
        text = f"{err.strerror or err}: {err.filename}"
    return str(text).splitlines()[0] if str(text) else type(err).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hurray`` with ``argv`` (default: the process's arguments).

    Returns
    -------
    int
        The exit status: 0 on success, 1 when ``verify`` finds damage, 2 for a user
        mistake (bad arguments, a missing or foreign file, an unknown variable).
    """
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except USER_ERRORS as err:
        print(f"hurray: error: {_message(err)}", file=sys.stderr)
        return err.status if isinstance(err, CliError) else 2
    except KeyboardInterrupt:
        print("hurray: interrupted", file=sys.stderr)
        return 130
