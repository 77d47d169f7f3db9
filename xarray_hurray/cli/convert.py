"""``hurray convert``: netCDF, Zarr or Hurray in; Hurray, Zarr with the ``hurray``
codec, or netCDF out, chosen by the output's extension; through xarray and dask."""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import shutil
import uuid
import warnings
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Literal

import xarray as xr
from dask.base import tokenize

from ..container.codecs import ALLOWED_CODECS
from ..container.format import MAGIC
from ..container.limits import MAX_CHUNK_BYTES
from ..container.metadata import dots_only
from ..container.replace import move_into_place
from ..errors import CliError
from ..io import is_url
from ..layout import LAYOUT_NAMES, LayoutError, default_layout, layout_for_shape
from ..write.progress import DaskProgressBar
from ..xarray.dims import default_dims
from ..xarray.encoding import (
    STRING_ITEMSIZE,
    WRITTEN_ENCODING,
    axes_in,
    default_chunks,
    written_encoding,
)
from ..xarray.hurray_write import to_hurray
from ..xarray.overviews import multiscale
from ..zarr.conventions import convention_attrs
from .common import parse_storage_options

FIXED_KINDS = "biufcmM"
"""numpy dtype kinds the Zarr ``hurray`` codec stores (fixed-size elements)."""

NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf")
FOREIGN_SUFFIXES = (".h5", ".hdf5", ".hdf", ".he5", ".grib", ".grib2", ".grb", ".tif", ".tiff")
"""Extensions of formats ``convert`` does not write: refused rather than given a
Hurray file under a name that promises something else."""

NETCDF_ENGINES: tuple[tuple[str, Literal["netcdf4", "h5netcdf"]], ...] = (
    ("netCDF4", "netcdf4"),
    ("h5netcdf", "h5netcdf"),
)
"""Packages that write netCDF-4 through xarray, and their engines, in order of preference."""


def output_format(path: str) -> str:
    """``"netcdf"``, ``"zarr"`` or ``"hurray"``: what ``convert`` writes to ``path``,
    chosen by its extension (Hurray for ``.hurray`` and names of no known format).

    Raises
    ------
    CliError
        For the extension of a format ``convert`` does not write.
    """
    suffix = os.path.splitext(path.rstrip("/"))[1].lower()
    if suffix in NETCDF_SUFFIXES:
        return "netcdf"
    if suffix == ".zarr":
        return "zarr"
    if suffix in FOREIGN_SUFFIXES:
        raise CliError(
            f"{path}: convert writes Hurray (.hurray), Zarr (.zarr) or netCDF (.nc) files, "
            f"not {suffix}; choose one of those extensions"
        )
    return "hurray"


def netcdf_engine() -> Literal["netcdf4", "h5netcdf"]:
    """The installed xarray engine that writes netCDF-4 files.

    Raises
    ------
    CliError
        When neither netCDF4 nor h5netcdf is installed.
    """
    for package, engine in NETCDF_ENGINES:
        if importlib.util.find_spec(package) is not None:
            return engine
    raise CliError(
        "writing a .nc file needs the netCDF4 or h5netcdf package; install one of them "
        "(python -m pip install h5netcdf), or name the output .hurray"
    )


def parse_chunks(text: str | None) -> dict[str, int]:
    """``"time=1,y=256,x=256"`` to ``{"time": 1, "y": 256, "x": 256}``.

    Raises
    ------
    CliError
        For bad syntax or a size below 1.
    """
    chunks: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        dim, sep, size = item.partition("=")
        if not sep or not dim.strip() or not size.strip().isdigit() or int(size) < 1:
            raise CliError(f"bad chunks item {item!r}: expected dim=size with size >= 1")
        chunks[dim.strip()] = int(size)
    return chunks


Groups = dict[str, xr.Dataset]
"""A converted input: the datasets of its groups by path (``"/"``, ``"/a/b"``), each
with its own variables only (the children inherit the coordinates of their parents);
an input without groups is ``{"/": dataset}``."""


HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
"""The first bytes of an HDF5 file: a netCDF-4 file, the netCDF kind that has groups."""


