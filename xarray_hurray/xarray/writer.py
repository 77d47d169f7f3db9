"""``to_hurray``: the dispatch of a write, a new file or an update of one, to the
route that writes it."""

from __future__ import annotations

import enum
import errno
import os
import warnings
from collections.abc import Hashable, Mapping, Sequence
from functools import partial
from typing import Any, cast

import xarray as xr
from dask.delayed import Delayed, delayed

from ..container.codecs import CodecSpec
from ..container.tempfiles import writable_target
from ..errors import HurrayValueError, TargetExistsError
from ..io import UploadTarget, upload_target
from ..io.multipart import DEFAULT_PART_BYTES, multipart_target
from ..layout import Layout
from ..write import engine
from ..write.engine import DEFAULT_WINDOW, check_window
from ..write.multipart import multipart_plan
from ..write.plan import WritePart, WritePlan, aligned_chunks
from ..write.sinks import new_file_sink, target_name
from .dataarray import array_dataset
from .encoding import DEFAULT_CHUNK_BYTES, describe_at, describe_group, describe_tree, group_path
from .overview_write import LevelsRequest, stored_attrs, write_with_overviews
from .update import PendingUpdate, Region, choose_mode, target_exists


class _NotGiven(enum.Enum):
    """Marks an argument left out (where ``None`` is a meaningful value)."""

    NOT_GIVEN = enum.auto()


def _check_local_target(path: str | os.PathLike[str]) -> None:
    """Refuse, before any work, a local target the finished file cannot replace."""
    writable_target(path)  # a FIFO, device or socket
    if os.path.isdir(path):
        raise IsADirectoryError(
            errno.EISDIR, "cannot write a Hurray file over a directory", os.fspath(path)
        )
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(errno.ENOENT, "no directory to write the file in", parent)


