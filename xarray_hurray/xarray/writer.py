"""``to_hurray``: CF-encode an xarray Dataset with xarray's own coders and stream it
into a Hurray file, one chunk at a time in placement order."""

from __future__ import annotations

import enum
import errno
import math
import os
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import xarray as xr
from dask.delayed import Delayed, delayed
from xarray import conventions
from xarray.backends.common import NONE_VAR_NAME

from ..container import DatasetMeta, VariableMeta, element_type, parse_codecs
from ..container.codecs import CodecSpec
from ..container.elements import element_bytes, to_bytes
from ..container.metadata import check_node_name
from ..container.tempfiles import writable_target
from ..errors import HurrayTypeError, HurrayValueError, in_context
from ..io import UploadTarget, staged_upload, upload_target
from ..io.multipart import DEFAULT_PART_BYTES, multipart_target
from ..layout import LAYOUT_NAMES, Layout, RowMajorLayout, layout_for_shape, layout_from_config
from .compat import encode_cf_variable_keeping_bools
from .dask_write import DEFAULT_WINDOW, DaskWrite, WritePart
from .multipart_write import MultipartWrite
from .strings import FILL_ATTRS, check_fill_value, encode_text

if TYPE_CHECKING:  # the update module builds on this one
    from .update import Region

CF_ENCODING = {"dtype", "_FillValue", "missing_value", "scale_factor", "add_offset"}
CF_ENCODING |= {"units", "calendar"}
"""Encoding keys consumed by xarray's CF coders."""

HURRAY_ENCODING = {"chunks", "layout", "chunk_order", "chunk_axes", "codecs"}
"""Encoding keys of this format."""

RENAMED_ENCODING = {"compressor": "codecs"}
"""Old encoding keys still accepted, with a :class:`DeprecationWarning`, until the next
release: old name to new name."""

IGNORED_ENCODING = {"source", "original_shape", "preferred_chunks"}
"""Keys that reading adds and writing ignores."""


class _NotGiven(enum.Enum):
    """Marks an argument left out (where ``None`` is a meaningful value)."""

    NOT_GIVEN = enum.auto()


DEFAULT_CHUNK_BYTES = 2**20
STRING_ITEMSIZE = 16
"""Assumed bytes per variable-length string when sizing chunks."""


