"""The CF encoding of a dataset for writing, with xarray's own coders, and the
description of each encoded variable (chunks, layout, chunk order, codecs) from its
``encoding`` and the write's defaults.  Both new files and updates use it."""

from __future__ import annotations

import math
import warnings
from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd
import xarray as xr
from xarray import conventions
from xarray.backends.common import NONE_VAR_NAME

from ..container import DatasetMeta, VariableMeta, element_type, parse_codecs
from ..container.elements import element_bytes, to_bytes
from ..container.metadata import check_new_node_name, check_node_name
from ..errors import (
    HurrayKeyError,
    HurrayTypeError,
    HurrayValueError,
    LayoutError,
    SettingsKeptWarning,
    in_context,
)
from ..layout import LAYOUT_NAMES, Layout, RowMajorLayout, layout_for_shape, layout_from_config
from .compat import CF_RELATED_DATA, encode_cf_variable_keeping_bools
from .dims import default_dims
from .strings import FILL_ATTRS, check_fill_value, encode_text

CF_ENCODING = {"dtype", "_FillValue", "missing_value", "scale_factor", "add_offset"}
CF_ENCODING |= {"units", "calendar"}
"""Encoding keys consumed by xarray's CF coders."""

REFERENCE_ENCODING = frozenset(CF_RELATED_DATA)
"""Encoding keys naming other variables of the dataset: ``grid_mapping`` (the
variable holding the CRS), ``bounds``, ``cell_measures``...  Reading with
``decode_coords="all"`` (rioxarray's way) moves these attributes into the encoding,
and CF encoding moves them back.  They say what the values mean, not how they are
stored, so every writer keeps them, even for a variable given an encoding of its own
(where xarray's writers would lose them with the rest of its encoding)."""

WRITTEN_ENCODING = CF_ENCODING | REFERENCE_ENCODING
"""The keys of a variable's encoding that every writer carries to the variable it
writes, whatever its storage: the CF keys and the references.  (``coordinates``, the
other key xarray's decoding puts there, is turned into an attribute before a
writer's ``encoding=`` replaces a variable's own, and no writer takes it there.)"""

HURRAY_ENCODING = {"chunks", "layout", "chunk_order", "chunk_axes", "codecs"}
"""Encoding keys of this format."""


class Default(str):
    """The default value of a write's argument (``layout``, ``chunk_order``, ``codecs``):
    the same text, marked as given by no caller.  A variable's own encoding takes the
    place of an argument either way; only where the caller gave one is that worth a
    warning (:func:`kept_settings`)."""

    __slots__ = ()


DEFAULT_LAYOUT = Default("row-major")
DEFAULT_CHUNK_ORDER = Default("hilbert")
DEFAULT_CODECS = Default("zstd")

IGNORED_ENCODING = {"source", "original_shape", "preferred_chunks"}
"""Keys that reading adds and writing ignores."""


DEFAULT_CHUNK_BYTES = 2**20
STRING_ITEMSIZE = 16
"""Assumed bytes per variable-length string when sizing chunks."""

TILE = 256
"""The side of the default chunks along the two spatial dimensions of a variable: the
side of a map tile, so that a tile of one step is one chunk (a tile read from chunks
of 512 x 512, those of about 1 MiB for 4-byte values, moves four times its bytes)."""

MIN_TILE_CHUNK_BYTES = 2**16
"""Least bytes of a default chunk of a variable with two spatial dimensions: where a
tile of one step takes fewer (a small map), a chunk holds more steps, so that a long
series of small maps is not stored in chunks of a few hundred bytes."""


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


def tile_side(itemsize: int, target: int = DEFAULT_CHUNK_BYTES) -> int:
    """The side of a map tile of ``itemsize``-byte values: :data:`TILE`, or the largest
    power of two whose square takes at most ``target`` bytes where that is less (every
    type of up to 16 bytes takes tiles of :data:`TILE` at the default target)."""
    side = 1
    while side < TILE and (2 * side) ** 2 * itemsize <= target:
        side *= 2
    return side