def to_hurray(
    ds: xr.Dataset | xr.DataArray | xr.DataTree,
    path: str | os.PathLike[str] | UploadTarget,
    *,
    encoding: Mapping[Hashable, Mapping[str, Any]] | None = None,
    layout: str | Mapping[str, Any] | Layout = "row-major",
    chunk_order: str = "hilbert",
    codecs: CodecSpec | Sequence[CodecSpec] = "zstd",
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    compute: bool = True,
    progress: bool | None = None,
    window: int = DEFAULT_WINDOW,
    storage_options: Mapping[str, Any] | None = None,
    write_empty_chunks: bool = False,
    part_bytes: int = DEFAULT_PART_BYTES,
    compressor: CodecSpec | Sequence[CodecSpec] | _NotGiven = _NotGiven.NOT_GIVEN,
    mode: str | None = None,
    append_dim: Hashable | None = None,
    region: Region | None = None,
    safe_chunks: bool = True,
    group: str | None = None,
    overviews: int | Sequence[int] | None = None,
    overview_dims: Sequence[Hashable] | None = None,
    resampling: str | Mapping[Hashable, str] | None = None,
) -> Delayed | None:
    """Write ``ds`` (a Dataset, a DataArray, or a DataTree whose nodes become groups)
    to a Hurray file at ``path``, or into the file there.

    Variables are CF-encoded with xarray's conventions (times, ``_FillValue``,
    ``scale_factor``/``add_offset``, ``coordinates``) and stored chunk by chunk.
    Everything is checked before the first byte is written, and the file appears at
    ``path``, or changes, at one instant once the write is complete.

    Parameters
    ----------
    ds
        The dataset.  A DataArray is written as ``DataArray.to_netcdf`` and
        ``DataArray.to_zarr`` write it, so that ``xr.open_dataarray`` reads it back
        with its name: as the one variable of a dataset, called
        ``"__xarray_dataarray_variable__"`` if it has no name or the name of one of
        its coordinates or dimensions (the name then kept in the attribute
        ``"__xarray_dataarray_name__"``).
    path
        The file to create or replace: a local path, a URL (``"s3://..."``,
        ``"memory://..."``, any fsspec file system that writes) or an upload target
        such as :class:`~xarray_hurray.io.obstore_source.ObstoreSource`.  An ``s3://``
        URL is written as one multipart upload whose parts the Dask workers (or
        the local scheduler's threads) upload as they encode them; other remote
        files are written to a local temporary file and uploaded whole once
        complete.
    encoding
        For a DataTree: a mapping of group paths (``"/a/b"``) to such settings of
        their variables.  Per-variable settings: the CF keys of ``to_netcdf`` and ``to_zarr``
        (``dtype``, ``_FillValue``, ``missing_value``, ``scale_factor``,
        ``add_offset``, ``units``, ``calendar``) and ``chunks``, ``layout``,
        ``chunk_order``, ``chunk_axes`` (dimension names the chunk curve runs over;
        the others stay outermost; by default every dimension but those cut one
        element per chunk, such as time steps, see :func:`default_chunk_axes`) and
        ``codecs``, which override the arguments.
        The old key ``compressor`` is still taken for ``codecs``, with a
        :class:`DeprecationWarning`, until the next release.
        A variable without an entry here uses its own ``encoding``, less the storage
        settings read from a file that no longer fit it (chunks of another rank, the
        layout fitted to them, chunk axes naming dimensions it lacks).
    layout
        Element layout of every chunk: ``"row-major"`` (the default: the file's
        reader decodes every chunk whole, so a curve inside one gains nothing, see
        :func:`~xarray_hurray.layout.default_layout`), ``"hilbert"``, ``"morton"``,
        ``"auto"`` (Hilbert where the chunk shape is a power-of-two cube, else
        Morton), a layout config or a :class:`~xarray_hurray.layout.Layout`.
    chunk_order
        Curve along which chunks are placed: ``"hilbert"``, ``"morton"`` or ``"row-major"``.
    codecs
        Codec chain: ``None``, a name in ``("zstd", "lz4", "zlib", "blosc")``, a
        numcodecs config or codec, or a list of those.
    chunk_bytes
        Target chunk size in bytes when neither encoding nor dask chunks set it.
    compute
        Write now; if False, return a :class:`dask.delayed.Delayed` whose computation
        performs the whole write.
    progress
        Draw a progress bar on standard error; by default, when it is a terminal.
    window
        Encoded stored chunks of dask-backed variables in flight per Dask worker.
        Each dask chunk is encoded by one task, the dask chunks run in batches of
        at least one per worker and ``workers * window`` stored chunks, and the
        encoded chunks are appended in placement order, so memory stays near
        ``workers * window`` stored chunks or ``workers`` dask chunks, whichever is
        more.  Each batch computes what its chunks need; results later batches use
        again (a reduction) are kept for them, up to 256 MiB, rather than recomputed.
    storage_options
        fsspec options for a URL ``path`` (credentials, endpoint).
    write_empty_chunks
        Store chunks whose every element is the variable's fill value (its encoded
        ``_FillValue``, else zero or the empty string), as zarr's option of that
        name.  By default they are left out and read back as the fill value; the
        comparison is byte for byte, so no value read back ever differs.
    part_bytes
        For an ``s3://`` target: bytes of input (before compression) per uploaded
        part, what one worker holds while it builds a part (at least 5 MiB; raised
        when the output would need more than 10,000 parts).
    compressor
        Deprecated old name of ``codecs``, taken in its place with a
        :class:`DeprecationWarning` until the next release.
    mode
        As in ``to_zarr``: ``"w"`` creates or replaces the file, ``"w-"`` creates it
        and fails if it exists, ``"a"`` writes into it (variables it holds are
        overwritten, or extended along ``append_dim``; new ones added; it is created if
        missing and there is no ``append_dim``), ``"a-"`` is ``"a"`` except that
        variables without ``append_dim`` it holds are left alone, and ``"r+"`` writes
        only into variables it holds.  Into a file with overviews, a Dataset is
        written into every level, made as the file's levels were (see
        ``overviews``).  By default ``"a"`` with ``append_dim``,
        ``"r+"`` with ``region`` and ``"w"`` otherwise.  A write into a file takes its
        writer lock, encodes only the chunks that change, and commits at one instant;
        storage settings (``encoding``, ``layout``, ``codecs``...) apply to new
        variables only, the others keep the file's.  A DataTree is written into the
        file group by group, all in one commit (see
        :func:`~xarray_hurray.xarray.update.plan_tree_update`): a node the file has
        no group for becomes one (not with ``"r+"`` or ``region``), groups the tree
        does not hold are kept.
    append_dim
        The dimension to extend: the dataset's values along it go after the file's.
    region
        Where in the file the dataset goes: a slice per dimension, ``"auto"`` for a
        dimension (or for every one) to find it from the coordinates the file holds.
        Coordinates indexing the dataset are not written.  A region may start and
        end inside stored chunks: the stored values of the rest of each chunk it
        touches are read and the chunks rewritten whole, in the same commit.
    safe_chunks
        As ``to_zarr``'s: refuse dask chunks that would share a stored chunk, where
        two dask tasks would each hold a part of it (every dask chunk must end where
        a stored chunk ends, but for the last one, and for a region or an append the
        first one may start inside a stored chunk).  With ``False`` such dask
        chunks are regrouped along the stored chunks instead (each boundary inside a
        stored chunk moved to its end), so that each stored chunk is still encoded
        by one task from all its values.
    group
        Write ``ds`` as the group at this path of the file (``"a/b"``; a DataTree's
        root goes there, its nodes below), as ``to_zarr(group=...)`` does: with
        ``mode="w"`` the group, and the groups below it, are replaced; ``"w-"``
        refuses a group the file holds; ``"a"``, ``"a-"`` and ``"r+"`` write into the
        group as into a file (``"a"`` and ``"a-"`` add it when the file has none).
        Into an existing file, every mode keeps the other groups as they are and
        commits at one instant; where there is no file, one is made holding the
        group (and empty groups above it), and where another writer makes the file
        meanwhile, the group is written into that file instead of replacing it.
        Names of periods alone (``"."``, ``"a/../b"``) are refused, as Zarr refuses
        them.  By default, and with ``"/"``, the root.
    overviews
        Write a pyramid of ``ds`` (see :func:`~xarray_hurray.multiscale`): the number
        of coarser levels (factors 2, 4, ... ``2**N``) or their factors.  The levels
        are groups ``"0"`` (``ds``), ``"1"``..., each chunked as ``ds`` and placed on
        its own curve, described by the root's ``multiscales`` attribute, all in
        one commit.  ``ds`` is read once: as each block of a level is written, the
        next level's values of the cells it covers are stored in a temporary
        directory, which that level is written from (where dask blocks do not
        start on the windows of the next level, the coarser levels are stored in
        one pass first and ``ds`` is read twice; with ``compute=False`` each level
        is computed by the write's own graph).
    overview_dims
        The dimensions the overviews coarsen; by default those the chunk curves run
        over.
    resampling
        How the overviews resample: ``"mean"``, ``"nearest"``, ``"mode"``,
        ``"min"``, ``"max"`` or a mapping by variable; by default what keeps each
        variable's meaning (see :func:`~xarray_hurray.multiscale`).

    Returns
    -------
    dask.delayed.Delayed or None
        The pending write when ``compute`` is False.

    Raises
    ------
    ValueError, TypeError
        For unknown encoding keys, unsupported dtypes or attributes, invalid layouts
        or codecs, and, with ``safe_chunks``, dask chunks that end inside a stored
        chunk (rechunk, choose ``encoding["chunks"]`` dividing the dask chunks, or
        pass ``safe_chunks=False``), naming the variable.
    FileNotFoundError, IsADirectoryError
        For a local ``path`` whose directory does not exist, or that is a directory,
        or, with ``mode="r+"``, when there is no file at ``path``.
    FileExistsError
        With ``mode="w-"``, when a file exists at ``path`` (with ``group``, when the
        file holds that group).
    """
    if isinstance(ds, xr.DataArray):
        ds = array_dataset(ds)
    group = group_path(group or "")
    levels = None if overviews is None else LevelsRequest(overviews, overview_dims, resampling)
    if levels is not None and group:
        raise HurrayValueError(
            "overviews= writes the levels as the top groups of the file; it does "
            f"not take group= (got {group!r})",
            value=group,
        )
    mode = choose_mode(mode, append_dim, region)
    remote = upload_target(path, storage_options)
    if remote is None and isinstance(path, str | os.PathLike):
        _check_local_target(path)
    exists = target_exists(path, storage_options) if mode != "w" or group else True
    into_file = mode in ("a", "a-", "r+") and bool(exists or mode == "r+" or append_dim or region)
    if levels is not None and not into_file:
        # a new pyramid; a write into a file goes into its levels (see into_levels)
        return write_with_overviews(  # type: ignore[no-any-return]
            cast(xr.Dataset, ds),
            path,
            levels,
            encoding=encoding,
            compute=compute,
            write=to_hurray,
            layout=layout,
            chunk_order=chunk_order,
            codecs=codecs,
            chunk_bytes=chunk_bytes,
            progress=progress,
            window=window,
            storage_options=storage_options,
            write_empty_chunks=write_empty_chunks,
            part_bytes=part_bytes,
            compressor=compressor,
            mode=mode,
            safe_chunks=safe_chunks,
        )
    if isinstance(ds, xr.DataTree):
        ds = stored_attrs(ds)
    # by variable; for a tree, by group path, then by variable
    settings: Mapping[Hashable, Any] = encoding or {}
    if group and isinstance(ds, xr.Dataset):
        # a group is written as a tree whose root is that group
        ds, settings = xr.DataTree(dataset=ds), {"/": settings}
    if mode == "w-" and exists and not group:
        raise FileExistsError(errno.EEXIST, "a file exists at the target (mode='w-')", str(path))
    if compressor is not _NotGiven.NOT_GIVEN:
        warnings.warn(
            "to_hurray(compressor=...) is deprecated and will be removed in the next "
            "release; use codecs=...",
            DeprecationWarning,
            stacklevel=2,
        )
        codecs = compressor
    defaults = {"layout": layout, "chunk_order": chunk_order, "codecs": codecs}
    options: dict[str, Any] = {"mode": mode, "append_dim": append_dim, "region": region}
    options |= {"encoding": settings, "defaults": defaults, "chunk_bytes": chunk_bytes}
    options |= {"write_empty_chunks": write_empty_chunks, "safe_chunks": safe_chunks}
    write_options = {"window": window, "progress": progress}
    if into_file or (group and exists):
        update = PendingUpdate(ds, path, storage_options, options, write_options, group, levels)
        if not compute:
            update.check()  # errors now, as for a new file; the lock is taken when it runs
            pending: Delayed = delayed(update, pure=False)()
            return pending
        update()
        return None
    if group:
        assert isinstance(ds, xr.DataTree)  # made above
        metadata, variables = describe_at(ds, group, settings, defaults, chunk_bytes)
    elif isinstance(ds, xr.DataTree):
        metadata, variables = describe_tree(ds, settings, defaults, chunk_bytes)
    else:
        metadata, variables = describe_group(ds, settings, defaults, chunk_bytes)
    if not safe_chunks:
        variables = {
            name: aligned_chunks(var, metadata.variable(name).chunks)
            for name, var in variables.items()
        }
    # "a" creating a file must not replace one another writer created meanwhile, nor
    # may a write of one group replace the other groups of a file made meanwhile
    exclusive = mode != "w" or bool(group)
    multipart = multipart_target(remote)
    if multipart is not None:
        plan = multipart_plan(
            *multipart,
            metadata,
            variables,
            part_bytes=part_bytes,
            write_empty_chunks=write_empty_chunks,
            exclusive=exclusive,
        )
    else:
        parts = [
            WritePart.whole(var, variables[path], write_empty_chunks, path)
            for path, var in metadata.all_variables()
        ]
        sink = partial(new_file_sink, path, metadata, remote, exclusive)
        plan = WritePlan(metadata, parts, sink, target_name(path))
    check_window(window)
    # a group's file made by another writer meanwhile: the group is written into it
    retry = None
    if group:
        retry = PendingUpdate(ds, path, storage_options, options, write_options, group)
    if not compute:
        whole: Delayed = delayed(_create, pure=False)(plan, write_options, retry)
        return whole
    _create(plan, write_options, retry)
    return None


def _create(plan: WritePlan, write_options: Mapping[str, Any], retry: PendingUpdate | None) -> None:
    """Write the new file of ``plan``; where another writer created a file at its
    target meanwhile (the exclusive commit refused to replace it), run ``retry``, the
    same write into that file, under its lock."""
    try:
        engine.run(plan, **write_options)
    except TargetExistsError:
        if retry is None:
            raise
        retry()
