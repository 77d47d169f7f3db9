"""``to_zarr``: a Dataset as a Zarr v3 store whose arrays are shards with their inner
chunks placed along the Hilbert curve.

With the defaults the store holds only standard Zarr v3 metadata: ``sharding_indexed``
around zarr's ``bytes`` serializer and ``zstd``, with a ``crc32c`` index, so Zarr v3
readers that implement sharding (zarr-python, xarray, zarrita: tested) open it, this
package installed or not.  The ``hurray`` serializer is
written only for an element layout other than row-major (the default for uncompressed
chunks, which zarr reads in part; ``xr.open_zarr`` and zarr-python then read the store
wherever this package is installed, which registers the codec through its entry
point).  Everything except the encoding of the new arrays is xarray's own
``Dataset.to_zarr``.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import (
    Callable,
    Collection,
    Hashable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from typing import Any

import numpy as np
import xarray as xr
import zarr
from zarr.abc.codec import ArrayBytesCodec, BytesBytesCodec
from zarr.codecs import BytesCodec, ZstdCodec

from ..errors import HurrayTypeError, HurrayValueError, LayoutError, in_context
from ..layout import Layout, RowMajorLayout, default_layout
from ..zarr import HilbertShardingCodec, HurrayCodec
from ..zarr.conventions import convention_attrs
from ..zarr.stored_chunk import FIXED_SIZE_KINDS
from .appends import changed_attrs, check_append, warn_changed_attrs
from .dataarray import array_dataset
from .dims import default_dims
from .encoding import (
    CF_ENCODING,
    DEFAULT_CHUNK_BYTES,
    auto_chunks,
    axes_in,
    check_numpy_types,
    dask_chunks,
    default_chunks,
    references,
    written_encoding,
)
from .overviews import multiscale

DEFAULT_SHARD_BYTES = 2**26
"""Target uncompressed bytes of one shard (64 MiB): 64 inner chunks of 1 MiB."""

CALLER_STORAGE_KEYS = {"serializer", "compressors", "filters"}
"""Encoding keys with which a caller chooses a variable's codecs: such a variable is
left as the caller encoded it."""


def largest_divisor_at_most(n: int, limit: int) -> int:
    """The largest divisor of ``n`` that is at most ``limit`` (at least 1)."""
    return max(d for d in range(1, max(min(n, limit), 1) + 1) if n % d == 0)


def shard_and_chunk_shapes(
    shape: Sequence[int],
    itemsize: int,
    *,
    shards: Sequence[int] | None = None,
    chunks: Sequence[int] | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    spatial_axes: Collection[int] = (),
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shard shape and inner chunk shape of an array, by the rule of :func:`to_zarr`.

    Parameters
    ----------
    shape, itemsize
        The array's shape and bytes per element.
    shards
        A shard shape already chosen (given, or the dask chunks of a dask-backed
        array, so that each dask task writes whole shards).
    chunks
        An inner chunk shape already chosen.
    chunk_bytes, shard_bytes
        Target uncompressed bytes of an inner chunk and of a shard.
    spatial_axes
        The array's spatial axes (:func:`~.dims.default_dims`): with two, inner chunks
        are map tiles one step deep and shards one step deep (see
        :func:`~.encoding.default_chunks`).

    Returns
    -------
    shard, inner
        The shard and inner chunk shapes; chosen inner sides divide the shard sides.
    """
    if shards is not None:
        shard = tuple(int(s) for s in shards)
        if chunks is not None:
            return shard, tuple(int(c) for c in chunks)
        fitted = default_chunks(shard, itemsize, spatial_axes, chunk_bytes)
        # Inner chunks must tile the shard: the largest divisor of each side that
        # is no longer than the side the byte target asks for.
        inner = tuple(largest_divisor_at_most(s, f) for s, f in zip(shard, fitted, strict=True))
        return shard, inner
    if chunks:
        inner = tuple(int(c) for c in chunks)
    else:
        inner = default_chunks(shape, itemsize, spatial_axes, chunk_bytes)
    grid = tuple(math.ceil(n / c) for n, c in zip(shape, inner, strict=True))
    # Chunks per shard grow as chunks do: powers of two in turn along each axis, an
    # axis whose whole grid fits keeping its own count; over the spatial axes alone
    # where there are two, so that a shard holds one step (a map of one step is one
    # shard, as Zarr stores of time steps are usually written).
    axes = sorted(spatial_axes) if len(spatial_axes) == 2 else range(len(shape))
    grown = auto_chunks([grid[a] for a in axes], math.prod(inner) * itemsize, shard_bytes)
    per_shard = [1] * len(shape)
    for axis, count in zip(axes, grown, strict=True):
        per_shard[axis] = count
    return tuple(c * k for c, k in zip(inner, per_shard, strict=True)), inner