INPUT_KINDS: tuple[tuple[tuple[bytes, ...], str, tuple[str, ...]], ...] = (
    ((b"CDF\x01", b"CDF\x02", b"CDF\x05"), "a netCDF-3 file", ("scipy", "netCDF4")),
    ((HDF5_SIGNATURE,), "a netCDF-4 (HDF5) file", ("h5netcdf", "netCDF4")),
    ((b"GRIB",), "a GRIB file", ("cfgrib",)),
)
"""Inputs xarray reads through packages of their own: the first bytes of each kind,
its name, and the packages whose xarray engine reads it, the first one suggested."""


def _what_to_install(path: str) -> str:
    """For a local file of a kind in :data:`INPUT_KINDS` that no installed package
    reads, a sentence saying what to install; else ``""``."""
    if is_url(path) or not os.path.isfile(path):
        return ""
    with open(path, "rb") as file:
        start = file.read(len(HDF5_SIGNATURE))
    for signatures, kind, packages in INPUT_KINDS:
        if start.startswith(signatures):
            if any(importlib.util.find_spec(p) is not None for p in packages):
                return ""
            which = "one of them" if len(packages) > 1 else "it"
            return (
                f"; {os.path.basename(path)} is {kind}, which xarray reads with "
                f"{' or '.join(packages)}: install {which} (python -m pip install {packages[0]})"
            )
    return ""


def _input_engine(path: str) -> tuple[str | None, bool]:
    """The xarray engine that opens ``path`` (None: xarray guesses), and whether the
    input may hold groups: a Hurray file (by its first bytes, read once; a URL by its
    ``.hurray`` name), a Zarr store (a directory or a ``.zarr`` name), a netCDF-4 file
    (HDF5); not netCDF-3, whose engines open no groups."""
    if path.endswith(".hurray"):
        return "hurray", True
    start = b""
    if not is_url(path) and os.path.isfile(path):
        with open(path, "rb") as file:
            start = file.read(max(len(HDF5_SIGNATURE), len(MAGIC)))
    if start.startswith(MAGIC):
        return "hurray", True
    if os.path.isdir(path) or path.rstrip("/").endswith(".zarr"):
        return "zarr", True
    return None, start.startswith(HDF5_SIGNATURE)


def _dask_name(path: str, group: str, name: Hashable, chunks: tuple[int, ...]) -> str:
    """The name of the dask array of variable ``name`` of group ``group`` of the input
    ``path``, in these ``chunks``.

    xarray's ``open_groups(chunks=...)`` names each group's arrays by the file and the
    variable alone, so that dask takes same-named variables of different groups for
    one and computes one of them for all: the group is part of this name.
    """
    return f"convert-{name}-{tokenize(path, group, name, chunks)}"


def open_input(path: str, storage_options: dict[str, Any] | None = None) -> Groups:
    """Open ``path`` lazily, in one opening: a Hurray file, a Zarr store, or anything an
    installed xarray engine opens (netCDF through netCDF4, h5netcdf or scipy); its
    groups when it has some (Hurray, Zarr, netCDF-4), else its one dataset.
    The variables are read when written (see :func:`prepare`); close every dataset
    once written.

    Raises
    ------
    CliError
        For a missing input or one no engine opens, storage options for an input
        that is neither Hurray nor Zarr, and groups that do not form a tree xarray
        accepts (a child not aligned with its parent).
    """
    if not is_url(path) and not os.path.exists(path):
        raise CliError(f"no such file or directory: {path}")
    kwargs: dict[str, Any] = {"chunks": None, "cache": False}
    engine, has_groups = _input_engine(path)
    if storage_options is not None:
        if engine not in ("hurray", "zarr"):
            raise CliError(
                f"--storage-option applies to Hurray (.hurray) and Zarr (.zarr) input, not {path}"
            )
        kwargs["storage_options"] = storage_options
    try:
        with warnings.catch_warnings():
            # Zarr stores without consolidated metadata are expected here.
            warnings.filterwarnings("ignore", "Failed to open Zarr store with consolidated")
            if not has_groups:
                return {"/": xr.open_dataset(path, engine=engine, **kwargs)}
            groups = dict(xr.open_groups(path, engine=engine, **kwargs))
        try:
            dotted = [p for p in groups if any(dots_only(part) for part in p.split("/"))]
            if dotted:
                raise CliError(
                    f"cannot convert {path}: its group {dotted[0]!r} has a name of periods "
                    "alone, which paths read as the group itself or its parent (Zarr, "
                    "DataTree and Hurray refuse such names); rename it",
                    value=dotted[0],
                )
            if len(groups) > 1:
                xr.DataTree.from_dict(groups)  # refused now, before anything is written
        except (ValueError, CliError):
            close_all(groups)
            raise
        return groups
    except (ValueError, OSError) as err:
        # the whole message on one line: xarray ends some with the links they point to
        message = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
        message = message or type(err).__name__
        raise CliError(
            f"cannot open {path}: {message}{_what_to_install(path)}", value=path
        ) from err