def map_chunks(
    shape: Sequence[int],
    itemsize: int,
    spatial_axes: Collection[int],
    target: int = DEFAULT_CHUNK_BYTES,
) -> tuple[int, ...]:
    """Chunk sides of a variable with two spatial axes (``spatial_axes``): map tiles
    (:func:`tile_side`) along them, cut to their length, and one element along every
    other axis (time steps, levels, bands), so that a map of one step reads its own
    bytes and no other step's; the whole shape where it fits in ``target`` bytes, as
    :func:`auto_chunks` keeps it.  Where such a chunk takes fewer than
    :data:`MIN_TILE_CHUNK_BYTES` (a small map), the other axes grow as
    :func:`auto_chunks` grows them, up to that size.

    The placement that goes with them is that of the default chunk axes
    (:func:`default_chunk_axes`): the curve over the spatial axes, so that each step's
    tiles are one compact run of the file, the steps one after another.
    """
    shape = tuple(max(int(n), 1) for n in shape)
    if math.prod(shape) * itemsize <= target:
        return shape
    side = tile_side(itemsize, target)
    chunks = [min(side, n) if k in spatial_axes else 1 for k, n in enumerate(shape)]
    steps = [k for k in range(len(shape)) if k not in spatial_axes]
    deep = min(MIN_TILE_CHUNK_BYTES, target) // (math.prod(chunks) * itemsize)
    if steps and deep > 1:
        for k, grown in zip(steps, auto_chunks([shape[k] for k in steps], 1, deep), strict=True):
            chunks[k] = grown
    return tuple(chunks)


def default_chunks(
    shape: Sequence[int],
    itemsize: int,
    spatial_axes: Collection[int] = (),
    target: int = DEFAULT_CHUNK_BYTES,
) -> tuple[int, ...]:
    """The chunks of a variable written with none given (by its encoding or its dask
    chunks): :func:`map_chunks` for a variable with exactly two spatial axes
    (``spatial_axes``, the axes of :func:`~.dims.default_dims` it has), else
    :func:`auto_chunks` of about ``target`` bytes."""
    if len(spatial_axes) == 2:
        return map_chunks(shape, itemsize, spatial_axes, target)
    return auto_chunks(shape, itemsize, target)


def axes_in(dims: Sequence[Hashable], names: Collection[str]) -> tuple[int, ...]:
    """The axes of a variable of dimensions ``dims`` that ``names`` names."""
    return tuple(k for k, d in enumerate(dims) if d in names)


def dask_chunks(var: xr.Variable, name: Hashable) -> tuple[int, ...] | None:
    """The chunk shape of the dask chunks of ``var`` (None when it is not dask-backed):
    the stored chunks a write without ``encoding["chunks"]`` takes.

    Raises
    ------
    ValueError
        Naming the variable, for dask chunks of more than one size along a dimension
        (other than a smaller last one).
    """
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


