"""Attributes of Zarr conventions that a Hurray file holds as JSON text.

A Hurray file's attributes hold no JSON objects (an object among them stands for a
numpy array), so the objects that Zarr conventions put in a group's attributes
(``multiscales`` and its ``zarr_conventions`` entry, see docs/spec/overviews.md) are
stored as their JSON text, and decoded wherever the file is seen as Zarr.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

CONVENTION_ATTRS = ("multiscales", "zarr_conventions")
"""Group attributes holding JSON objects of Zarr conventions."""


def convention_attrs(attrs: Mapping[Any, Any]) -> dict[Any, Any]:
    """``attrs`` with the :data:`CONVENTION_ATTRS` held as JSON text decoded to the
    JSON values a Zarr group holds; text that is not JSON is kept as it is (someone
    else's attribute of that name)."""
    decoded = dict(attrs)
    for key in CONVENTION_ATTRS:
        if isinstance(decoded.get(key), str):
            try:
                decoded[key] = json.loads(decoded[key])
            except ValueError:
                pass
    return decoded
