"""The ``hurray`` command line: argument parsing, dispatch, and errors as one line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from ..errors import CliError, HurrayError
from . import compact, convert, demo, info, plan, refs, verify

USER_ERRORS = (
    HurrayError,
    FileNotFoundError,
    FileExistsError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)
"""Exceptions reported as one line and exit status 2 (or the :class:`CliError`'s own):
the package's own errors, which name the input at fault, and the operating system's
refusals a user can fix.  Anything else is a bug and keeps its traceback."""

REMOTE_PACKAGES = frozenset(
    {"botocore", "aiobotocore", "s3fs", "gcsfs", "google", "adlfs", "azure", "aiohttp"}
    | {"fsspec", "obstore", "requests", "urllib3"}
)
"""Packages whose exceptions (credentials, networks, permissions) are reported as one
line like user errors: they say why remote data cannot be reached, not a bug here."""

BROKEN_PIPE_STATUS = 141
"""Exit status when the reader of standard output goes away (as for SIGPIPE, 128 + 13)."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see: {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``hurray`` and its subcommands."""
    parser = Parser(
        prog="hurray",
        description="Hilbert- and Morton-ordered N-D array storage: write, inspect, "
        "convert, plan, verify and reference Hurray files.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for module in (demo, info, convert, plan, verify, compact, refs):
        module.add_parser(commands)
    _add_view(commands)
    return parser


def _add_view(commands: argparse._SubParsersAction[Parser]) -> None:
    """Register ``hurray view``; its module (an HTTP server) is imported when it runs."""
    parser = commands.add_parser(
        "view",
        help="show a Hurray file on a map in the browser",
        description="Serve the viewer page and FILE on 127.0.0.1 (Range requests "
        "included), print the page's URL and open it in a browser. A URL is not served: "
        "the page reads it directly, which its server must allow (CORS).",
    )
    parser.add_argument("file", metavar="FILE_OR_URL", help="a local Hurray file, or its URL")
    parser.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    parser.add_argument("--no-open", action="store_true", help="print the URL only")
    parser.set_defaults(run=_run_view)


def _run_view(args: argparse.Namespace) -> int:
    from . import view

    return view.run(args)


def _message(err: BaseException) -> str:
    text = str(err)
    if isinstance(err, OSError) and err.filename is not None:
        text = f"{err.strerror or err}: {err.filename}"
    return str(text).splitlines()[0] if str(text) else type(err).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hurray`` with ``argv`` (default: the process's arguments).

    Returns
    -------
    int
        The exit status: 0 on success, 1 when ``verify`` finds damage, 2 for anything
        else that stops the command (bad arguments, a missing or foreign file, an
        unknown variable, a missing package, remote data that cannot be reached, such
        as for want of credentials), 141 when standard output is closed early.
    """
    try:
        args = build_parser().parse_args(argv)
        status: int = args.run(args)
        return status
    except BrokenPipeError:
        # `hurray info f | head`: the reader has what it wanted.  Point standard output
        # at nothing, so that flushing it at exit does not fail again, and stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return BROKEN_PIPE_STATUS
    except USER_ERRORS as err:
        print(f"hurray: error: {_message(err)}", file=sys.stderr)
        return err.status if isinstance(err, CliError) else 2
    except ImportError as err:
        print(f"hurray: error: a package this needs is missing: {_message(err)}", file=sys.stderr)
        return 2
    except Exception as err:
        if type(err).__module__.partition(".")[0] not in REMOTE_PACKAGES:
            raise  # a bug: its traceback is what a report needs
        print(f"hurray: error: {type(err).__name__}: {_message(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hurray: interrupted", file=sys.stderr)
        return 130
