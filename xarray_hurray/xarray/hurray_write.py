"""``to_hurray``: a write's arguments made into one request, run as one job (see
:mod:`.job`)."""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import xarray as xr
from dask.delayed import Delayed, delayed

from ..container.codecs import CodecSpec
from ..io import UploadTarget
from ..io.multipart import DEFAULT_PART_BYTES
from ..layout import Layout
from ..write.engine import DEFAULT_WINDOW
from ..write.target import WriteTarget
from .dataarray import array_dataset
from .encoding import DEFAULT_CHUNK_BYTES, DEFAULT_CHUNK_ORDER, DEFAULT_CODECS, DEFAULT_LAYOUT
from .job import WriteJob
from .request import Region, StorageSettings, WriteRequest


def to_hurray(
    ds: xr.Dataset | xr.DataArray | xr.DataTree,
    path: str | os.PathLike[str] | UploadTarget,
    *,
    encoding: Mapping[Hashable, Mapping[str, Any]] | None = None,
    layout: str | Mapping[str, Any] | Layout = DEFAULT_LAYOUT,
    chunk_order: str = DEFAULT_CHUNK_ORDER,
    codecs: CodecSpec | Sequence[CodecSpec] = DEFAULT_CODECS,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    compute: bool = True,
    progress: bool | None = None,
    window: int = DEFAULT_WINDOW,
    storage_options: Mapping[str, Any] | None = None,
    write_empty_chunks: bool = False,
    part_bytes: int = DEFAULT_PART_BYTES,
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
        ``codecs``.  An entry replaces the variable's own encoding, as with xarray's
        writers, but for the variables it refers to (``grid_mapping``, ``bounds``),
        which are kept unless the entry names them.
        Which storage setting a new variable gets, first found: its entry here;
        the settings its own ``encoding`` carries (from the file it was read from),
        less those that no longer fit it (chunks of another rank, the layout fitted
        to them, chunk axes naming dimensions it lacks); the arguments ``layout``,
        ``chunk_order`` and ``codecs`` (and for chunks the dask chunks, then
        ``chunk_bytes``).  Where a variable's own encoding takes the place of one of
        those arguments that was given, with another value, a
        :class:`~xarray_hurray.errors.SettingsKeptWarning` names the variables and
        what they kept; ``ds.drop_encoding()`` lets the arguments apply.  Variables
        the file already holds keep its settings (see ``mode``).
    layout
        Element layout of every chunk: ``"row-major"`` (the default: the file's
        reader decodes every chunk whole, so a curve inside one gains nothing, see
        :func:`~xarray_hurray.layout.default_layout`), ``"hilbert"``, ``"morton"``,
        ``"auto"`` (Hilbert where the chunk shape is a power-of-two cube, else
        Morton), a layout config or a :class:`~xarray_hurray.layout.Layout`.
    chunk_order
        Curve along which chunks are placed: ``"hilbert"`` (the default), ``"morton"``
        or ``"row-major"``.
    codecs
        Codec chain: ``None``, a name in ``("zstd", "lz4", "zlib", "blosc")``, a
        numcodecs config or codec, or a list of those; ``"zstd"`` by default.  (The
        defaults of ``layout``, ``chunk_order`` and ``codecs`` are marked as such,
        :class:`~xarray_hurray.xarray.encoding.Default`, so that a write tells them
        from the same values given.)
    chunk_bytes
        Target chunk size in bytes when neither encoding nor dask chunks set the chunks.
        A variable with two spatial dimensions (found as overviews find them:
        :func:`~xarray_hurray.xarray.dims.default_dims`) that does not fit in one
        chunk takes map tiles of 256 x 256 along them (smaller squares where
        ``chunk_bytes`` is too small for those) and one step along its others (time,
        levels, bands), so that a map of one step reads only its own bytes and the
        series at one pixel a chunk per step; other variables take chunks of about
        ``chunk_bytes``, sides powers of two (see
        :func:`~xarray_hurray.xarray.encoding.default_chunks`).
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
        :func:`~xarray_hurray.xarray.planner.resolve_write`): a node the file has
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
        one commit.  The coarser levels are computed before anything is written,
        block by block in one pass over ``ds`` (each block's cells of every level
        at once), into memory for values in memory and into a temporary directory
        for dask-backed ones, which are read twice in all (for the levels, and as
        level 0 is written), whatever the number of levels.
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
    defaults = {"layout": layout, "chunk_order": chunk_order, "codecs": codecs}
    request = WriteRequest.parse(
        ds,
        mode=mode,
        group=group,
        append_dim=append_dim,
        region=region,
        encoding=encoding,
        settings=StorageSettings(
            defaults, chunk_bytes, write_empty_chunks, safe_chunks, part_bytes
        ),
        levels=(overviews, overview_dims, resampling),
        window=window,
        progress=progress,
    )
    job = WriteJob(ds, WriteTarget.resolve(path, storage_options), request, pending=not compute)
    if not compute:
        job.check()  # errors now; the lock is taken, and the base read, when it runs
        pending: Delayed = delayed(job.write, pure=False)()
        return pending
    job.write()
    return None