def _existing_arrays(
    store: Any, group: str | None, storage_options: Mapping[str, Any] | None
) -> set[str]:
    """Names of the arrays already in the target group (none if there is no group)."""
    kwargs: dict[str, Any] = {"mode": "r", "path": group or ""}
    if storage_options is not None:
        kwargs["storage_options"] = dict(storage_options)
    try:
        found = zarr.open_group(store, **kwargs)
    except (FileNotFoundError, KeyError, zarr.errors.GroupNotFoundError):
        return set()
    return set(found.array_keys())


def _check_into_store(ds: xr.Dataset, store: Any, kwargs: Mapping[str, Any]) -> None:
    """Check a write of ``ds`` into the group of ``store`` that ``kwargs`` (those of
    ``Dataset.to_zarr``) name against the variables it holds, as ``to_hurray`` checks
    a write into a file (see :mod:`.appends`): an append that repeats index values or
    changes a coordinate is refused, and attributes that the arrays written into keep
    as stored are warned of.  Nothing is checked where the group does not exist.

    Raises
    ------
    HurrayValueError
        As :func:`~.appends.check_append` raises.
    """
    options: dict[str, Any] = {"group": kwargs.get("group"), "chunks": None}
    if kwargs.get("storage_options") is not None:
        options["storage_options"] = kwargs["storage_options"]
    try:
        with warnings.catch_warnings():
            # a store without consolidated metadata is read without it
            warnings.filterwarnings("ignore", "Failed to open Zarr store with consolidated")
            held = xr.open_zarr(store, **options)
    except (FileNotFoundError, KeyError, zarr.errors.GroupNotFoundError):
        return
    with held:
        stored = {name: held.variables[name] for name in ds.variables if name in held.variables}
        append_dim = kwargs.get("append_dim")
        if append_dim is not None:
            check_append(ds, stored, append_dim, "the store")
            if kwargs.get("mode") == "a-":  # the others are not written
                stored = {k: v for k, v in stored.items() if append_dim in ds.variables[k].dims}
        changed = changed_attrs(ds, stored)
    warn_changed_attrs({str(name): attrs for name, attrs in changed.items()}, "the store")


def inner_serializer(layout: str | Layout | Mapping[str, Any]) -> ArrayBytesCodec:
    """The serializer of inner chunks in ``layout``: zarr's standard ``bytes`` for
    row-major, which is what it stores, else :class:`~xarray_hurray.zarr.HurrayCodec`."""
    codec = HurrayCodec(layout)
    if codec.layout == "row-major" or isinstance(codec.layout, RowMajorLayout):
        # a one-byte type drops the byte order as zarr evolves the codec to the array
        return BytesCodec(endian="little")
    return codec


