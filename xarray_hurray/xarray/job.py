"""One write, resolved once and run: :class:`WriteJob`.

A job holds the input, the :class:`~xarray_hurray.write.target.WriteTarget` and the
:class:`~.request.WriteRequest`.  Running it takes the target's writer lock, reads
the file's current version (the *base*) once, or none where there is no file or
the write replaces it whole; expands the overview levels against that base (a new
pyramid, or a write into every level of the file's); plans the new version
against the base (:func:`~.planner.plan_write`); has the sink chosen from the
target and the base (:func:`~xarray_hurray.write.sinks.choose_sink`); and runs the
plan.  Everything the write decides is decided there, under the lock, from the
version it writes over.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import xarray as xr

from ..container import ContainerReader
from ..container.tempfiles import scratch_directory
from ..errors import TargetExistsError
from ..write import engine
from ..write.plan import WritePlan
from ..write.sinks import choose_sink
from ..write.target import WriteTarget
from .backend import finest_level
from .encoding import group_encoding, kept_settings, warn_kept_settings
from .overview_write import into_levels, new_pyramid, stored_attrs
from .planner import join_path, plan_write
from .request import WriteRequest
from .tree import InputTree


def _held(base: ContainerReader | None, path: str) -> set[str]:
    """The names of the variables the group at ``path`` of the file ``base`` holds, and
    those of its level 0 where it is a pyramid's root (a write into it goes to every
    level); none where there is no such group."""
    if base is None:
        return set()
    try:
        group = base.metadata.group(path)
    except KeyError:
        return set()
    names = {var.name for var in group.variables}
    finest = finest_level(group)
    if finest:
        names |= {var.name for var in base.metadata.group(join_path(path, finest)).variables}
    return names


@dataclass(frozen=True, eq=False)
class WriteJob:
    """A write of ``data`` to ``target`` as ``request`` asks; run now (:meth:`write`) or
    later as a Dask task (``dask.delayed(job.write)``, ``pending``), the same job either
    way."""

    data: xr.Dataset | xr.DataTree
    target: WriteTarget
    request: WriteRequest
    pending: bool = False

    def inputs(
        self, base: ContainerReader | None, scratch: Callable[[], str] | None
    ) -> tuple[InputTree, WriteRequest]:
        """The tree to write, rooted at the request's group, and the request with its
        encoding by group path: the input, or the levels of a new pyramid of it, or
        the tree that writes it into every level of the pyramid ``base`` holds.  With
        ``scratch`` (which makes a scratch directory), the coarser levels of a pyramid
        are computed there before anything is written (see :func:`new_pyramid`);
        without it (a plan that writes nothing) they stay lazy."""
        data, request = self.data, self.request
        settings = request.settings
        if base is not None:
            data = into_levels(
                data, base.metadata, request.group, request.append_dim, request.region,
                request.levels, scratch,
            )  # fmt: skip
        elif request.levels is not None:
            tree, encoding = new_pyramid(data, request.levels, settings.encoding, scratch)
            request = replace(request, settings=replace(settings, encoding=encoding))
            return InputTree.of(tree), request
        if isinstance(data, xr.Dataset):
            # a Dataset is a tree of one node, its encoding that node's
            request = replace(
                request, settings=replace(settings, encoding={"/": settings.encoding})
            )
            return InputTree.of(data), request
        return InputTree.of(stored_attrs(data)), request

    def kept_settings(self, base: ContainerReader | None) -> dict[str, dict[str, Any]]:
        """The storage settings the input's variables keep from their own encoding in
        place of arguments the caller gave, by the variable's path in the input
        (:func:`~.encoding.kept_settings`), found on the input as given, before any
        levels are made of it; the variables the file holds keep its settings and
        are left out."""
        request = self.request
        settings = request.settings
        tree = InputTree.of(self.data)
        if isinstance(self.data, xr.Dataset):
            encoding: Mapping[str, Mapping[Hashable, Any]] = {"": settings.encoding}
        else:
            encoding = group_encoding(tree, settings.encoding)
        kept = {}
        for node in tree.subtree():
            held = _held(base, join_path(request.group, node.path))
            found = kept_settings(
                node.own, encoding.get(node.path, {}), settings.defaults, settings.chunk_bytes, held
            )
            kept.update({join_path(node.path, str(name)): v for name, v in found.items()})
        return kept

    def plan(
        self, base: ContainerReader | None, scratch: Callable[[], str] | None = None
    ) -> WritePlan:
        """The plan of the write against ``base`` (None: a new file), after a warning
        for the arguments the input's own encoding took the place of."""
        warn_kept_settings(self.kept_settings(base), self.request.settings.defaults)
        tree, request = self.inputs(base, scratch)
        metadata, parts = plan_write(tree, request, base)
        written = {part.name: part.chunk_ids for part in parts} if base is not None else {}
        chosen = choose_sink(
            self.target,
            base,
            metadata,
            written,
            exclusive=request.exclusive,
            part_bytes=request.settings.part_bytes,
        )
        if chosen.in_tasks:
            parts = [part.in_tasks() for part in parts]
        return WritePlan(metadata, parts, chosen.open, self.target.name)

    def reads_base(self, exists: bool) -> bool:
        """Whether the write starts from the file at the target (when there is one):
        a write into it, or of one of its groups.  A write of a whole file replaces
        it without reading it.

        Raises
        ------
        FileExistsError
            With ``"w-"`` of the whole file, when there is a file.
        FileNotFoundError
            When the write needs a file to write into and there is none.
        """
        request = self.request
        if exists and request.refuses_existing and not request.group:
            where = str(self.target.location)
            if self.pending:  # checked when it was asked for: made since
                raise TargetExistsError(
                    f"{where}: another writer created a file there while this one was "
                    "pending; it was left as it is",
                    value=where,
                )
            raise FileExistsError(errno.EEXIST, "a file exists at the target (mode='w-')", where)
        if not exists and request.into_file and request.needs_file:
            with self.target.open():  # raises the reader's own error
                pass
        return exists and (request.into_file or bool(request.group))

    def check(self) -> None:
        """Plan the write against the file as it is now, writing nothing: a pending
        write fails now where it would fail when it runs (it plans again then, under
        the lock, against the version it finds)."""
        with contextlib.ExitStack() as stack:
            base = None
            if replace(self, pending=False).reads_base(self.target.exists()):
                base = stack.enter_context(self.target.open())
            self.plan(base)

    def write(self) -> None:
        """Take the lock, read the base, plan, and write.  Where a new file finds one
        made meanwhile by another writer (its exclusive commit refused to replace
        it), the write is planned again into that file, under its lock; ``"w-"``
        fails instead."""
        try:
            self._write_once()
        except TargetExistsError:
            if self.request.refuses_existing and not self.request.group:
                raise
            self._write_once()

    def _write_once(self) -> None:
        with contextlib.ExitStack() as stack:
            exists = stack.enter_context(self.target.lock())
            base = None
            if self.reads_base(exists):
                base = stack.enter_context(self.target.open())

            def scratch() -> str:
                return stack.enter_context(scratch_directory("hurray-overviews"))

            plan = self.plan(base, scratch)
            engine.execute(plan, window=self.request.window, progress=self.request.progress)
