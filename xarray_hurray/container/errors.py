"""The error raised for files that are not valid Hurray files."""


class HurrayFormatError(ValueError):
    """A file is not a valid Hurray file: wrong magic, unsupported version, bad
    checksum, truncation or an invalid description.  The message names the part."""