def written_encoding(encoding: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a variable's ``encoding`` in :data:`WRITTEN_ENCODING`."""
    return {k: v for k, v in encoding.items() if k in WRITTEN_ENCODING}


def references(encoding: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a variable's ``encoding`` in :data:`REFERENCE_ENCODING`."""
    return {k: v for k, v in encoding.items() if k in REFERENCE_ENCODING}


def _hurray_settings(encoding: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of this format in a variable's ``encoding``."""
    return {k: v for k, v in encoding.items() if k in HURRAY_ENCODING}


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
    name: Hashable,
    var: xr.Variable,
    defaults: Mapping[str, Any],
    chunk_bytes: int,
    spatial: Collection[str] = (),
) -> VariableMeta:
    """The description of a CF-encoded variable, from its encoding and ``defaults``;
    ``spatial`` names the spatial dimensions of its dataset
    (:func:`~.dims.default_dims`), which chunks chosen for it follow
    (:func:`default_chunks`).

    Raises
    ------
    ValueError, TypeError
        Naming the variable, for what the format cannot store.
    """
    try:
        settings = {**defaults, **_hurray_settings(var.encoding)}
        dtype = element_type(var.dtype)
        if not isinstance(name, str) or not all(isinstance(d, str) for d in var.dims):
            raise HurrayTypeError(
                f"names and dims must be strings, got {name!r} with dims {var.dims}"
            )
        check_node_name(name, "the variable name")
        chunks = settings.get("chunks") or dask_chunks(var, name)
        if chunks is None:
            itemsize = STRING_ITEMSIZE if dtype == "string" else var.dtype.itemsize
            axes = axes_in(var.dims, spatial)
            chunks = default_chunks(var.shape, itemsize, axes, chunk_bytes)
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


def _same_setting(key: str, kept: Any, asked: Any, chunks: tuple[int, ...]) -> bool:
    """Whether the setting ``key`` a variable keeps from its encoding writes what the
    argument asked for would: the same codec chain, chunk order, or layout once fitted
    to the chunks (``"auto"`` is Hilbert or Morton by the chunk shape).  A setting
    that cannot be read says yes: describing the variable refuses it, by name."""
    try:
        if key == "codecs":
            return parse_codecs(kept) == parse_codecs(asked)
        if key == "layout":
            return _layout(kept, chunks) == _layout(asked, chunks)
    except LayoutError:
        return False  # the argument cannot apply to these chunks
    except (ValueError, TypeError):
        return True
    return bool(kept == asked)


def kept_settings(
    ds: xr.Dataset,
    encoding: Mapping[Hashable, Mapping[str, Any]],
    defaults: Mapping[str, Any],
    chunk_bytes: int,
    held: Collection[Hashable] = (),
) -> dict[Hashable, dict[str, Any]]:
    """The storage settings that variables of ``ds`` carry in their own encoding (from
    the file they were read from) and that a write keeps in place of an argument the
    caller gave (``layout``, ``chunk_order`` or ``codecs`` other than a
    :class:`Default`) whose value differs, by variable.  Variables given an
    ``encoding`` entry (which wins over the arguments, as documented) and those in
    ``held`` (a file's, which keep its settings) are not looked at."""
    given = {k: v for k, v in defaults.items() if not isinstance(v, Default)}
    found: dict[Hashable, dict[str, Any]] = {}
    for name, var in ds.variables.items():
        if name in encoding or name in held:
            continue
        carried = _fitting_settings(var)
        settings = {k: v for k, v in _hurray_settings(carried).items() if k in given}
        if not settings:
            continue
        chunks = carried.get("chunks")
        if chunks is None:
            try:
                chunks = dask_chunks(var, name)
            except ValueError:
                chunks = None  # describing the variable refuses them
        if chunks is None:
            dtype = np.dtype(carried.get("dtype", var.dtype))
            itemsize = STRING_ITEMSIZE if dtype.kind in "OUS" else dtype.itemsize
            chunks = auto_chunks(var.shape, itemsize, chunk_bytes)
        kept = {
            key: value
            for key, value in settings.items()
            if not _same_setting(key, value, given[key], tuple(chunks))
        }
        if kept:
            found[name] = kept
    return found


def _setting_text(key: str, value: Any) -> str:
    """A storage setting as a warning shows it: a layout by its name, a codec chain by
    its codecs' ids, where they are so given."""
    if key == "layout" and isinstance(value, Mapping) and "name" in value:
        return repr(value["name"])
    if key == "codecs":
        try:
            return repr("+".join(c["id"] for c in parse_codecs(value)) or None)
        except (ValueError, TypeError):
            pass
    return repr(value)


def warn_kept_settings(kept: Mapping[str, Mapping[str, Any]], defaults: Mapping[str, Any]) -> None:
    """Warn, once for a whole write, of the settings :func:`kept_settings` found
    (``kept``: by variable path), naming the variables, what they keep and the
    argument they keep it in place of (variables that keep the same listed together).
    """
    if not kept:
        return
    by_settings: dict[str, list[str]] = {}
    for name, settings in kept.items():
        described = ", ".join(
            f"{key}={_setting_text(key, value)} (not {_setting_text(key, defaults[key])})"
            for key, value in settings.items()
        )
        by_settings.setdefault(described, []).append(repr(name))
    warnings.warn(
        "variables written with the storage settings of their own encoding (from the "
        "file they were read from) in place of the arguments given: "
        + "; ".join(
            f"{', '.join(names)} keep {described}" for described, names in by_settings.items()
        )
        + ".  A variable's encoding wins over the arguments: ds.drop_encoding() lets "
        "them apply, encoding={name: {...}} sets a variable's own",
        SettingsKeptWarning,
        stacklevel=2,
    )


def check_numpy_types(ds: xr.Dataset) -> None:
    """Refuse variables of a pandas type of their own (times with a time zone,
    categories, periods), which xarray's CF encoding fails on with numpy's words."""
    for name, var in ds.variables.items():
        if isinstance(var.dtype, np.dtype):
            continue
        if isinstance(var.dtype, pd.DatetimeTZDtype):
            raise HurrayTypeError(
                f"variable {name!r} holds times with a time zone ({var.dtype}), which CF "
                "encoding cannot store: convert them to UTC without a zone, as "
                f"ds[{name!r}] = ds.indexes[{name!r}].tz_convert(None) does, and keep the "
                "zone as an attribute if it matters",
                value=str(var.dtype),
            )
        raise HurrayTypeError(
            f"variable {name!r} holds values of the pandas type {var.dtype}, which CF "
            "encoding cannot store; convert it to a numpy type (.astype(...)) first",
            value=str(var.dtype),
        )


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


def _checked_chunks(chunks: Any, ndim: int) -> None:
    """Refuse ``chunks`` that are not ``ndim`` integers of at least 1."""
    try:
        sides = None if isinstance(chunks, str | Mapping) else tuple(chunks)
    except TypeError:
        sides = None
    if (
        sides is None
        or len(sides) != ndim
        or not all(isinstance(c, int | np.integer) and not isinstance(c, bool) for c in sides)
        or min(sides, default=1) < 1
    ):
        raise HurrayValueError(
            f"chunks must be {ndim} integers of at least 1, one per dimension, got {chunks!r}",
            value=chunks,
        )


def _checked_layout(spec: Any, chunks: Any) -> None:
    """Refuse a ``layout`` that names no layout, or, with ``chunks``, cannot apply to
    them."""
    if chunks:
        _layout(spec, tuple(chunks))
    elif isinstance(spec, Mapping):
        layout_from_config(spec)
    elif not isinstance(spec, Layout) and spec not in ("auto", *LAYOUT_NAMES):
        raise LayoutError(
            f"unknown layout {spec!r}; expected 'auto' or one of {', '.join(LAYOUT_NAMES)}, "
            "a layout config or a Layout",
            value=spec,
        )


def check_storage_settings(
    settings: Mapping[str, Any], dims: Sequence[Hashable] | None, where: str
) -> None:
    """Check the storage settings in ``settings`` (``codecs``, ``chunk_order``,
    ``layout``, and for a variable of dimensions ``dims`` its ``chunks`` and
    ``chunk_axes``; ``dims`` None: the arguments of a write, for any variable) as far
    as they stand alone, before anything is encoded or written; describing each
    variable (:func:`describe_variable`) applies them.

    Raises
    ------
    ValueError, TypeError
        Naming ``where`` and the setting.
    """
    try:
        if "codecs" in settings:
            parse_codecs(settings["codecs"], try_encoding=True)
        if "chunk_order" in settings and settings["chunk_order"] not in LAYOUT_NAMES:
            raise HurrayValueError(
                f"chunk order {settings['chunk_order']!r} is not one of {', '.join(LAYOUT_NAMES)}",
                value=settings["chunk_order"],
            )
        chunks = settings.get("chunks") if dims is not None else None
        if chunks:
            _checked_chunks(chunks, len(dims or ()))
        if "layout" in settings:
            _checked_layout(settings["layout"], chunks)
        if dims is not None and settings.get("chunk_axes") is not None:
            _chunk_axes(settings["chunk_axes"], tuple(dims), (), ())
    except (ValueError, TypeError) as err:
        raise in_context(err, where) from err


def check_encoding(ds: xr.Dataset, encoding: Mapping[Hashable, Mapping[str, Any]]) -> None:
    """Check the ``encoding`` given for the variables of ``ds``: each a variable of it,
    each a mapping of keys this writer takes, whose storage settings stand alone
    (:func:`check_storage_settings`).

    Raises
    ------
    KeyError, ValueError, TypeError
        Naming the variable and what is wrong.
    """
    valid = WRITTEN_ENCODING | HURRAY_ENCODING | IGNORED_ENCODING
    for name, enc in encoding.items():
        if name not in ds.variables:
            raise HurrayKeyError(
                f"encoding given for {name!r}, which is not a variable of the dataset",
                value=name,
            )
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
        check_storage_settings(enc, ds.variables[name].dims, f"variable {name!r}")


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

    Settings given in ``encoding`` replace a variable's own encoding, as with
    xarray's writers, but for the references to other variables it holds (a
    ``grid_mapping``; :data:`REFERENCE_ENCODING`), which are kept unless given; they
    are used as they are (checked with the request, :func:`check_encoding`).  The
    encoding variables carry from the file they were read from loses the storage
    settings that no longer fit them.
    """
    _check_names(ds)
    check_numpy_types(ds)
    variables, attrs = conventions.encode_dataset_coordinates(ds)
    for name, var in variables.items():
        if name in encoding:
            var.encoding = {**references(var.encoding), **encoding[name]}
        else:
            var.encoding = _fitting_settings(var)
    encoded = {}
    for name, var in variables.items():
        var = check_fill_value(var, name, explicit=name in encoding)
        var = encode_cf_variable_keeping_bools(var, name)
        var = _typed_fill_values(encode_text(var, name))
        encoded[NONE_VAR_NAME if name is None else name] = var
    return encoded, attrs


def describe_group(
    ds: xr.Dataset,
    encoding: Mapping[Hashable, Mapping[str, Any]],
    defaults: Mapping[str, Any],
    chunk_bytes: int,
    name: str = "",
) -> tuple[DatasetMeta, dict[str, xr.Variable]]:
    """The description of ``ds`` as a group called ``name`` (``""``: the root), and
    its CF-encoded variables by name."""
    if name:
        check_new_node_name(name, "a group name")
    variables, attrs = encode_dataset(ds, encoding)
    spatial = default_dims(ds)
    meta = DatasetMeta(
        attrs=cast(dict[str, Any], dict(attrs)),  # names are checked as attributes
        variables=tuple(
            describe_variable(key, var, defaults, chunk_bytes, spatial)
            for key, var in variables.items()
        ),
        name=name,
    )
    return meta, {str(key): var for key, var in variables.items()}
