"""The input of a write as a tree of groups: :class:`InputTree`.  A Dataset is a tree
of one node, its variables in their own order (the order of the file's).  Each node
carries the ``encoding`` the write was given for its variables."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import xarray as xr

from ..container.metadata import check_new_node_name, check_node_name
from ..errors import HurrayTypeError

NodeEncoding = Mapping[Hashable, Mapping[str, Any]]
"""The ``encoding`` of the variables of one node of a write's input, by name."""


def group_path(group: Any, new: bool = True) -> str:
    """The path of the group a write (``new``) or a read names (``"a/b"``,
    ``"/a/b"``), without its outer slashes; ``""`` for the root (``"/"``, ``None``).
    A read takes the names earlier writers gave (periods alone); a write does not.

    Raises
    ------
    TypeError, ValueError
        For a group that is not a string, or a part of its path that cannot name a
        group (``"a//b"``; for a write, ``"a/../b"``).
    """
    if group is None:
        return ""
    if not isinstance(group, str):
        raise HurrayTypeError(f"group must be a string such as 'a/b', got {group!r}", value=group)
    path = group.strip("/")
    check = check_new_node_name if new else check_node_name
    for part in path.split("/") if path else ():
        check(part, f"a part of the group path {group!r}")
    return path


@dataclass(frozen=True, eq=False)
class InputTree:
    """One node of the input of a write, with the nodes below it.

    Parameters
    ----------
    own
        The node's own variables and attributes.
    path
        Its path in the tree (``"a/b"``; ``""``: the root).
    children
        The nodes below it, by name.
    source
        The DataTree node it was made of, whose inherited coordinates place it;
        None for a Dataset.
    encoding
        The encoding given for its variables.
    """

    own: xr.Dataset
    path: str = ""
    children: Mapping[str, InputTree] = ()  # type: ignore[assignment]  # no children
    source: xr.DataTree | None = None
    encoding: NodeEncoding = field(default_factory=dict)

    @classmethod
    def of(
        cls, data: xr.Dataset | xr.DataTree, encoding: Mapping[str, NodeEncoding] | None = None
    ) -> InputTree:
        """The tree of ``data`` (a Dataset is a tree of one node), each node with its
        entry of ``encoding`` (by node path, checked: see
        :func:`~.request.parse_encoding`)."""
        by_path = encoding or {}
        if isinstance(data, xr.Dataset):
            return cls(data, "", {}, None, by_path.get("", {}))
        return cls._node(data, "", by_path)

    @classmethod
    def _node(cls, node: xr.DataTree, path: str, encoding: Mapping[str, NodeEncoding]) -> InputTree:
        children = {
            str(name): cls._node(child, f"{path}/{name}" if path else str(name), encoding)
            for name, child in node.children.items()
        }
        own = node.to_dataset(inherit=False)
        return cls(own, path, children, node, encoding.get(path, {}))

    @property
    def name(self) -> str:
        """The node's name: the last part of its path (``""`` for the root)."""
        return self.path.rpartition("/")[2]

    @property
    def placing(self) -> xr.Dataset:
        """The node's variables with the coordinates it inherits (what places it)."""
        return self.own if self.source is None else self.source.to_dataset(inherit=True)

    def subtree(self) -> Iterator[InputTree]:
        """This node and every node below it, parents first."""
        yield self
        for child in self.children.values():
            yield from child.subtree()

    def dims(self) -> set[Hashable]:
        """The dimensions of every node."""
        return {dim for node in self.subtree() for dim in node.own.dims}
