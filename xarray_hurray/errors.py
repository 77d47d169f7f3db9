"""Every error this package raises on purpose, under one base, :class:`HurrayError`.

The module imports nothing from the package, so every layer (the numpy-only layout
core included) can raise these without depending on a layer above it.  Each class
also derives from the built-in exception it stood for before the common base
existed (``ValueError``, ``TypeError``, ``OSError``, ...), so code catching those
keeps working.

``except HurrayError`` catches the mistakes and damage this package detects and
describes; anything else escaping from it is a bug (or an error of the system or a
library below it) and deserves its traceback.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

_E = TypeVar("_E", bound=BaseException)


class HurrayError(Exception):
    """Base of the errors raised by xarray-hurray; the message names what is wrong.

    Parameters
    ----------
    message
        What is wrong, naming the input at fault.
    value
        The offending value, where there is one (a shape, a layout name, a codec
        configuration, a path); ``None`` otherwise.
    """

    def __init__(self, message: str, *, value: Any = None) -> None:
        super().__init__(message)
        self.value = value


class LayoutError(HurrayError, ValueError):
    """A layout descriptor, coordinate or curve index violates a rule of the format.

    The message names the violated rule, for example
    ``"hilbert constraint 1: shape[1] = 12 is not 2**hilbert_order = 16"``.
    """


class HurrayFormatError(HurrayError, ValueError):
    """A file is not a valid Hurray file: wrong magic, unsupported version, bad
    checksum, truncation or an invalid description.  The message names the part."""


class HurrayValueError(HurrayError, ValueError):
    """An argument, setting or dataset that cannot be used or stored as given: an
    unknown encoding key, a dtype or attribute the format cannot hold, chunks that do
    not fit, an invalid codec configuration or merge policy."""


class HurrayKeyError(HurrayError, KeyError):
    """A name that is not there: a variable or group a file lacks, a variable an
    encoding is given for that the dataset lacks, a coordinate ``region="auto"``
    needs.  It prints as its message: a plain :class:`KeyError` prints its argument
    in quotes, as a key."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class HurrayTypeError(HurrayError, TypeError):
    """An argument of the wrong type: a name that is not a string, an object that is
    neither a layout nor its description, a file object opened in text mode."""


class SourceChangedError(HurrayError, OSError):
    """The file behind a source was replaced or modified after it was first opened.

    :attr:`value` is the path of the file.
    """


class HurrayChangedError(SourceChangedError):
    """A file changed while a reader read it: an answer after the first no longer
    matches what the first read saw of the file (its size, ETag, Last-Modified or
    version id, its header's generation and checksums).  The message names what
    changed; open the file again to read the new version.

    Every source raises it where an answer's version differs from the one it pinned,
    and the reader where a read finds damage (a checksum mismatch, a chunk cut
    short) and a second read of the header shows another file, so that a replaced
    file is never reported as a damaged one.  A subclass of
    :class:`SourceChangedError`, which code written before it catches.

    :attr:`value` is the path or URL of the file.
    """


class TargetExistsError(HurrayError, FileExistsError):
    """A write that creates a file found one at its target when it came to put its own
    there: another writer made it meanwhile.  Nothing was replaced.

    :attr:`value` is the target.
    """


class SourceReadError(HurrayError, OSError):
    """A remote read failed on every attempt (timeouts, dropped connections, server
    errors, short bodies); no byte of a failed attempt is ever used.  The message
    names the last failure."""


class UnsupportedZarrError(HurrayError, RuntimeError):
    """The installed zarr-python lacks what the Hilbert shard hooks need.

    :attr:`value` is the zarr-python version found.
    """


class CliError(HurrayError):
    """A user mistake on the command line: printed as one line, and the command exits
    with :attr:`status`.

    Parameters
    ----------
    message
        What went wrong, naming the input at fault.
    status
        Exit status; 2 for usage mistakes.
    value
        The offending argument, where there is one.
    """

    def __init__(self, message: str, status: int = 2, *, value: Any = None) -> None:
        super().__init__(message, value=value)
        self.status = status


class RangeIgnoredWarning(UserWarning):
    """An HTTP server answered a range request with the whole file: the data read is
    right (the range is cut from it), but every read downloads everything."""


class SettingsKeptWarning(UserWarning):
    """A write kept the storage settings a variable carries in its encoding (from the
    file it was read from) in place of an argument the caller gave (``codecs``,
    ``chunk_order``, ``layout``): the variable's encoding wins, as documented."""


class AttrsDroppedWarning(UserWarning):
    """A write into variables a file or store already holds (an append, a region, an
    overwrite) kept their stored attributes, and the values given for some of them
    (a changed ``units``) were not written."""


class KernelFallbackWarning(RuntimeWarning):
    """numba is installed but its compiled chunk permutation failed (it could not
    write or load its cache, or compile for this processor): chunks are permuted by
    numpy instead, giving the same bytes more slowly.  Warned once per process."""


def in_context(err: _E, context: str) -> _E:
    """A copy of ``err`` whose message starts with ``context`` (such as the name of the
    variable being described), to be raised ``from err``.

    The copy keeps the type and the attributes of ``err`` (its :attr:`~HurrayError.value`
    too), so callers catching it see the same error with a fuller message, and the
    chain keeps the original with its traceback.
    """
    found = copy.copy(err)
    found.args = (f"{context}: {err}",)
    return found