def hurray_zarr_encoding(
    ds: xr.Dataset,
    encoding: Mapping[Hashable, Mapping[str, Any]],
    *,
    layout: str | Layout | Mapping[str, Any],
    compressors: Sequence[BytesBytesCodec],
    chunk_bytes: int,
    shard_bytes: int,
    skip: Collection[str] = (),
) -> dict[Hashable, dict[str, Any]]:
    """The ``to_zarr`` encoding that stores each variable in Hurray-serialized shards.

    Variables of rank 2 or more with a fixed-size data type get shards and chunks by
    :func:`shard_and_chunk_shapes` (or their ``chunks``/``shards`` encoding), the
    Hilbert-placed sharding codec as serializer, :func:`inner_serializer` of
    ``layout`` inside it followed by ``compressors``.  Others (rank 0 and 1, where a curve is the
    row-major order; strings and objects, which ``hurray`` does not store) keep zarr's
    defaults, as do the variables named in ``skip`` and those whose encoding already
    gives a ``serializer``, ``compressors`` or ``filters``.
    """
    check_numpy_types(ds)
    spatial = default_dims(ds)
    result: dict[Hashable, dict[str, Any]] = {name: dict(enc) for name, enc in encoding.items()}
    for name, var in ds.variables.items():
        # As in to_zarr, an encoding given replaces the variable's own, but for the
        # references to other variables it holds (a grid_mapping: the CRS), which are
        # kept; the CF settings and references a variable carries (from the file it
        # was read from) are kept otherwise, its old storage settings are not.
        if name in encoding:
            given = {**references(var.encoding), **encoding[name]}
        else:
            given = written_encoding(var.encoding)
        dtype = np.dtype(given.get("dtype", var.dtype))
        if (
            str(name) in skip
            or var.ndim < 2
            or dtype.kind not in FIXED_SIZE_KINDS
            or CALLER_STORAGE_KEYS & set(given)
        ):
            if name in encoding:
                result[name] = given
            continue
        shards = given.pop("shards", None)
        if shards is None:
            try:
                shards = dask_chunks(var, name)
            except ValueError as err:
                raise HurrayValueError(f"{err} or 'shards'") from err
        shard, inner = shard_and_chunk_shapes(
            var.shape,
            dtype.itemsize,
            shards=shards,
            chunks=given.pop("chunks", None),
            chunk_bytes=chunk_bytes,
            shard_bytes=shard_bytes,
            spatial_axes=axes_in(var.dims, spatial),
        )
        bad = [(s, c) for s, c in zip(shard, inner, strict=True) if s % c]
        if len(shard) != var.ndim or len(inner) != var.ndim or bad:
            raise HurrayValueError(
                f"variable {name!r}: shards {shard} must have one side per dimension, "
                f"each a multiple of the chunk side {inner}"
            )
        codec = inner_serializer(layout)
        try:
            if isinstance(codec, HurrayCodec):
                codec.layout_for(inner)
        except LayoutError as err:
            raise in_context(err, f"variable {name!r}") from err
        serializer = HilbertShardingCodec(chunk_shape=inner, codecs=[codec, *compressors])
        given.update(chunks=shard, serializer=serializer, compressors=None)
        result[name] = given
    return result


def _pyramid_to_zarr(
    ds: xr.Dataset,
    store: Any,
    levels: tuple[int | Sequence[int], Sequence[Hashable] | str | None, Any],
    encoding: Mapping[Hashable, Mapping[str, Any]],
    options: dict[str, Any],
    kwargs: dict[str, Any],
) -> Any:
    """``to_zarr(ds, store, overviews=...)``: the pyramid of ``ds`` (see
    :func:`~.overviews.multiscale`) as Zarr groups ``"0"``, ``"1"``... written by
    ``DataTree.to_zarr`` in one computation (each level from the previous one's
    graph), every level's arrays in the stored chunks ``to_hurray`` gives them, and
    the root's ``multiscales`` attributes as the JSON objects the convention defines.

    Raises
    ------
    HurrayValueError
        For ``group``, ``append_dim``, ``region`` or a mode that writes into a store,
        and as :func:`~.overviews.multiscale` raises.
    """
    refused = [key for key in ("group", "append_dim", "region") if kwargs.get(key) is not None]
    if refused or kwargs.get("mode", "w-") not in ("w", "w-"):
        raise HurrayValueError(
            "overviews= writes a new pyramid as the top groups of the store, with mode "
            f"'w' or 'w-'; it does not take {refused or [kwargs['mode']]}",
            value=refused or kwargs.get("mode"),
        )
    if encoding:
        # the levels take their storage settings from level 0's, as with to_hurray
        ds = ds.copy()
        for name, given in encoding.items():
            if name in ds.variables:
                ds[name].encoding = {**ds[name].encoding, **given}
    overviews, dims, resampling = levels
    tree = multiscale(ds, overviews, dims=dims, resampling=resampling)
    settings: dict[str, Any] = {}
    for node in tree.subtree:
        level = node.to_dataset(inherit=False)
        chunked = {
            name: {k: v for k, v in var.encoding.items() if k in CF_ENCODING}
            | {"chunks": var.encoding["chunks"]}
            for name, var in level.variables.items()
            if "chunks" in var.encoding
        }
        settings[node.path] = hurray_zarr_encoding(level, chunked, **options)
    # groups of JSON objects, as Zarr readers of the conventions find them
    for node in tree.subtree:
        node.attrs = convention_attrs(node.attrs)
    return tree.to_zarr(store, encoding=settings, **kwargs)


