"""The ``hurray`` command: ``demo``, ``info``, ``convert``, ``plan`` and ``verify``."""

from .main import main

__all__ = ["main"]