def auto_chunks(
    shape: Sequence[int], itemsize: int, target: int = DEFAULT_CHUNK_BYTES
) -> tuple[int, ...]:
    """Chunk sides of at most ``target`` bytes: the whole shape when it fits, else
    sides doubled in turn along each axis while the chunk, counted with each side cut
    to its axis's length, stays within ``target``; an axis held by one chunk keeps its
    own length (so a variable that fits is never split, and none is cut raggedly for
    want of budget its short axes did not use)."""
    shape = tuple(max(int(n), 1) for n in shape)
    budget = max(target // itemsize, 1)
    if math.prod(shape) <= budget:
        return shape
    chunks = [1] * len(shape)
    grown = True
    while grown:
        grown = False
        for k, n in enumerate(shape):
            wider = min(chunks[k] * 2, n)
            if wider > chunks[k] and math.prod(chunks) // chunks[k] * wider <= budget:
                chunks[k] = wider
                grown = True
    return tuple(chunks)


def _dask_chunks(var: xr.Variable, name: Hashable) -> tuple[int, ...] | None:
    if var.chunks is None:
        return None
    for dim, sizes in zip(var.dims, var.chunks, strict=True):
        if any(s != sizes[0] for s in sizes[:-1]) or sizes[-1] > sizes[0]:
            raise HurrayValueError(
                f"variable {name!r}: dask chunks {sizes} along {dim!r} are not uniform; "
                "rechunk or give encoding chunks"
            )
    return tuple(sizes[0] for sizes in var.chunks)


def _layout(spec: str | Mapping[str, Any] | Layout, chunks: tuple[int, ...]) -> Layout:
    if isinstance(spec, Layout):
        return spec
    if isinstance(spec, Mapping):
        return layout_from_config(spec)
    if not chunks and spec in LAYOUT_NAMES:
        return RowMajorLayout()  # a single element: every order is the same
    return layout_for_shape(spec, chunks)


def default_chunk_axes(shape: Sequence[int], chunks: Sequence[int]) -> tuple[int, ...]:
    """The axes the chunk curve runs over when none are named: every axis but those
    cut one element per chunk (time steps, bands, levels), which stay outermost, so
    that each step is one compact curve (all axes when every one is cut so).

    Chunks one step deep are what step-by-step reads (a map of one day) ask for; a
    curve through the steps as well scatters each step's chunks: in ``hurray demo``
    (1 x 64 x 64 chunks) a country on one day is 1 contiguous run with the curve over
    (lat, lon), 10 with it over (time, lat, lon); a continent 8 runs against 27.
    """
    if len(chunks) != len(shape):
        return tuple(range(len(shape)))  # wrong chunks: the description says so
    axes = tuple(k for k, (n, c) in enumerate(zip(shape, chunks, strict=True)) if c > 1 or n <= 1)
    return axes or tuple(range(len(shape)))


def _chunk_axes(
    names: Sequence[Hashable] | None,
    dims: tuple[Hashable, ...],
    shape: Sequence[int],
    chunks: Sequence[int],
) -> tuple[int, ...]:
    if names is None:
        return default_chunk_axes(shape, chunks)
    missing = [d for d in names if d not in dims]
    if missing:
        raise HurrayValueError(f"chunk_axes {list(names)} name dimensions {missing} not in {dims}")
    return tuple(dims.index(d) for d in names)


def _hurray_settings(name: Hashable, encoding: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of this format in a variable's ``encoding``; an old key of
    :data:`RENAMED_ENCODING` is taken under its new name, with a warning."""
    settings = {k: v for k, v in encoding.items() if k in HURRAY_ENCODING}
    for old, new in RENAMED_ENCODING.items():
        if old not in encoding:
            continue
        if new in settings:
            raise HurrayValueError(f"encoding gives both {old!r} and {new!r}; give {new!r} only")
        warnings.warn(
            f"variable {name!r}: encoding key {old!r} is deprecated and will be removed in "
            f"the next release; use {new!r}",
            DeprecationWarning,
            stacklevel=5,  # the caller of to_hurray, past the generator in it
        )
        settings[new] = encoding[old]
    return settings


def _fill_value(var: xr.Variable, dtype: str) -> bytes | None:
    """The stored bytes of the encoded ``_FillValue`` of ``var``, the value its missing
    chunks hold; None (the zero element) when it has none that fits its type.  Either
    way no value changes: only chunks equal to the fill byte for byte are left out."""
    fill = var.attrs.get("_FillValue", var.encoding.get("_FillValue"))
    if fill is None:
        return None
    try:
        return element_bytes(fill, dtype)
    except (ValueError, TypeError, OverflowError):
        return None


def describe_variable(
    name: Hashable, var: xr.Variable, defaults: Mapping[str, Any], chunk_bytes: int
) -> VariableMeta:
    """The description of a CF-encoded variable, from its encoding and ``defaults``.

    Raises
    ------
    ValueError, TypeError
        Naming the variable, for what the format cannot store.
    """
    try:
        settings = {**defaults, **_hurray_settings(name, var.encoding)}
        dtype = element_type(var.dtype)
        if not isinstance(name, str) or not all(isinstance(d, str) for d in var.dims):
            raise HurrayTypeError(
                f"names and dims must be strings, got {name!r} with dims {var.dims}"
            )
        check_node_name(name, "the variable name")
        chunks = settings.get("chunks") or _dask_chunks(var, name)
        if chunks is None:
            itemsize = STRING_ITEMSIZE if dtype == "string" else var.dtype.itemsize
            chunks = auto_chunks(var.shape, itemsize, chunk_bytes)
        chunks = tuple(chunks)
        if isinstance(var.data, np.ndarray) and var.dtype.kind in "UO":
            # text is checked now, before the file exists; dask-backed text when each
            # chunk is encoded (a failure then still removes the temporary file)
            to_bytes(var.data.reshape(-1), dtype)
        return VariableMeta(
            name=name,
            dims=tuple(str(d) for d in var.dims),  # checked to be str above
            shape=var.shape,
            dtype=dtype,
            chunks=chunks,
            layout=_layout(settings["layout"], chunks),
            codecs=parse_codecs(settings["codecs"], try_encoding=True),
            chunk_order=settings["chunk_order"],
            chunk_axes=_chunk_axes(settings.get("chunk_axes"), var.dims, var.shape, chunks),
            attrs=dict(var.attrs),
            fill_value=_fill_value(var, dtype),
        )
    except (ValueError, TypeError) as err:
        if f"{name!r}" in str(err):
            raise
        raise in_context(err, f"variable {name!r}") from err


def _check_names(ds: xr.Dataset) -> None:
    """Refuse variable names the format cannot store, in the words of xarray's other
    backends: a name is a non-empty string, or None (stored as ``__values__``)."""
    for name in ds.variables:
        if isinstance(name, str) and not name:
            raise HurrayValueError(
                f"Invalid name {name!r} for DataArray or Dataset key: string must be length 1 "
                "or greater for serialization to Hurray files"
            )
        if name is not None and not isinstance(name, str):
            raise HurrayTypeError(
                f"Invalid name {name!r} for DataArray or Dataset key: must be either a string "
                "or None for serialization to Hurray files"
            )


def _check_encoding(ds: xr.Dataset, encoding: Mapping[Hashable, Mapping[str, Any]]) -> None:
    valid = CF_ENCODING | HURRAY_ENCODING | IGNORED_ENCODING | set(RENAMED_ENCODING)
    for name, enc in encoding.items():
        if name not in ds.variables:
            raise KeyError(f"encoding given for {name!r}, which is not a variable of the dataset")
        if not isinstance(enc, Mapping):
            raise HurrayValueError(
                f"the encoding of variable {name!r} must be castable to a dict of settings, "
                f"got {enc!r}"
            )
        invalid = sorted(set(enc) - valid)
        if invalid:
            raise HurrayValueError(
                f"unexpected encoding parameters {invalid} for variable {name!r}; "
                f"valid keys are {sorted(valid)}",
                value=invalid,
            )


def _fitting_settings(var: xr.Variable) -> dict[str, Any]:
    """The encoding ``var`` carries, less the storage settings it kept from the file
    it was read from that no longer fit it (a dimension dropped or renamed since):
    chunks of another rank, a layout fitted to chunks no longer kept and chunk axes
    naming other dimensions.  ``to_zarr`` drops stale chunks the same way."""
    encoding = dict(var.encoding)
    chunks = encoding.get("chunks")
    if chunks is not None and len(chunks) != var.ndim:
        del encoding["chunks"]
    if "chunks" not in encoding and not isinstance(encoding.get("layout", ""), str):
        del encoding["layout"]
    axes = encoding.get("chunk_axes")
    if axes is not None and not set(axes) <= set(var.dims):
        del encoding["chunk_axes"]
    return encoding


def _typed_fill_values(var: xr.Variable) -> xr.Variable:
    """``var`` with a numeric ``_FillValue`` or ``missing_value`` held as a scalar of
    its element type, as netCDF stores them (xarray's decoding of ``_Unsigned`` needs
    that type), where the value is exactly one of that type."""
    if var.dtype.kind not in "biufc":
        return var
    attrs = dict(var.attrs)
    for key in FILL_ATTRS:
        value = attrs.get(key)
        if isinstance(value, int | float | complex | np.number) and not isinstance(value, bool):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # out of range: kept as it is
                try:
                    typed = var.dtype.type(value)
                except (OverflowError, ValueError):
                    continue
            # only an exact value takes the type: one the cast would change (300 as
            # int8, 0.1 as float32) stays as given; NaN is exact though NaN != NaN
            if typed == value or (np.isnan(typed) and np.isnan(value)):
                attrs[key] = typed
    return xr.Variable(var.dims, var.data, attrs, var.encoding, fastpath=True)


def encode_dataset(
    ds: xr.Dataset, encoding: Mapping[Hashable, Mapping[str, Any]]
) -> tuple[dict[Hashable, xr.Variable], dict[Hashable, Any]]:
    """CF-encode ``ds`` as xarray's Zarr backend does (bool and strings stay native).

    Settings given in ``encoding`` are used as they are (and checked later); the
    encoding variables carry from the file they were read from loses the storage
    settings that no longer fit them.
    """
    _check_names(ds)
    _check_encoding(ds, encoding)
    variables, attrs = conventions.encode_dataset_coordinates(ds)
    for name, var in variables.items():
        var.encoding = dict(encoding[name]) if name in encoding else _fitting_settings(var)
    encoded = {}
    for name, var in variables.items():
        var = check_fill_value(var, name, explicit=name in encoding)
        var = encode_cf_variable_keeping_bools(var, name)
        var = _typed_fill_values(encode_text(var, name))
        encoded[NONE_VAR_NAME if name is None else name] = var
    return encoded, attrs


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


def _run(write: DaskWrite | MultipartWrite, remote: UploadTarget | None) -> None:
    """Run ``write``; for a remote target without multipart uploads, into a local
    file then uploaded whole."""
    if remote is None or isinstance(write, MultipartWrite):
        write.run()
        return
    with staged_upload(remote, write.path.name) as local:
        write.path = local
        write.run()


def describe_group(
    ds: xr.Dataset,
    encoding: Mapping[Hashable, Mapping[str, Any]],
    defaults: Mapping[str, Any],
    chunk_bytes: int,
    name: str = "",
) -> tuple[DatasetMeta, dict[str, xr.Variable]]:
    """The description of ``ds`` as a group called ``name`` (``""``: the root), and
    its CF-encoded variables by name."""
    variables, attrs = encode_dataset(ds, encoding)
    meta = DatasetMeta(
        attrs=cast(dict[str, Any], dict(attrs)),  # names are checked as attributes
        variables=tuple(
            describe_variable(key, var, defaults, chunk_bytes) for key, var in variables.items()
        ),
        name=name,
    )
    return meta, {str(key): var for key, var in variables.items()}


def group_encoding(
    tree: xr.DataTree, encoding: Mapping[Hashable, Any]
) -> dict[str, Mapping[Hashable, Mapping[str, Any]]]:
    """``encoding`` of a DataTree write by group path (``"a/b"``; ``""`` the root),
    from keys as :meth:`xarray.DataTree.to_zarr` takes them (``"/a/b"``) or ``"a/b"``.

    Raises
    ------
    ValueError
        For an encoding naming a group the tree does not have.
    """
    paths = {node.path.strip("/") for node in tree.subtree}
    by_path = {str(key).strip("/"): value for key, value in encoding.items()}
    unknown = sorted(set(by_path) - paths)
    if unknown:
        raise HurrayValueError(
            f"encoding given for groups {unknown}, which the tree does not have; "
            f"its groups are {sorted('/' + p for p in paths)}",
            value=unknown,
        )
    return by_path


def describe_tree(
    tree: xr.DataTree,
    encoding: Mapping[Hashable, Any],
    defaults: Mapping[str, Any],
    chunk_bytes: int,
) -> tuple[DatasetMeta, dict[str, xr.Variable]]:
    """The description of the groups of ``tree``, and the CF-encoded variables of all
    of them by path (``"a/b/name"``).  ``encoding`` maps group paths (``"/a/b"`` as
    :meth:`xarray.DataTree.to_zarr` takes them, or ``"a/b"``) to the encoding of
    their variables.

    Raises
    ------
    ValueError
        For an encoding naming a group the tree does not have.
    """
    by_path = group_encoding(tree, encoding)
    variables: dict[str, xr.Variable] = {}

    def describe(node: xr.DataTree) -> DatasetMeta:
        path = node.path.strip("/")
        meta, own = describe_group(
            node.to_dataset(inherit=False),
            by_path.get(path, {}),
            defaults,
            chunk_bytes,
            name=str(node.name) if path else "",
        )
        variables.update({f"{path}/{key}" if path else key: var for key, var in own.items()})
        groups = tuple(describe(child) for child in node.children.values())
        return replace(meta, groups=groups)

    return describe(tree), variables


def to_hurray(
    ds: xr.Dataset | xr.DataTree,
    path: str | os.PathLike[str] | UploadTarget,
    *,
    encoding: Mapping[Hashable, Mapping[str, Any]] | None = None,
    layout: str | Mapping[str, Any] | Layout = "auto",
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
) -> Delayed | None:
    """Write ``ds`` (a Dataset, or a DataTree whose nodes become groups) to a Hurray
    file at ``path``, or into the file there.

    Variables are CF-encoded with xarray's conventions (times, ``_FillValue``,
    ``scale_factor``/``add_offset``, ``coordinates``) and stored chunk by chunk.
    Everything is checked before the first byte is written, and the file appears at
    ``path``, or changes, at one instant once the write is complete.

    Parameters
    ----------
    ds
        The dataset.
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
        Element layout of every chunk: ``"auto"`` (Hilbert where the chunk shape is a
        power-of-two cube, else Morton), ``"hilbert"``, ``"morton"``, ``"row-major"``,
        a layout config or a :class:`~xarray_hurray.layout.Layout`.
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
        only into variables it holds.  By default ``"a"`` with ``append_dim``,
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
        Coordinates indexing the dataset are not written.  Bounds must be on the
        stored chunk grid (or at the end of the dimension).

    Returns
    -------
    dask.delayed.Delayed or None
        The pending write when ``compute`` is False.

    Raises
    ------
    ValueError, TypeError
        For unknown encoding keys, unsupported dtypes or attributes, invalid layouts
        or codecs, and dask chunks that end inside a stored chunk (rechunk, or
        choose ``encoding["chunks"]`` dividing the dask chunks), naming the variable.
    FileNotFoundError, IsADirectoryError
        For a local ``path`` whose directory does not exist, or that is a directory,
        or, with ``mode="r+"``, when there is no file at ``path``.
    FileExistsError
        With ``mode="w-"``, when a file exists at ``path``.
    """
    # the update module builds on this one
    from .update import PendingUpdate, choose_mode, target_exists

    mode = choose_mode(mode, append_dim, region)
    remote = upload_target(path, storage_options)
    if remote is None and isinstance(path, str | os.PathLike):
        _check_local_target(path)
    exists = target_exists(path, storage_options) if mode != "w" else True
    if mode == "w-" and exists:
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
    if mode in ("a", "a-", "r+") and (exists or mode == "r+" or append_dim or region):
        options: dict[str, Any] = {"mode": mode, "append_dim": append_dim, "region": region}
        options |= {"encoding": encoding or {}, "defaults": defaults, "chunk_bytes": chunk_bytes}
        options["write_empty_chunks"] = write_empty_chunks
        update = PendingUpdate(
            ds, path, storage_options, options, {"window": window, "progress": progress}
        )
        if not compute:
            update.check()  # errors now, as for a new file; the lock is taken when it runs
            pending: Delayed = delayed(update, pure=False)()
            return pending
        update()
        return None
    if isinstance(ds, xr.DataTree):
        metadata, variables = describe_tree(ds, encoding or {}, defaults, chunk_bytes)
    else:
        metadata, variables = describe_group(ds, encoding or {}, defaults, chunk_bytes)
    local = path if isinstance(path, str | os.PathLike) else "remote.hurray"
    # "a" creating a file must not replace one another writer created meanwhile
    exclusive = mode != "w"
    multipart = multipart_target(remote)
    write: DaskWrite | MultipartWrite
    if multipart is not None:
        write = MultipartWrite(
            *multipart,
            metadata,
            variables,
            part_bytes=part_bytes,
            write_empty_chunks=write_empty_chunks,
            exclusive=exclusive,
            progress=progress,
        )
    else:
        parts = [
            WritePart.whole(var, variables[path], write_empty_chunks, path)
            for path, var in metadata.all_variables()
        ]
        write = DaskWrite(
            local, metadata, parts, window=window, progress=progress, exclusive=exclusive
        )
    if not compute:
        whole: Delayed = delayed(_run, pure=False)(write, remote)
        return whole
    _run(write, remote)
    return None