def to_zarr(
    ds: xr.Dataset | xr.DataArray | xr.DataTree,
    store: MutableMapping[str, Any] | str | Any = None,
    *,
    encoding: Mapping[Hashable, Mapping[str, Any]] | None = None,
    layout: str | Layout | Mapping[str, Any] | None = None,
    compressors: Sequence[BytesBytesCodec] | None = (ZstdCodec(level=0),),
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    overviews: int | Sequence[int] | None = None,
    overview_dims: Sequence[Hashable] | None = None,
    resampling: str | Mapping[Hashable, str] | None = None,
    **kwargs: Any,
) -> Any:
    """Write ``ds`` to a Zarr v3 store as shards whose inner chunks are Hilbert-placed.

    Each new array of rank 2 or more with a fixed-size data type is stored in shards
    (``sharding_indexed``, with a ``crc32c`` index) whose inner chunks are placed
    along the Hilbert curve (:class:`~xarray_hurray.zarr.HilbertShardingCodec`); each
    inner chunk is serialized in ``layout`` order, then compressed by
    ``compressors``.  Other variables keep zarr's defaults.  With the defaults every
    codec is a standard one (``bytes``, ``zstd``), so Zarr v3 readers that implement
    sharding (zarr-python, xarray, zarrita: tested) open the store without this package.

    Sizes, unless the variable's ``encoding`` gives ``chunks`` (inner) and ``shards``:

    - inner chunks as :func:`~xarray_hurray.to_hurray` chooses chunks
      (:func:`~.encoding.default_chunks`): map tiles of 256 x 256 one step deep for a
      variable with two spatial dimensions, else about ``chunk_bytes`` (1 MiB), sides
      powers of two grown in turn along each axis: the unit a region read fetches and
      decodes;
    - shards of about ``shard_bytes`` (64 MiB) uncompressed, inner chunks per shard
      grown the same way, over the two spatial dimensions only where there are two (a
      shard holds one step, a map of one step is one shard, as Zarr stores of time
      steps are usually written): few objects, and enough inner chunks per shard
      (8 x 8 in 2-D) for the Hilbert placement to keep a region's chunks in few byte
      runs, while a shard, which zarr encodes whole in memory, stays small;
    - a dask-backed variable is sharded by its dask chunks (which must be uniform),
      so each dask task writes whole shards; its inner chunks are the largest
      divisors of the dask chunk sides no longer than the sides above.

    Metadata is consolidated unless ``consolidated=False``, as ``Dataset.to_zarr``
    does by default, so that ``xr.open_zarr`` finds it in one read and without a
    warning.  zarr-python's warning that consolidated metadata is its own addition
    to format 3 is not shown: other readers ignore it and read each array's own
    metadata, which is whole.

    Parameters
    ----------
    ds
        The dataset; a DataArray is written as ``DataArray.to_zarr`` writes it (see
        :func:`~xarray_hurray.to_hurray`); a DataTree as ``DataTree.to_zarr`` writes
        it, every node a group (the attributes of Zarr conventions, such as a
        pyramid's ``multiscales``, as the JSON objects Zarr readers look for).
    store
        What ``Dataset.to_zarr`` takes: a path, URL, mapping or zarr store.
    encoding
        Per-variable encoding, as for ``to_zarr``; ``chunks`` and ``shards`` set the
        inner chunk and shard shapes; a ``serializer``, ``compressors`` or ``filters``
        leaves that variable's storage entirely to the caller.  For a DataTree, by
        group path (``"/a/b"``), then by variable, as ``DataTree.to_zarr`` takes it.
    layout
        Element order inside each inner chunk: ``"row-major"`` (zarr's ``bytes``
        serializer), ``"hilbert"``, ``"morton"``, ``"auto"`` (Hilbert for power-of-two
        cubes, else Morton), or a layout or its descriptor; the last three are stored
        with the ``hurray`` serializer, which readers need this package for.  By
        default (``None``) row-major when ``compressors`` are given, since a compressed
        chunk is decoded whole, and ``"auto"`` without, where a region read fetches
        only the byte runs of an inner chunk that it needs
        (:func:`~xarray_hurray.layout.default_layout`).
    compressors
        Zarr bytes-to-bytes codecs applied to each inner chunk after its serializer
        (zstd level 0 by default; ``None`` for none).
    chunk_bytes, shard_bytes
        Target uncompressed sizes of an inner chunk and of a shard.
    overviews, overview_dims, resampling
        Write a pyramid of ``ds``, as :func:`~xarray_hurray.to_hurray` does: the same
        levels as groups ``"0"``, ``"1"``... of the store, with the same chunks (the
        inner chunks of the shards) and the root's ``multiscales`` and
        ``hurray_overviews`` attributes, all in one computation; with mode ``"w"``
        or ``"w-"`` only, and no ``group``, ``append_dim`` or ``region``.
    **kwargs
        Passed to ``Dataset.to_zarr`` as they are: ``mode``, ``append_dim``,
        ``region``, ``storage_options``, ``compute``, ``consolidated``, ``group``,
        ... ``zarr_format`` must be 3 if given.

    Returns
    -------
    The result of ``Dataset.to_zarr``: the store, or a ``dask.delayed.Delayed`` when
    ``compute=False``.

    Raises
    ------
    ValueError
        For ``zarr_format`` other than 3, non-uniform dask chunks (naming the variable),
        or shards that are not multiples of the chunks.
    """
    if isinstance(ds, xr.DataArray):
        ds = array_dataset(ds)
    if kwargs.setdefault("zarr_format", 3) != 3:
        raise HurrayValueError(f"Hurray in Zarr needs zarr_format=3, got {kwargs['zarr_format']!r}")
    compressors = tuple(compressors or ())
    if layout is None:
        layout = default_layout(read_in_part=not compressors)
    options: dict[str, Any] = {
        "layout": layout,
        "compressors": compressors,
        "chunk_bytes": chunk_bytes,
        "shard_bytes": shard_bytes,
    }
    if overviews is not None:
        if not isinstance(ds, xr.Dataset):
            raise HurrayTypeError("overviews are made of a Dataset, not a DataTree")
        levels = (overviews, overview_dims, resampling)
        with consolidated_quietly():
            return _pyramid_to_zarr(ds, store, levels, encoding or {}, options, kwargs)
    # Arrays that already exist keep their storage: xarray refuses an encoding for
    # them when appending or writing a region.
    writes_into = (
        kwargs.get("mode") in ("a", "a-", "r+")
        or kwargs.get("append_dim") is not None
        or kwargs.get("region") is not None
    )

    def existing(group: str | None) -> set[str]:
        if not writes_into:
            return set()
        return _existing_arrays(store, group, kwargs.get("storage_options"))

    given = encoding or {}
    with consolidated_quietly():
        if isinstance(ds, xr.DataTree):
            return _tree_to_zarr(ds, store, given, options, existing, kwargs)
        if writes_into:
            _check_into_store(ds, store, kwargs)
        full = hurray_zarr_encoding(ds, given, skip=existing(kwargs.get("group")), **options)
        return ds.to_zarr(store, encoding=full, **kwargs)


