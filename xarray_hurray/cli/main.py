"""The ``hurray`` command line: argument parsing, dispatch, and errors as one line."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from ..errors import CliError, HurrayError

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


COMMANDS = {
    "demo": "write a built-in dataset in each layout and count the requests of region reads",
    "info": "variables, chunks, layout, sizes and attributes of a Hurray file",
    "convert": "netCDF, Zarr or Hurray in; Hurray, Zarr (hurray codec) or netCDF out",
    "plan": "byte ranges a region read fetches, merged and raw, per chunk order",
    "verify": "check every checksum; exit status 0 when all match, 1 when not",
    "compact": "rewrite a file with every chunk in curve order and no unreferenced bytes",
    "refs": "write kerchunk references that Zarr readers open without this package",
    "view": "show a Hurray file on a map in the browser",
}
"""Each command and its line in ``hurray --help``.  A command's module (of the same
name in this package) gives its arguments and runs it; it is imported only when that
command is given, as most import xarray, dask or zarr, and none is needed to list them."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of ``hurray``, with the arguments of ``command`` alone (the others
    listed by name and help line)."""
    parser = Parser(
        prog="hurray",
        description="Hilbert- and Morton-ordered N-D array storage: write, inspect, "
        "convert, plan, verify and reference Hurray files.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for name, line in COMMANDS.items():
        subparser = commands.add_parser(name, help=line)
        if name == command:
            importlib.import_module(f"{__package__}.{name}").add_arguments(subparser)
    return parser


def given_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first argument that is no option (``hurray``'s
    own options, ``--help`` and ``--version``, take no value), or None."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


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
        given = sys.argv[1:] if argv is None else argv
        args = build_parser(given_command(given)).parse_args(given)
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