def close_all(groups: Groups) -> None:
    """Close the datasets of an input (the files behind them)."""
    for ds in groups.values():
        ds.close()


def check_chunk_dims(groups: Groups, chosen: Mapping[str, int]) -> None:
    """Refuse ``--chunks`` naming a dimension no group of the input has.

    Raises
    ------
    CliError
        Naming the unknown dimensions.
    """
    dims = {str(d) for ds in groups.values() for d in ds.dims}
    unknown = sorted(set(chosen) - dims)
    if unknown:
        raise CliError(f"--chunks names dimensions {unknown} not in {sorted(dims)}")


def source_chunks(var: xr.Variable) -> tuple[int, ...] | None:
    """The chunk shape the input stores ``var`` in, from its encoding (``chunks`` of a
    Hurray file or the inner chunks of a Zarr array, ``chunksizes`` of netCDF-4),
    each side capped at the dimension's length; None where it has none."""
    for key in ("chunks", "chunksizes"):
        found = var.encoding.get(key)
        if (
            isinstance(found, tuple | list)
            and len(found) == var.ndim
            and all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in found)
        ):
            return tuple(min(c, n) or 1 for c, n in zip(found, var.shape, strict=True))
    return None


def _holds(layout: str, chunks: tuple[int, ...], itemsize: int) -> bool:
    """Whether a chunk of shape ``chunks`` fits ``layout`` and the format's largest chunk."""
    if math.prod(chunks) * itemsize > MAX_CHUNK_BYTES:
        return False
    try:
        layout_for_shape(layout, chunks)
    except LayoutError:
        return False
    return True


def plan_chunks(
    ds: xr.Dataset, chosen: Mapping[str, int], layout: str = "row-major"
) -> dict[Hashable, tuple[int, ...]]:
    """The chunk shape of every variable: ``chosen`` sizes where given (capped at the
    dimension's length); along the other dimensions the input's own chunks
    (:func:`source_chunks`) where the chunk they make fits ``layout`` (see
    :func:`layouts`) and the format, else the chunks ``to_hurray`` chooses
    (:func:`~xarray_hurray.xarray.encoding.default_chunks`)."""
    plan = {}
    kinds = layouts(ds, layout)
    spatial = default_dims(ds)
    for name, var in ds.variables.items():
        itemsize = STRING_ITEMSIZE if var.dtype.kind in "OUS" else var.dtype.itemsize

        def with_chosen(sides: tuple[int, ...], var: xr.Variable = var) -> tuple[int, ...]:
            return tuple(
                min(chosen.get(str(d), c), n) or 1
                for d, c, n in zip(var.dims, sides, var.shape, strict=True)
            )

        kept = source_chunks(var)
        if kept is not None and _holds(kinds[name], with_chosen(kept), itemsize):
            plan[name] = with_chosen(kept)
        else:
            chunks = default_chunks(var.shape, itemsize, axes_in(var.dims, spatial))
            plan[name] = with_chosen(chunks)
    return plan


