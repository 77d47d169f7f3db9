"""Limits a reader enforces before it trusts sizes and counts taken from a file.

A file can declare anything; these caps keep a hostile or damaged file from making
the reader allocate memory that its bytes do not justify or recurse without end.
Writers check the same limits, so every file this package writes is readable.
"""

from __future__ import annotations

MAX_METADATA_BYTES = 64 * 2**20
"""Largest metadata a reader parses."""

MAX_NESTING = 32
"""Deepest nesting of JSON arrays and objects in the metadata."""

MAX_METADATA_CONTAINERS = 2**17
"""Most JSON arrays and objects in the metadata, by default: the reader's
``max_metadata_containers``, which a user may raise.  Each costs a reader far more
memory and time than its two bytes (about 100 bytes of Python objects per parse:
3 million empty lists in 9 MB would take a gigabyte), so they are counted before the
metadata is parsed.  Writers keep to the default."""

ATTRIBUTE_EXPANSION = 16
ATTRIBUTE_ALLOWANCE = 2**20
"""Numpy attributes together may decode to at most ``ATTRIBUTE_EXPANSION`` times the
metadata's bytes plus ``ATTRIBUTE_ALLOWANCE`` bytes.  Their items take at least two
bytes of JSON each, and no item of a numeric type decodes to more than 16 bytes; text
types are sized by their declared width, which the bound keeps from exceeding what
the metadata's bytes justify."""

MAX_RANK = 32
"""Most axes a variable may have (numpy allows 64)."""

MAX_LENGTH = 2**62
"""Longest axis: sizes stay far from the 64-bit limits of numpy indexing."""

MAX_CODECS = 8
"""Longest codec chain."""

MAX_CHUNK_BYTES = 2**31
"""Largest decoded chunk, padding included, in bytes: the most one chunk may
allocate.  For ``string`` variables this bounds the length table and text together."""
