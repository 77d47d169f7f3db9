"""The module that xarray's ``xarray.backends`` entry point names (pyproject.toml): the
``hurray`` engine, and on the way the ``.hurray`` accessors.

xarray imports the modules of every engine's entry point at its first open of any file
(``xr.open_dataset``, ``open_datatree``, ...), whatever its user imported before, so
the accessors are registered here wherever xarray has opened a file, even after an
``import xarray_hurray`` that ran before xarray's (docs/design.md, "Imports").  The
backend stays a module of its own: the write path reads existing files through it,
and the accessors' methods reach the write path.
"""

from . import accessor  # noqa: F401  (importing it registers the accessors)
from .backend import HurrayBackendEntrypoint

__all__ = ["HurrayBackendEntrypoint"]