def prepare(
    ds: xr.Dataset, chunks: Mapping[Hashable, tuple[int, ...]], source: str, group: str
) -> xr.Dataset:
    """``ds``, group ``group`` of the input ``source``, with dask arrays in ``chunks``
    (named by :func:`_dask_name`) and only the CF keys, the references to other
    variables (a ``grid_mapping``) and ``coordinates`` left in each variable's
    encoding: what it means is kept, the input's storage settings do not carry over
    (the write's ``encoding`` adds them, see :func:`_encoding`)."""
    data: dict[Hashable, xr.Variable] = {}
    coords: dict[Hashable, xr.Variable] = {}
    for name, var in ds.variables.items():
        var = var.copy(deep=False)
        var.encoding = {
            k: v for k, v in var.encoding.items() if k in WRITTEN_ENCODING or k == "coordinates"
        }
        if name not in ds.indexes and var.ndim:
            shape = chunks[name]
            sides = dict(zip(var.dims, shape, strict=True))
            var = var.chunk(sides, name=_dask_name(source, group, name, shape))
        (coords if name in ds.coords else data)[name] = var
    return xr.Dataset(data, coords=coords, attrs=ds.attrs)


def layouts(ds: xr.Dataset, layout: str) -> dict[Hashable, str]:
    """``layout`` for every variable, but ``"auto"`` for a Hilbert layout asked of one
    of fewer than two dimensions, whose single axis a Hilbert curve cannot run along."""
    return {
        name: "auto" if layout == "hilbert" and var.ndim < 2 else layout
        for name, var in ds.variables.items()
    }


def check_layouts(
    ds: xr.Dataset, chunks: Mapping[Hashable, tuple[int, ...]], layout: str, group: str = "/"
) -> None:
    """Check, before anything is written, that each variable's layout holds its chunks.

    Raises
    ------
    CliError
        Naming the variable (and its group, other than the root), its chunks and what
        to change.
    """
    for name, kind in layouts(ds, layout).items():
        if not ds.variables[name].ndim:
            continue
        try:
            layout_for_shape(kind, chunks[name])
        except LayoutError as err:
            where = "" if group == "/" else f"group {group!r}: "
            raise CliError(
                f"{where}variable {name!r}: a {kind} layout cannot hold chunks "
                f"{chunks[name]}; choose --layout auto or morton, or --chunks of equal "
                "power-of-two sides"
            ) from err


Chunks = dict[str, dict[Hashable, tuple[int, ...]]]
"""The chunk shape of every variable, by group path and variable name."""


def _tree_or_dataset(groups: Groups) -> xr.Dataset | xr.DataTree:
    """What is written: the dataset of an input without groups, else the tree."""
    return groups["/"] if len(groups) == 1 else xr.DataTree.from_dict(groups)


def _encoding(
    groups: Groups, settings: Callable[[str, Hashable, xr.Variable], dict[str, Any]]
) -> dict[Any, Any]:
    """The ``encoding`` of a write: by variable name, the variable's own CF keys and
    references (:func:`~xarray_hurray.xarray.encoding.written_encoding`: packing, fill
    value, time units, ``grid_mapping``), with ``settings(group, name, variable)``
    over them, and by group path (``"/a/b"``, as xarray's DataTree writers take it)
    for a tree.  A writer's ``encoding`` replaces a variable's own rather than adding
    to it, so what the variable carries is given again here: without it the output
    would be unpacked, its times re-encoded, its fill value lost."""
    encoding = {
        path: {
            name: {**written_encoding(var.encoding), **settings(path, name, var)}
            for name, var in ds.variables.items()
        }
        for path, ds in groups.items()
    }
    return encoding if len(groups) > 1 else encoding["/"]


def write_hurray(groups: Groups, out: str, chunks: Chunks, args: argparse.Namespace) -> None:
    """Write a Hurray file, with the input's groups, through dask with a progress bar."""
    layout = {path: layouts(ds, args.layout) for path, ds in groups.items()}
    to_hurray(
        _tree_or_dataset(groups),
        out,
        encoding=_encoding(
            groups,
            lambda path, name, _: {"chunks": chunks[path][name], "layout": layout[path][name]},
        ),
        chunk_order=args.chunk_order or "hilbert",
        codecs=args.codecs,
        progress=True,
        storage_options=parse_storage_options(args.storage_option) if is_url(out) else None,
        overviews=args.overviews,
    )


