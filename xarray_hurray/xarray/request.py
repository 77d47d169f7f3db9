"""What a write asks for, checked once against its input before the target is looked
at: :class:`WriteRequest`, made from the arguments of ``to_hurray`` by
:meth:`WriteRequest.parse`, whose ``parse_*`` functions each check one argument and
raise a clear error naming it.

The request is also the one place that reads the mode's letters: what a mode means
for the file at the target is :meth:`WriteRequest.start`, for the group the input
goes to :meth:`WriteRequest.group_into` (the one place that refuses a write needing
a file or a group where there is none), and for the variables of a group the
properties below them.
"""

from __future__ import annotations

import errno
import numbers
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

import xarray as xr

from ..container import DatasetMeta
from ..errors import HurrayTypeError, HurrayValueError, TargetExistsError
from ..io.multipart import DEFAULT_PART_BYTES
from ..write.engine import DEFAULT_WINDOW, check_window
from .encoding import DEFAULT_CHUNK_BYTES, check_encoding, check_storage_settings
from .overview_plan import (
    check_level_arguments,
    choose_resampling,
    is_count,
    plan_pyramid,
    with_encoding,
)
from .pyramid import Pyramid, checked_factors
from .tree import InputTree, NodeEncoding, group_path

WRITE_MODES = ("w", "w-", "a", "a-", "r+")
"""The values of ``to_hurray(mode=...)``, with ``to_zarr``'s meaning."""

INTO_FILE_MODES = ("a", "a-", "r+")
"""The modes that write into the file they find rather than replacing it."""

Region = Mapping[Hashable, slice | Literal["auto"]] | Literal["auto"]

Encoding = Mapping[str, NodeEncoding]
"""The ``encoding`` of a write by the path of each node of its input (``""``: the
root; ``"a/b"``), each the encoding of that node's variables by name."""


class Start(Enum):
    """What a write starts from (:meth:`WriteRequest.start`)."""

    REPLACE = "replace"
    """A new file, which replaces whatever is at the target, unread (``"w"`` of the
    whole file)."""
    CREATE = "create"
    """A new file where there is none; its commit refuses a file another writer made
    meanwhile (:class:`~xarray_hurray.errors.TargetExistsError`)."""
    BASE = "base"
    """The file's current version (the *base*), read under its lock: the write goes
    into it, or into one of its groups."""


def parse_mode(mode: str | None, append_dim: Hashable | None, region: Region | None) -> str:
    """The write mode: ``mode``, or by default ``"a"`` with ``append_dim``, ``"r+"`` with
    ``region`` and ``"w"`` otherwise.

    Raises
    ------
    ValueError
        For an unknown mode, or one that does not go with ``append_dim`` or ``region``.
    """
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w"
    if mode not in WRITE_MODES:
        raise HurrayValueError(
            f"The only supported options for mode are {', '.join(map(repr, WRITE_MODES))}, "
            f"but mode={mode!r}"
        )
    if append_dim is not None and mode not in ("a", "a-"):
        raise HurrayValueError(
            f"cannot set append_dim unless mode='a', mode='a-' or mode=None, got {mode!r}"
        )
    if region is not None and mode not in ("a", "a-", "r+"):
        raise HurrayValueError(
            f"cannot set region unless mode='a', mode='a-', mode='r+' or mode=None, got {mode!r}"
        )
    return mode


def _check_slice(value: Any, region: Mapping[Hashable, Any]) -> None:
    """Refuse a value of ``region`` that is neither ``"auto"`` nor a slice of unit step
    between integers (or open ends)."""
    if isinstance(value, str) and value == "auto":
        return
    ends = (value.start, value.stop) if isinstance(value, slice) else ()
    if not isinstance(value, slice) or not all(
        end is None or (isinstance(end, numbers.Integral) and not isinstance(end, bool))
        for end in ends
    ):
        raise HurrayTypeError(
            "all values in ``region`` must be slice objects of integers or 'auto', got "
            f"region={dict(region)}"
        )
    if value.step not in (1, None):
        raise HurrayValueError(
            f"step on all slices in ``region`` must be 1 or None, got region={dict(region)}"
        )


