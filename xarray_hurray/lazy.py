"""What importing the package defers: the public names that live in modules importing
xarray, dask or zarr, and the ``.hurray`` accessors, registered once xarray is loaded.

``import xarray_hurray`` runs before every submodule's import, so whatever it imports
every reader pays, :func:`xarray_hurray.open_reader` included.  It imports the format
(numpy and the codecs) and nothing else; the writers load on first use of their
names (:func:`lazy_attributes`, PEP 562), and the accessors wait for xarray
(:func:`register_accessors_with_xarray`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
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


class _RegisteringLoader(importlib.abc.Loader):
    """xarray's own loader, which registers the accessors once xarray has run."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # xarray runs with its own loader in place (it may read its files through
        # it): this one is only a way in, and its work is after.
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        # xarray is whole now (still flagged as being imported, which the import
        # system allows within this thread, the one holding its lock), so the accessor
        # module can use it.
        importlib.import_module(ACCESSOR_MODULE)


class _XarrayHook(importlib.abc.MetaPathFinder):
    """A finder, first on ``sys.meta_path``, that answers for ``xarray`` alone: it asks
    the finders after it for xarray's spec and wraps the loader in a
    :class:`_RegisteringLoader`, then takes itself off the path."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "xarray":
            return None
        for finder in sys.meta_path:
            # (the import system skips a finder without find_spec: so does this)
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None  # no xarray: stay, in case one is installed later in the process
        if spec.loader is not None:  # (None: a namespace package, nothing runs to wrap)
            spec.loader = _RegisteringLoader(spec.loader)
        # The import system iterates over sys.meta_path itself while it calls this:
        # leaving it is safe here only because a spec is returned, which ends that loop
        # (leaving on a None would make it skip the finder after this one).
        sys.meta_path.remove(self)
        return spec


def register_accessors_with_xarray() -> None:
    """Register the ``.hurray`` accessors now if xarray is loaded, else when it is.

    A process that never imports xarray never imports the accessors (nor xarray).
    xarray's import would see this package only through an entry point, which it loads
    long after its own import, so xarray in ``sys.modules`` is a complete xarray.
    """
    if "xarray" in sys.modules:
        importlib.import_module(ACCESSOR_MODULE)
    elif not any(isinstance(finder, _XarrayHook) for finder in sys.meta_path):
        sys.meta_path.insert(0, _XarrayHook())
