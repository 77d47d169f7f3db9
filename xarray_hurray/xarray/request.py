"""What a write asks for, checked once: :class:`WriteRequest`, made from the arguments
of ``to_hurray`` by the ``parse_*`` functions, each of which checks one argument and
raises a clear error naming it."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import HurrayValueError
from ..io.multipart import DEFAULT_PART_BYTES
from ..write.engine import DEFAULT_WINDOW, check_window
from .encoding import DEFAULT_CHUNK_BYTES
from .overview_write import LevelsRequest
from .tree import group_path

WRITE_MODES = ("w", "w-", "a", "a-", "r+")
"""The values of ``to_hurray(mode=...)``, with ``to_zarr``'s meaning."""

Region = Mapping[Hashable, slice | Literal["auto"]] | Literal["auto"]


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


def parse_levels(
    overviews: int | Sequence[int] | None,
    overview_dims: Sequence[Hashable] | None,
    resampling: str | Mapping[Hashable, str] | None,
    group: str,
) -> LevelsRequest | None:
    """The overview levels asked for, if any.

    Raises
    ------
    ValueError
        With a group: the levels are the top groups of the file.
    """
    if overviews is None:
        return None
    if group:
        raise HurrayValueError(
            "overviews= writes the levels as the top groups of the file; it does "
            f"not take group= (got {group!r})",
            value=group,
        )
    return LevelsRequest(overviews, overview_dims, resampling)


@dataclass(frozen=True)
class StorageSettings:
    """How new variables are stored, and how chunks are written.

    ``encoding`` maps variable names (for a tree, group paths, then names) to their
    settings; ``defaults`` holds ``layout``, ``chunk_order`` and ``codecs``, which
    those settings override.
    """

    encoding: Mapping[Hashable, Any]
    defaults: Mapping[str, Any]
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    write_empty_chunks: bool = False
    safe_chunks: bool = True
    part_bytes: int = DEFAULT_PART_BYTES


@dataclass(frozen=True)
class WriteRequest:
    """One write, as asked for: checked when made, before the target is looked at.

    Parameters
    ----------
    mode
        ``"w"``, ``"w-"``, ``"a"``, ``"a-"`` or ``"r+"`` (see :func:`parse_mode`).
    group
        The path of the group the input's root goes to (``""``: the file's root).
    append_dim, region
        As ``to_zarr`` takes them.
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
    settings: StorageSettings = StorageSettings({}, {})
    levels: LevelsRequest | None = None
    window: int = DEFAULT_WINDOW
    progress: bool | None = None

    @classmethod
    def parse(
        cls,
        *,
        mode: str | None,
        group: str | None,
        append_dim: Hashable | None,
        region: Region | None,
        settings: StorageSettings,
        levels: tuple[
            int | Sequence[int] | None,
            Sequence[Hashable] | None,
            str | Mapping[Hashable, str] | None,
        ],
        window: int,
        progress: bool | None,
    ) -> WriteRequest:
        """The request of these arguments, each checked.

        Raises
        ------
        ValueError, TypeError
            Naming the argument that is wrong.
        """
        path = group_path(group)
        return cls(
            mode=parse_mode(mode, append_dim, region),
            group=path,
            append_dim=append_dim,
            region=region,
            settings=settings,
            levels=parse_levels(*levels, path),
            window=check_window(window),
            progress=progress,
        )

    @property
    def into_file(self) -> bool:
        """Whether the write goes into the file it finds (``"a"``, ``"a-"``, ``"r+"``)
        rather than replacing it (``"w"``, ``"w-"``)."""
        return self.mode in ("a", "a-", "r+")

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

    @property
    def exclusive(self) -> bool:
        """Whether a new file must not replace one made meanwhile by another writer:
        every mode but ``"w"`` of the whole file."""
        return self.mode != "w" or bool(self.group)