def node_region(region: Region | None, own: xr.Dataset) -> Region | None:
    """The part of a checked ``region`` that applies to a node of a tree whose own
    variables are ``own``: the dimensions it has (groups of a tree have different
    ones); ``"auto"`` as it is."""
    if not isinstance(region, Mapping):
        return region
    return {dim: value for dim, value in region.items() if dim in own.dims}


def _check_region_reach(region: Region, tree: InputTree) -> None:
    """Refuse variables a region write does not reach: in every node the region
    applies to (each node with variables to write, in a tree), any variable without
    one of its dimensions there (as ``to_zarr`` refuses them)."""
    for node in tree.subtree():
        own = node.own
        mine = own.dims if isinstance(region, str) else node_region(region, own)
        assert isinstance(mine, Mapping)  # "auto" became the node's dimensions
        written = [k for k in own.variables if k not in own.indexes]
        if tree.children and written and not mine and not isinstance(region, str):
            raise HurrayValueError(
                f"group {'/' + node.path!r} has variables to write ({written}) but none of "
                f"the region's dimensions {list(region)}: a region write writes into a part "
                "of every variable it is given; drop them from the tree, or give their region"
            )
        outside = [k for k, v in own.variables.items() if not set(mine).intersection(v.dims)]
        if mine and outside:
            raise HurrayValueError(
                "when setting `region` explicitly in to_hurray(), all variables in the "
                "dataset to write must have at least one dimension in common with the "
                f"region's dimensions {list(mine)}, but that is not the case for some "
                "variables here. To drop these variables from this dataset before writing, "
                f"write: .drop_vars({outside!r})"
            )


def parse_region(
    region: Region | None, append_dim: Hashable | None, tree: InputTree
) -> Region | None:
    """``region`` checked against the input ``tree``, the file aside: ``"auto"``, or a
    mapping of dimensions of the input to slices of unit step or ``"auto"``, which
    reaches every variable to write and leaves out ``append_dim``.  Where it lies in
    the file is checked when the write is planned against it
    (:func:`~.region.resolve_region`).

    Raises
    ------
    TypeError, ValueError
        Naming what is wrong.
    """
    if region is None:
        return None
    if isinstance(region, str) and region == "auto":
        _check_region_reach(region, tree)
        return region
    if not isinstance(region, Mapping):
        raise HurrayTypeError(f"``region`` must be a dict, got {type(region)}")
    dims = tree.dims()
    unknown = [dim for dim in region if dim not in dims]
    if unknown and not tree.children:
        raise HurrayValueError(
            f"all keys in ``region`` are not in Dataset dimensions, got {list(region)} "
            f"and {list(tree.own.dims)}"
        )
    if unknown:
        raise HurrayValueError(
            f"region dimensions {unknown} are dimensions of no group of the tree "
            f"{sorted(map(str, dims))}",
            value=unknown,
        )
    for value in region.values():
        _check_slice(value, region)
    if append_dim is not None and append_dim in region:
        raise HurrayValueError(
            "cannot list the same dimension in both ``append_dim`` and ``region`` with "
            f"to_hurray(), got {append_dim!r} in both"
        )
    _check_region_reach(region, tree)
    return dict(region)


def parse_encoding(encoding: Mapping[Hashable, Any] | None, tree: InputTree) -> Encoding:
    """``encoding`` by the path of each node of the input ``tree``, checked against the
    variables of each: a Dataset's maps its variables to their settings; a
    DataTree's maps group paths (``"/a/b"``, as :meth:`xarray.DataTree.to_zarr` takes
    them, or ``"a/b"``) to such mappings.

    Raises
    ------
    TypeError, ValueError, KeyError
        For an encoding that is not a mapping, a group the tree does not have, and as
        :func:`~.encoding.check_encoding` raises.
    """
    if encoding is None:
        return {}
    if not isinstance(encoding, Mapping):
        raise HurrayTypeError(f"encoding must be a dict, got {encoding!r}", value=encoding)
    if tree.source is None:
        by_path: dict[str, Any] = {"": encoding} if encoding else {}
    else:
        by_path = {str(key).strip("/"): value for key, value in encoding.items()}
    paths = {node.path: node for node in tree.subtree()}
    unknown = sorted(set(by_path) - set(paths))
    if unknown:
        raise HurrayValueError(
            f"encoding given for groups {unknown}, which the tree does not have; "
            f"its groups are {sorted('/' + p for p in paths)}",
            value=unknown,
        )
    for path, entry in by_path.items():
        if not isinstance(entry, Mapping):
            raise HurrayTypeError(
                f"the encoding of group {'/' + path!r} must map its variables to their "
                f"settings, got {entry!r}",
                value=entry,
            )
        check_encoding(paths[path].own, entry)
    return by_path


