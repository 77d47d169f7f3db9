"""Errors of byte sources: a file that changed under a reader, a read that kept failing."""


class SourceChangedError(OSError):
    """The file behind a source was replaced or modified after it was first opened."""


class SourceReadError(OSError):
    """A remote read failed on every attempt (timeouts, dropped connections, server
    errors, short bodies); no byte of a failed attempt is ever used."""
