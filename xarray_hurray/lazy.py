"""What importing the package defers: the public names that live in modules importing
xarray, dask or zarr, and the ``.hurray`` accessors, which need xarray.

``import xarray_hurray`` runs before every submodule's import, so whatever it imports
every reader pays, :func:`xarray_hurray.open_reader` included.  It imports the format
(numpy and the codecs) and nothing else; the writers load on first use of their
names (:func:`lazy_attributes`, PEP 562), and the accessors are registered at once if
xarray is loaded (:func:`register_accessors_if_xarray_is_loaded`), else when xarray
loads the engine (``xarray/entrypoint.py``, at its first open of any file).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

ACCESSOR_MODULE = "xarray_hurray.xarray.accessor"
"""The module whose import registers ``Dataset.hurray``, ``DataArray.hurray`` and
``DataTree.hurray`` (a module runs once, so they are registered once)."""


def lazy_attributes(
    package: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` for ``names``,
    each public name mapped to the module (absolute) that defines it.

    The module is imported at the first look-up of one of its names, and the value is
    then kept in the package's namespace, so ``__getattr__`` runs once per name.
    """
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        try:
            module = names[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names})

    return __getattr__, __dir__


def register_accessors_if_xarray_is_loaded() -> None:
    """Register the ``.hurray`` accessors now if xarray is loaded; else do nothing.

    Importing :data:`ACCESSOR_MODULE` registers them with xarray's own decorators, as
    any package with accessors does; the import system runs a module once, under its
    lock, so they are registered once whichever thread gets there first, and a
    failed import leaves nothing behind to get in the way of the next.  xarray in
    ``sys.modules`` may still be running in another thread: the accessor module's
    ``import xarray`` then waits for it.  ``None`` there is an environment that
    blocks xarray, where the package still reads.
    """
    if sys.modules.get("xarray") is not None:
        importlib.import_module(ACCESSOR_MODULE)