@dataclass(frozen=True)
class LevelsRequest:
    """The ``overviews``, ``overview_dims`` and ``resampling`` arguments of a write;
    ``planned``: the new pyramid of the input they ask for, where the request's mode
    makes a new file (planned, and so checked, when the request is made)."""

    overviews: int | Sequence[int]
    dims: str | Sequence[Hashable] | None = None
    resampling: str | Mapping[Hashable, str] | None = None
    planned: Pyramid | None = None

    def pyramid(self, ds: xr.Dataset) -> Pyramid:
        """The new pyramid of ``ds`` (the request's input, with its encoding) these ask
        for: the one planned with the request, else planned now (a write of mode
        ``"a"`` that finds no file; see :func:`plan_pyramid`)."""
        if self.planned is not None:
            return self.planned
        return plan_pyramid(ds, self.overviews, self.dims, self.resampling)

    def check_against(self, ds: xr.Dataset, pyramid: Pyramid) -> None:
        """Check that these ask for the levels ``pyramid`` (a file's) has, for a
        write of ``ds`` into that file.

        Raises
        ------
        HurrayValueError
            Naming what differs.
        """
        if is_count(self.overviews):
            count = int(self.overviews)  # type: ignore[arg-type]  # an integer, checked
            # (no factor reaches 2**64: a larger count cannot be the file's)
            factors = tuple(2**k for k in range(1, min(count, 64) + 1))
        else:
            factors = checked_factors(self.overviews)
        asked: dict[str, Any] = {"factors": factors}
        held: dict[str, Any] = {"factors": pyramid.factors}
        if self.dims is not None:
            dims = self.dims
            asked["dims"] = (dims,) if isinstance(dims, str) else tuple(map(str, dims))
            held["dims"] = pyramid.dims
        if self.resampling is not None:
            chosen = choose_resampling(ds, pyramid.dims, self.resampling)
            asked["resampling"] = {k: v for k, v in chosen.items() if k in pyramid.resampling}
            held["resampling"] = {k: v for k, v in pyramid.resampling.items() if k in chosen}
        differ = [key for key in asked if asked[key] != held[key]]
        if differ:
            raise HurrayValueError(
                f"overviews= asks for levels other than the file's ({', '.join(differ)}: "
                f"{[asked[k] for k in differ]} against the file's {[held[k] for k in differ]}); "
                "a write into the file extends its levels as they were made: leave out "
                "overviews=, or write the file anew with mode='w'"
            )


def parse_levels(
    overviews: int | Sequence[int] | None,
    overview_dims: Sequence[Hashable] | None,
    resampling: str | Mapping[Hashable, str] | None,
    group: str,
    data: xr.Dataset | xr.DataTree,
    encoding: NodeEncoding,
    new: bool,
) -> LevelsRequest | None:
    """The overview levels asked for, if any, their arguments checked against the
    input (:func:`~.overview_plan.check_level_arguments`).  Where the write makes a new
    file (``new``: its mode replaces whatever is there), the pyramid of ``data`` with
    its ``encoding`` is planned now (:func:`~.overview_plan.plan_pyramid`: whether the
    levels are of use for the input's sizes, what each variable's type allows), so
    that it fails before the target is looked at, and is planned once.  Whether they
    fit a file's levels is checked against the file
    (:meth:`LevelsRequest.check_against`); a write of mode ``"a"`` that finds no file
    plans its new pyramid then.

    Raises
    ------
    TypeError, ValueError
        With a group (the levels are the top groups of the file), for a DataTree, for
        ``overview_dims`` or ``resampling`` without ``overviews``, and as
        :func:`~.overview_plan.check_level_arguments` raises.
    """
    if overviews is None:
        if overview_dims is not None or resampling is not None:
            raise HurrayValueError(
                "overview_dims= and resampling= say how the levels overviews= asks for "
                "are made; give overviews= too (a write into a file with overviews makes "
                "its levels as the file records)"
            )
        return None
    if group:
        raise HurrayValueError(
            "overviews= writes the levels as the top groups of the file; it does "
            f"not take group= (got {group!r})",
            value=group,
        )
    if not isinstance(data, xr.Dataset):
        raise HurrayTypeError("overviews are made of a Dataset; write a DataTree's levels yourself")
    check_level_arguments(data, overviews, overview_dims, resampling)
    planned = None
    if new:
        planned = plan_pyramid(with_encoding(data, encoding), overviews, overview_dims, resampling)
    return LevelsRequest(overviews, overview_dims, resampling, planned)


