"""The Hurray container: one file holding a dataset's metadata, chunk indexes and chunks.

- :class:`ContainerWriter`: streams chunks in placement order into an atomic write.
- :class:`ContainerReader`: plans merged range reads for outer selections;
  :func:`open_reader` opens one for a path, URL, file object or byte source.
- :class:`DatasetMeta`, :class:`VariableMeta`: the validated description.
- :class:`HurrayFormatError`: everything that makes a file unreadable.
- :func:`verify_file`: every problem of a file, checked end to end.
"""

from typing import TYPE_CHECKING

from ..errors import HurrayFormatError
from ..lazy import lazy_attributes
from .chunk import ChunkCodec
from .codecs import ALLOWED_CODECS, parse_codecs
from .elements import element_type
from .format import MAGIC, VERSION
from .metadata import DatasetMeta, VariableMeta, parse_metadata
from .open_reader import has_magic, open_reader
from .reader import ContainerReader

if TYPE_CHECKING:
    from .verify import verify_file
    from .writer import ContainerWriter

__all__ = [
    "ALLOWED_CODECS",
    "MAGIC",
    "VERSION",
    "ChunkCodec",
    "ContainerReader",
    "ContainerWriter",
    "DatasetMeta",
    "HurrayFormatError",
    "VariableMeta",
    "element_type",
    "has_magic",
    "open_reader",
    "parse_codecs",
    "parse_metadata",
    "verify_file",
]

# The writer and verify load on first use: opening a file for reading needs neither.
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "ContainerWriter": "xarray_hurray.container.writer",
        "verify_file": "xarray_hurray.container.verify",
    },
)
