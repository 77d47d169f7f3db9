"""Attributes of Zarr conventions that a Hurray file holds as JSON text.

A Hurray file's attributes hold no JSON objects (an object among them stands for a
numpy array), so the objects that Zarr conventions put in a group's attributes
(``multiscales`` and its ``zarr_conventions`` entry, see docs/spec/overviews.md) are
stored as their JSON text, and decoded wherever the file is seen as Zarr.

The text comes from a file, so it is parsed within limits of its own: the metadata's
limits count the brackets of the metadata's JSON, not those inside its strings, and a
text of deep nesting or millions of arrays would otherwise reach the parser (a
``RecursionError``, or a gigabyte of Python objects for a 24 MB text).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..container.metadata import load_json
from ..errors import HurrayFormatError, in_context

CONVENTION_ATTRS = ("multiscales", "zarr_conventions")
"""Group attributes holding JSON objects of Zarr conventions."""

MAX_ATTRIBUTE_JSON_BYTES = 2**20
"""Longest JSON text of an attribute that is parsed (1 MiB: the ``multiscales``
object of a pyramid of 30 levels is about 5 KB)."""

MAX_ATTRIBUTE_JSON_CONTAINERS = 2**14
"""Most JSON arrays and objects in such a text (a level of a ``multiscales`` layout
holds four)."""


def load_attribute_json(name: str, text: str) -> Any:
    """The JSON value of the text of attribute ``name``, parsed strictly (no NaN, no
    repeated keys) within :data:`MAX_ATTRIBUTE_JSON_BYTES`, the metadata's nesting
    depth and :data:`MAX_ATTRIBUTE_JSON_CONTAINERS`.

    Raises
    ------
    HurrayFormatError
        For text that is not such JSON, naming the attribute and what is wrong.
    """
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > MAX_ATTRIBUTE_JSON_BYTES:
        raise HurrayFormatError(
            f"the attribute {name!r} holds {len(data)} bytes of text, more than the "
            f"{MAX_ATTRIBUTE_JSON_BYTES} its JSON may have",
            value=name,
        )
    try:
        return load_json(data, MAX_ATTRIBUTE_JSON_CONTAINERS)
    except HurrayFormatError as err:
        raise in_context(err, f"the attribute {name!r}") from err


def convention_attrs(attrs: Mapping[Any, Any]) -> dict[Any, Any]:
    """``attrs`` with the :data:`CONVENTION_ATTRS` held as JSON text decoded to the
    JSON values a Zarr group holds; text that is not such JSON (someone else's
    attribute of that name, or text past the limits of :func:`load_attribute_json`)
    is kept as it is."""
    decoded = dict(attrs)
    for key in CONVENTION_ATTRS:
        if isinstance(decoded.get(key), str):
            try:
                decoded[key] = load_attribute_json(key, decoded[key])
            except HurrayFormatError:
                pass
    return decoded
