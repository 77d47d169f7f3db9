"""The sinks of a write, and the one function that chooses which one takes it.

The sinks of the write pipeline live here, one to a module, and this module only
exports them.  The format's primitives they build on stay in
:mod:`xarray_hurray.container`, which the layers keep below this package: the
protocol (:mod:`~xarray_hurray.container.sink`), the new-file writer
(``ContainerWriter``) and the in-place update of a base (``InPlaceCommit``); the
last two take a write as they are in two rows of the table below (docs/design.md,
"Where a sink lives", gives the rule).

Every sink follows :class:`~xarray_hurray.container.sink.ChunkSink` (the chunks come
to the writing process) or :class:`~xarray_hurray.container.sink.TaskSink` (the
tasks that encode the chunks write them).  :func:`choose_sink` decides from the
target and the base (the version the write starts from; none for a new file):

=====================  ==========================  =================================
target                 base                        sink
=====================  ==========================  =================================
local path             none                        ``ContainerWriter``
``s3://`` object       none                        ``ObjectUpload`` (task sink)
other remote           none                        ``StagedUpload(ContainerWriter)``
local path             any                         ``InPlaceCommit(FileAppend)``
local path             ``compact``                 ``StagedRewrite``
``s3://`` object       two parts large             ``InPlaceCommit(ObjectAppend)``
any other remote       any                         ``StagedUpload(StagedRewrite)``
=====================  ==========================  =================================

- :mod:`.choice`: :func:`~.choice.choose_sink`, the table above.
- :mod:`.compact`: :func:`~.compact.compact`, ``hurray compact``.
- :mod:`.rewrite`: :class:`~.rewrite.StagedRewrite`, a new version written whole,
  the chunks it keeps copied from the base.
- :mod:`.staged`: :class:`~.staged.StagedUpload`, a file built locally and uploaded
  whole at the commit.
- :mod:`.parts`: :class:`~.parts.ObjectUpload`, a new ``s3://`` object as one
  multipart upload whose parts the tasks upload.
- :mod:`.append`: :class:`~.append.FileAppend` and :class:`~.append.ObjectAppend`,
  where an in-place commit puts a new version's bytes.
"""

from .append import FileAppend, ObjectAppend
from .choice import ChosenSink, choose_sink
from .compact import compact
from .parts import ObjectUpload, PartLayout
from .rewrite import StagedRewrite
from .staged import StagedUpload

__all__ = [
    "ChosenSink",
    "FileAppend",
    "ObjectAppend",
    "ObjectUpload",
    "PartLayout",
    "StagedRewrite",
    "StagedUpload",
    "choose_sink",
    "compact",
]