def _tree_to_zarr(
    tree: xr.DataTree,
    store: Any,
    encoding: Mapping[Hashable, Any],
    settings: Mapping[str, Any],
    existing: Callable[[str | None], set[str]],
    kwargs: Mapping[str, Any],
) -> Any:
    """:func:`to_zarr` of a DataTree: each node's variables encoded as a Dataset's,
    the attributes of Zarr conventions decoded, then ``DataTree.to_zarr``."""
    inherited = bool(kwargs.get("write_inherited_coords", False))
    decoded = tree.copy(deep=False)
    full: dict[str, dict[Hashable, dict[str, Any]]] = {}
    for node in decoded.subtree:
        node.attrs = convention_attrs(node.attrs)
        # the variables DataTree.to_zarr writes in this node's group
        own = node.to_dataset(inherit=inherited or node.is_root)
        relative = node.relative_to(decoded)  # "." for the root
        try:
            full[node.path] = hurray_zarr_encoding(
                own,
                encoding.get(node.path, {}),
                skip=existing(None if node.is_root else relative),
                **settings,
            )
        except ValueError as err:
            if node.is_root:
                raise
            raise in_context(err, f"group {node.path!r}") from err
    return decoded.to_zarr(store, encoding=full, **kwargs)


CONSOLIDATED_WARNING = "Consolidated metadata is currently not part"
"""The start of zarr-python's warning, on writing consolidated metadata in format 3,
that other Zarr implementations may not read it (they read the arrays' own metadata)."""


@contextlib.contextmanager
def consolidated_quietly() -> Iterator[None]:
    """A block in which zarr-python's :data:`CONSOLIDATED_WARNING` is not shown."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", CONSOLIDATED_WARNING)
        yield