def write_netcdf(groups: Groups, out: str, chunks: Chunks, args: argparse.Namespace) -> None:
    """Write a netCDF-4 file (groups for the input's groups) with the installed engine:
    chunked as planned and compressed with zlib (deflate) unless ``--codecs none``,
    the one codec every netCDF-4 reader has.  Written beside ``out`` and moved into
    place once complete."""
    engine = netcdf_engine()

    def settings(path: str, name: Hashable, var: xr.Variable) -> dict[str, Any]:
        if not var.ndim or var.dtype.kind == "O":
            return {}
        enc: dict[str, Any] = {"chunksizes": chunks[path][name]}
        return enc | ({"zlib": True, "complevel": 4} if args.codecs != "none" else {})

    tmp = f"{out}.{uuid.uuid4().hex}.tmp"
    try:
        with DaskProgressBar(f"writing {os.path.basename(out)}"):
            _tree_or_dataset(groups).to_netcdf(
                tmp, engine=engine, encoding=_encoding(groups, settings)
            )
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    move_into_place(tmp, out)


def zarr_compressors(name: str) -> list[Any] | None:
    """The Zarr v3 compressors standing for the codec ``name``."""
    from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec

    return {
        "none": None,
        "zstd": [ZstdCodec()],
        "zlib": [GzipCodec()],
        "blosc": [BloscCodec()],
        "lz4": [BloscCodec(cname="lz4")],
    }[name]


def write_zarr(groups: Groups, out: str, chunks: Chunks, args: argparse.Namespace) -> None:
    """Write a Zarr v3 store (groups for the input's groups) whose fixed-size variables
    use the ``hurray`` codec.

    The store is built beside ``out`` and moved into place once complete, so a
    failed write leaves ``out`` as it was.  Its metadata is consolidated, as
    ``to_zarr`` consolidates by default, so that xarray opens it with one read and
    without warning that it found none.
    """
    from ..xarray.zarr_write import consolidated_quietly
    from ..zarr import HurrayCodec

    layout = {path: layouts(ds, args.layout) for path, ds in groups.items()}

    def settings(path: str, name: Hashable, var: xr.Variable) -> dict[str, Any]:
        enc: dict[str, Any] = {
            "chunks": chunks[path][name],
            "compressors": zarr_compressors(args.codecs),
        }
        # row-major is zarr's own `bytes` serializer: the store stays standard
        if var.dtype.kind in FIXED_KINDS and var.ndim and layout[path][name] != "row-major":
            enc["serializer"] = HurrayCodec(layout[path][name])
        return enc

    tmp = f"{out.rstrip('/')}.{uuid.uuid4().hex}.tmp"
    try:
        with (
            DaskProgressBar(f"writing {os.path.basename(out.rstrip('/'))}"),
            consolidated_quietly(),
        ):
            _tree_or_dataset(groups).to_zarr(
                tmp,
                mode="w-",
                zarr_format=3,
                consolidated=True,
                encoding=_encoding(groups, settings),
            )
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    move_into_place(tmp, out.rstrip("/"))