def _check_positive(name: str, value: Any) -> int:
    """``value``, checked to be an integer of at least 1 (not a bool)."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise HurrayValueError(f"{name} must be an integer >= 1, got {value!r}", value=value)
    return int(value)


@dataclass(frozen=True)
class StorageSettings:
    """How new variables are stored, and how chunks are written: ``defaults`` holds
    ``layout``, ``chunk_order`` and ``codecs``, which a variable's encoding
    overrides."""

    defaults: Mapping[str, Any]
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    write_empty_chunks: bool = False
    safe_chunks: bool = True
    part_bytes: int = DEFAULT_PART_BYTES

    def check(self) -> StorageSettings:
        """These settings, once checked: the defaults as storage settings of any
        variable, sizes of at least one byte.

        Raises
        ------
        TypeError, ValueError
            Naming the argument.
        """
        check_storage_settings(self.defaults, None, "the arguments")
        _check_positive("chunk_bytes", self.chunk_bytes)
        _check_positive("part_bytes", self.part_bytes)
        return self


@dataclass(frozen=True)
class WriteRequest:
    """One write, as asked for: checked when made, against its input, before the
    target is looked at.

    Parameters
    ----------
    mode
        ``"w"``, ``"w-"``, ``"a"``, ``"a-"`` or ``"r+"`` (see :func:`parse_mode`).
    group
        The path of the group the input's root goes to (``""``: the file's root).
    append_dim, region
        As ``to_zarr`` takes them (``region`` checked by :func:`parse_region`).
    encoding
        The encoding of new variables, by the path of each node of the input
        (:func:`parse_encoding`).
    settings
        Storage settings of new variables.
    levels
        The overview levels asked for, if any.
    window, progress
        How the engine runs the write (see :func:`~xarray_hurray.write.engine.execute`).
    """

    mode: str
    group: str = ""
    append_dim: Hashable | None = None
    region: Region | None = None
    encoding: Encoding = field(default_factory=dict)
    settings: StorageSettings = StorageSettings({})
    levels: LevelsRequest | None = None
    window: int = DEFAULT_WINDOW
    progress: bool | None = None

    @classmethod
    def parse(
        cls,
        data: xr.Dataset | xr.DataTree,
        *,
        mode: str | None,
        group: str | None,
        append_dim: Hashable | None,
        region: Region | None,
        encoding: Mapping[Hashable, Any] | None,
        settings: StorageSettings,
        levels: tuple[
            int | Sequence[int] | None,
            Sequence[Hashable] | None,
            str | Mapping[Hashable, str] | None,
        ],
        window: int,
        progress: bool | None,
    ) -> WriteRequest:
        """The request of these arguments for writing ``data``, each checked.

        Raises
        ------
        ValueError, TypeError, KeyError
            Naming the argument that is wrong.
        """
        path = group_path(group)
        tree = InputTree.of(data)
        parsed_mode = parse_mode(mode, append_dim, region)
        by_path = parse_encoding(encoding, tree)
        return cls(
            mode=parsed_mode,
            group=path,
            append_dim=append_dim,
            region=parse_region(region, append_dim, tree),
            encoding=by_path,
            settings=settings.check(),
            levels=parse_levels(
                *levels, path, data, by_path.get("", {}), parsed_mode not in INTO_FILE_MODES
            ),
            window=check_window(window),
            progress=progress,
        )

    def start(self, exists: bool, where: str, since: str | None = None) -> Start:
        """What the write starts from, given whether a file ``exists`` at the target
        (``where``, for messages): ``"w"`` of the whole file replaces it unread; a
        write into the file (``"a"``, ``"a-"``, ``"r+"``) or of one of its groups reads
        it; where there is none, a new file is created, committed only where there
        is still none.

        ``since`` says, for a file found where there was none before, when it came:
        ``"pending"`` (since the write was asked for) or ``"written"`` (while it was
        written, its commit refused); None: no file was looked for before.

        Raises
        ------
        FileExistsError
            With ``"w-"`` of the whole file, where there is a file
            (:class:`~xarray_hurray.errors.TargetExistsError` where it came ``since``).
        """
        whole = not self.group
        if exists and self.refuses_existing and whole:
            if since is not None:
                raise TargetExistsError(
                    f"{where}: another writer created a file there while this one was "
                    f"{since}; it was left as it is",
                    value=where,
                )
            raise FileExistsError(errno.EEXIST, "a file exists at the target (mode='w-')", where)
        if exists and (self.into_file or not whole):
            return Start.BASE
        if exists or (self.mode == "w" and whole):
            return Start.REPLACE
        return Start.CREATE

    def group_into(self, root: DatasetMeta | None, where: str) -> DatasetMeta | None:
        """The group of the version ``root`` (None: a new file) at the request's path
        that the input is written into, node by node; None where the input replaces
        the group there, or adds it: ``"w"`` and ``"w-"`` of a group, a group the file
        lacks, a new file.

        Raises
        ------
        FileExistsError
            With ``"w-"`` of a group ``root`` holds.
        FileNotFoundError, ValueError
            Where there is no file, or ``root`` lacks the group, and the write needs
            one to write into (``"r+"``, ``region``, ``append_dim``).
        """
        try:
            held = root.group(self.group) if root is not None else None
        except KeyError:
            held = None
        named = f"group {'/' + self.group!r}"
        if held is not None and self.refuses_existing:
            raise FileExistsError(
                errno.EEXIST,
                f"the file holds the {named} (mode='w-'); use mode='w' to replace it or "
                "mode='a' to write into it",
                where,
            )
        if held is None and self.needs_file and root is None:
            raise FileNotFoundError(
                errno.ENOENT,
                "no file to write into (mode='r+', append_dim and region write into a file)",
                where,
            )
        if held is None and self.needs_file:
            raise HurrayValueError(
                f"{named} is not in the file: mode='r+', append_dim and region write only "
                "into groups the file holds; use mode='a' without them to add it",
                value=self.group,
            )
        return held if self.into_file else None

    @property
    def into_file(self) -> bool:
        """Whether the write goes into the file it finds (``"a"``, ``"a-"``, ``"r+"``)
        rather than replacing it (``"w"``, ``"w-"``)."""
        return self.mode in INTO_FILE_MODES

    @property
    def writes_into_only(self) -> bool:
        """Whether the write only writes into groups the file holds (``"r+"``, a
        region)."""
        return self.mode == "r+" or self.region is not None

    @property
    def needs_file(self) -> bool:
        """Whether the write needs the file's group to write into (also ``append_dim``)."""
        return self.writes_into_only or self.append_dim is not None

    @property
    def adds_variables(self) -> bool:
        """Whether variables the file lacks may be added (all modes but ``"r+"``)."""
        return self.mode != "r+"

    @property
    def keeps_attrs(self) -> bool:
        """Whether the file's attributes are kept rather than the input's (``"r+"``)."""
        return self.mode == "r+"

    @property
    def keeps_unappended(self) -> bool:
        """Whether variables the file holds that lack ``append_dim`` are left as they
        are (``"a-"``) rather than overwritten."""
        return self.mode == "a-"

    @property
    def refuses_existing(self) -> bool:
        """Whether a file, or a group, the write would replace is refused (``"w-"``)."""
        return self.mode == "w-"
