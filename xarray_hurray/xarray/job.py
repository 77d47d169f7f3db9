"""One write, resolved once and run: :class:`WriteJob`.

A job holds the input, the :class:`~xarray_hurray.write.target.WriteTarget` and the
:class:`~.request.WriteRequest`, checked against the input when it was made.
Running it (:meth:`WriteJob.write`) takes the target's writer lock; decides from the
mode and the file found what the write starts from
(:meth:`~.request.WriteRequest.start`), and reads that version of the file (the
*base*) once, or none; expands the overview levels against it (a new pyramid, or a
write into every level of the file's); resolves the write against it by one walk
over the input tree (:func:`~.planner.resolve_write`); makes the parts of the
resolved write (:func:`~.parts.write_parts`); has the sink chosen from the target
and the base (:func:`~xarray_hurray.write.sinks.choose_sink`); and runs the plan.
Everything the write decides is decided there, once, under the lock, from the
version it writes over.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
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
from .encoding import kept_settings, warn_kept_settings
from .overview_write import into_levels, new_pyramid, stored_attrs
from .parts import write_parts
from .planner import ResolvedWrite, join_path, resolve_write
from .request import Start, WriteRequest
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

    def given(self) -> InputTree:
        """The input as a tree rooted at the request's group, each node with its
        encoding; a Dataset is a tree of one node."""
        data = self.data if isinstance(self.data, xr.Dataset) else stored_attrs(self.data)
        return InputTree.of(data, self.request.encoding)

    def inputs(
        self, given: InputTree, base: ContainerReader | None, scratch: Callable[[], str] | None
    ) -> InputTree:
        """The tree to write: the input as ``given``, or the levels of a new pyramid of
        it, or the tree that writes it into every level of the pyramid ``base``
        holds.  With ``scratch`` (which makes a scratch directory), the coarser levels
        of a pyramid are computed there before anything is written (see
        :func:`~.overview_write.new_pyramid`); without it (a write checked, nothing
        written) they stay lazy."""
        request = self.request
        levels = None
        if base is not None:
            levels = into_levels(self.data, base.metadata, request, given.encoding, scratch)
        elif request.levels is not None:
            assert isinstance(self.data, xr.Dataset)  # the request refuses a tree
            levels = new_pyramid(self.data, request.levels, given.encoding, scratch)
        return given if levels is None else InputTree.of(*levels)

    def kept_settings(
        self, given: InputTree, base: ContainerReader | None
    ) -> dict[str, dict[str, Any]]:
        """The storage settings the input's variables keep from their own encoding in
        place of arguments the caller gave, by the variable's path in the input
        (:func:`~.encoding.kept_settings`), found on the input as ``given``, before
        any levels are made of it; the variables the file holds keep its settings and
        are left out."""
        settings = self.request.settings
        kept = {}
        for node in given.subtree():
            held = _held(base, join_path(self.request.group, node.path))
            found = kept_settings(
                node.own, node.encoding, settings.defaults, settings.chunk_bytes, held
            )
            kept.update({join_path(node.path, str(name)): v for name, v in found.items()})
        return kept

    def resolve(
        self, base: ContainerReader | None, scratch: Callable[[], str] | None = None
    ) -> ResolvedWrite:
        """The write resolved against ``base`` (None: a new file), once what it goes
        into is found (:meth:`~.request.WriteRequest.group_into`, before any level
        is made), after a warning for the arguments the input's own encoding took
        the place of."""
        root = base.metadata if base is not None else None
        held = self.request.group_into(root, str(self.target.location))
        given = self.given()
        warn_kept_settings(self.kept_settings(given, base), self.request.settings.defaults)
        return resolve_write(self.inputs(given, base, scratch), self.request, base, held)

    def plan(
        self, resolved: ResolvedWrite, base: ContainerReader | None, start: Start
    ) -> WritePlan:
        """The plan of ``resolved``, the write resolved against ``base`` (None: a new
        file, created where there is none when ``start`` says so): its parts, and the
        sink chosen for them."""
        settings = self.request.settings
        parts = write_parts(resolved, base, settings)
        written = {part.name: part.chunk_ids for part in parts} if base is not None else {}
        chosen = choose_sink(
            self.target,
            base,
            resolved.metadata,
            written,
            exclusive=start is Start.CREATE,
            part_bytes=settings.part_bytes,
        )
        if chosen.in_tasks:
            parts = [part.in_tasks() for part in parts]
        return WritePlan(resolved.metadata, parts, chosen.open, self.target.name)

    def _start(
        self, stack: contextlib.ExitStack, exists: bool, since: str | None
    ) -> tuple[Start, ContainerReader | None]:
        """What the write starts from, given whether a file ``exists`` (see
        :meth:`~.request.WriteRequest.start`), and the base it reads, open in
        ``stack``."""
        start = self.request.start(exists, str(self.target.location), since)
        if start is not Start.BASE:
            return start, None
        return start, stack.enter_context(self.target.open())

    def check(self) -> None:
        """Resolve the write against the file as it is now, writing nothing and making
        no part: a pending write fails now where it would fail when it runs (it is
        resolved again then, under the lock, against the version it finds, and only
        then planned)."""
        with contextlib.ExitStack() as stack:
            _, base = self._start(stack, self.target.exists(), None)
            self.resolve(base)

    def write(self) -> None:
        """Take the lock, read the base, resolve, plan, and write."""
        self._write_once("pending" if self.pending else None)

    def _write_once(self, since: str | None) -> None:
        """Write, from the file found now (``since``: see
        :meth:`~.request.WriteRequest.start`).  Where a new file finds one made
        meanwhile by another writer (its commit refused to replace it), the write
        starts again from that file, under its lock, once."""
        with contextlib.ExitStack() as stack:
            exists = stack.enter_context(self.target.lock())
            start, base = self._start(stack, exists, since)

            def scratch() -> str:
                return stack.enter_context(scratch_directory("hurray-overviews"))

            plan = self.plan(self.resolve(base, scratch), base, start)
            try:
                engine.execute(plan, window=self.request.window, progress=self.request.progress)
            except TargetExistsError:
                if start is not Start.CREATE or since == "written":
                    raise
            else:
                return
        self._write_once("written")