def pyramid_groups(ds: xr.Dataset, chunks: Chunks, overviews: int) -> tuple[Groups, Chunks]:
    """The groups of the pyramid of ``ds`` with ``overviews`` levels for a Zarr store
    (the root with the ``multiscales`` attributes, the levels ``"/0"``, ``"/1"``...,
    the attributes of Zarr conventions as JSON objects), and the chunks of each
    level's variables: those planned for level 0 (``chunks["/"]``), cut to the
    level's shape, as ``to_hurray`` cuts them."""
    tree = multiscale(ds, overviews)
    groups = {node.path: node.to_dataset(inherit=False) for node in tree.subtree}
    for level in groups.values():
        level.attrs = convention_attrs(level.attrs)
    planned = {
        path: {
            name: tuple(min(c, n) for c, n in zip(chunks["/"][name], var.shape, strict=True))
            for name, var in level.variables.items()
        }
        for path, level in groups.items()
    }
    return groups, planned


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Give the parser of ``hurray convert`` its description and arguments."""
    parser.description = (
        "Convert a dataset through xarray and dask. IN is a netCDF file, a Zarr "
        "store or a Hurray file (a path, or a URL for Hurray and Zarr); an input with groups "
        "is converted whole, into the same groups. OUT's extension "
        "chooses what is written: a Zarr v3 store using the hurray codec for .zarr, a "
        "netCDF-4 file (through netCDF4 or h5netcdf, whichever is installed) for .nc, and a "
        "Hurray file otherwise; the extensions of other formats (.h5, .grib, .tif, ...) are "
        "refused."
    )
    parser.add_argument("input", metavar="IN")
    parser.add_argument("output", metavar="OUT")
    parser.add_argument(
        "--storage-option",
        action="append",
        metavar="KEY=VALUE",
        help="fsspec storage option for a URL IN or OUT (VALUE parsed as JSON where it can "
        "be); repeatable",
    )
    parser.add_argument(
        "--layout",
        choices=("auto", *LAYOUT_NAMES),
        help="element layout in each chunk (default: row-major, or auto for Zarr output "
        "with --codecs none, whose chunks are read in part)",
    )
    parser.add_argument(
        "--chunk-order",
        choices=LAYOUT_NAMES,
        help="curve the chunks follow in a Hurray file (default: hilbert)",
    )
    parser.add_argument(
        "--chunks",
        metavar="DIM=N,...",
        help="chunk sizes, as time=1,y=256,x=256 (other dims: the input's chunks where the "
        "layout holds them, else about 1 MiB chunks)",
    )
    parser.add_argument(
        "--codecs",
        "--compressor",  # the old spelling, accepted until the next release
        dest="codecs",
        choices=("none", *ALLOWED_CODECS),
        default="zstd",
        help="codec compressing each chunk (default: zstd; --compressor is its old name)",
    )
    parser.add_argument(
        "--overviews",
        type=int,
        metavar="N",
        help="also write N coarser levels (factors 2, 4, ... 2**N over the spatial "
        "dimensions) as groups 0..N of a Hurray file or Zarr store",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Convert ``args.input`` to ``args.output``."""
    kind = output_format(args.output)
    if kind != "hurray" and args.chunk_order:
        raise CliError("--chunk-order applies to Hurray output only; other formats have none")
    if kind == "netcdf" and args.overviews is not None:
        raise CliError("--overviews applies to Hurray and Zarr output only")
    if kind == "netcdf":
        if args.layout is not None:
            raise CliError("--layout applies to Hurray and Zarr output; netCDF has no layouts")
        netcdf_engine()  # refuse before reading anything when none is installed
    if kind != "hurray" and is_url(args.output):
        raise CliError(f"convert writes {kind} output to local paths only, not {args.output}")
    if os.path.exists(args.output) and not args.overwrite:
        raise CliError(f"{args.output} exists; pass --overwrite to replace it")
    if args.layout is None:
        args.layout = default_layout(read_in_part=kind == "zarr" and args.codecs == "none")
    chosen = parse_chunks(args.chunks)
    input_options = parse_storage_options(args.storage_option) if is_url(args.input) else None
    opened = open_input(args.input, input_options)
    try:
        if args.overviews is not None and len(opened) > 1:
            raise CliError(
                "--overviews takes an input without groups: its levels become the groups"
            )
        check_chunk_dims(opened, chosen)
        chunks = {path: plan_chunks(ds, chosen, args.layout) for path, ds in opened.items()}
        for path, ds in opened.items():
            check_layouts(ds, chunks[path], args.layout, path)
        groups = {path: prepare(ds, chunks[path], args.input, path) for path, ds in opened.items()}
        if kind == "zarr" and args.overviews is not None:
            groups, chunks = pyramid_groups(groups["/"], chunks, args.overviews)
        {"zarr": write_zarr, "netcdf": write_netcdf, "hurray": write_hurray}[kind](
            groups, args.output, chunks, args
        )
    finally:
        close_all(opened)
    print(f"wrote {args.output}")
    return 0
