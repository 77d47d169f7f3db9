"""A tree of many groups: finding a group or a variable by its path does not walk
the tree, so that opening every group of a file (``open_datatree``, ``verify``,
``info``) costs linear time in the groups (docs/reliability.md, "Many groups")."""

from __future__ import annotations

import time

from xarray_hurray.container import DatasetMeta, VariableMeta
from xarray_hurray.layout import RowMajorLayout


def wide_tree(count: int) -> DatasetMeta:
    """A root with ``count`` groups of one variable each, every tenth group holding a
    child group of its own."""
    groups = []
    for k in range(count):
        var = VariableMeta(
            name="v", dims=("x",), shape=(3,), dtype="float32", chunks=(3,), layout=RowMajorLayout()
        )
        below = (DatasetMeta(attrs={}, variables=(var,), name="deep"),) if k % 10 == 0 else ()
        groups.append(DatasetMeta(attrs={"k": k}, variables=(var,), groups=below, name=f"g{k}"))
    return DatasetMeta(attrs={}, variables=(), groups=tuple(groups))


def test_every_group_and_variable_of_a_wide_tree_is_found_by_its_path_in_linear_time():
    tree = wide_tree(20_000)
    walked = list(tree.walk())
    variables = tree.all_variables()
    start = time.process_time()
    found = [tree.group(path) for path, _ in walked]
    found_variables = [tree.variable(path) for path, _ in variables]
    seconds = time.process_time() - start
    assert all(a is b for a, b in zip(found, (g for _, g in walked), strict=True))
    assert all(a is b for a, b in zip(found_variables, (v for _, v in variables), strict=True))
    assert tree.group("/g7/").attrs == {"k": 7} and tree.group("g10/deep").name == "deep"
    assert tree.variable("/g10/deep/v") is tree.group("g10/deep").variables[0]
    # a walk along the children per lookup (22,000 lookups of up to 20,000 steps) took
    # over a minute here
    assert seconds < 2, seconds
