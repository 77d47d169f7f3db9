"""The package imports light: reading needs numpy and the codecs alone, each heavy
library loads when something asks for it, and the ``.hurray`` accessors are there
whenever xarray is.  Each check runs in a fresh interpreter (``sys.modules`` of this
one holds everything the suite has imported)."""

from __future__ import annotations

import ast
import json
import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.cli.main import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(xh.__file__).parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from latency_server import LatencyServer  # noqa: E402

# keeps other packages' xarray engines from being imported: xarray loads every
# installed engine's entry point at the first open, and some import dask's arrays
# themselves (rioxarray's, of the test extra), which would hide what ours does
from open_with_dask import HIDE_OTHER_ENGINES  # noqa: E402
from scripts import run_code  # noqa: E402

HEAVY = ("xarray", "pandas", "dask", "zarr", "fsspec")
"""What a reader must not load."""

REPORT_HEAVY = f"import sys, json\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"


def run_python(*parts: str) -> str:
    """Run the code of ``parts`` (each dedented), one after the other, in a new
    interpreter importing this package from where this process does; its standard
    output (the test fails, with standard error, on an error)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE.parent), env.get("PYTHONPATH")]))
    return run_code("\n".join(textwrap.dedent(part) for part in parts), env=env, timeout=120)


def heavy_loaded(code: str) -> list[str]:
    """The heavy libraries loaded once ``code`` has run in a new interpreter."""
    found: list[str] = json.loads(run_python(code, REPORT_HEAVY).splitlines()[-1])
    return found


def test_import_loads_nothing_heavy():
    assert heavy_loaded("import xarray_hurray") == []


def test_every_module_of_the_format_imports_light():
    code = """
    import importlib, pkgutil
    import xarray_hurray
    for package in ("layout", "io", "container"):
        found = importlib.import_module(f"xarray_hurray.{package}")
        for info in pkgutil.iter_modules(found.__path__):
            if info.name != "tile_kernels":  # numba's, imported where it is installed
                importlib.import_module(f"xarray_hurray.{package}.{info.name}")
    """
    assert heavy_loaded(code) == []


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """A file of two variables with coordinates, written by ``to_hurray``."""
    path = tmp_path_factory.mktemp("lazy") / "data.hurray"
    ds = xr.Dataset(
        {"v": (("y", "x"), np.arange(96 * 80, dtype="f4").reshape(96, 80))},
        coords={"y": np.arange(96.0), "x": np.arange(80.0) / 2},
    )
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (32, 32)}})
    return path


@pytest.mark.parametrize("where", ["local", "http"])
def test_reading_a_region_loads_nothing_heavy(written, where):
    with LatencyServer(written.parent, latency=0) as server:
        target = str(written) if where == "local" else server.url(written.name)
        code = f"""
        import json
        import xarray_hurray
        reader = xarray_hurray.open_reader({target!r})
        print(json.dumps(reader.read("v", (slice(10, 50), slice(30, 71))).tolist()))
        """
        lines = run_python(code, REPORT_HEAVY, "print('asyncio' in sys.modules)").splitlines()
    region = np.arange(96 * 80, dtype="f4").reshape(96, 80)[10:50, 30:71]
    np.testing.assert_array_equal(np.array(json.loads(lines[0]), dtype="f4"), region)
    assert json.loads(lines[1]) == []
    assert lines[2] == "False"  # asyncio too: a read that never awaits skips it


ACCESSORS = """
import xarray as xr
tree = xr.DataTree(xr.Dataset({"a": ("x", [1, 2])}))
for obj in (tree.to_dataset(), tree.to_dataset()["a"], tree):
    print(type(obj.hurray).__module__, type(obj.hurray).__name__)
"""
"""Prints the class of each accessor: of a Dataset, a DataArray and a DataTree."""

REGISTERED = [
    "xarray_hurray.xarray.accessor HurrayAccessor",
    "xarray_hurray.xarray.accessor HurrayArrayAccessor",
    "xarray_hurray.xarray.accessor HurrayTreeAccessor",
]

OPEN = "import xarray as xr\nxr.open_dataset({path!r}).close()\n"
"""An open by xarray (the engine guessed): xarray loads the engines' entry points."""

OWN_FINDER = """
import importlib.abc, importlib.machinery, sys
class OwnFinder(importlib.abc.MetaPathFinder):
    # as an editable install's or a frozen application's finder does: it resolves
    # xarray itself, before the finders that come after it are asked
    def find_spec(self, fullname, path, target=None):
        if fullname.partition(".")[0] != "xarray":
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, path)
sys.meta_path.insert(0, OwnFinder())
"""

FAILED_FIRST_IMPORT = """
import sys
sys.modules["pandas"] = None  # xarray's first import fails: pandas cannot be imported
try:
    import xarray
except ImportError:
    pass
else:
    raise AssertionError("xarray imported without pandas")
del sys.modules["pandas"]  # and the retry succeeds
"""

IMPORT_ORDERS = [
    pytest.param("import xarray\nimport xarray_hurray\n", id="xarray, then the package"),
    pytest.param(
        "import sys\n"
        + OPEN.replace("{path!r}", "{path!r}, engine='hurray'")
        + "assert 'xarray_hurray' in sys.modules\n",
        id="the engine alone",
    ),
    pytest.param("import xarray_hurray\n" + OPEN, id="the package, then an open"),
    pytest.param(
        "import xarray_hurray\nimport xarray_hurray.xarray.accessor\n",
        id="the package, then its accessor module",
        marks=pytest.mark.slow,
    ),
    # issue 43, item 12: a finder before the package's resolves xarray, or xarray's
    # first import fails and a retry succeeds; each after the package, or before xarray
    *[
        pytest.param(code, id=name, marks=pytest.mark.slow)
        for setup, what in [
            (OWN_FINDER, "a finder of xarray's own"),
            (FAILED_FIRST_IMPORT, "a failed import of xarray, a retry"),
        ]
        for code, name in [
            ("import xarray_hurray\n" + setup + OPEN, f"the package, {what}, an open"),
            (setup + "import xarray\nimport xarray_hurray\n", f"{what}, xarray, the package"),
        ]
    ],
]
"""Each order of imports a user may write, and what registers the accessors in it
(those of issue 43, item 12, and the rarer ones run with the slow tests)."""


@pytest.mark.parametrize("order", IMPORT_ORDERS)
def test_accessors_are_registered_in_every_order_of_import(order, written):
    code = order.format(path=str(written))
    assert run_python(code, ACCESSORS).splitlines() == REGISTERED


def test_without_xarray_the_accessors_wait_for_the_package_to_meet_it():
    # The package imported before xarray, and xarray then used on objects made in
    # memory, with neither an open nor the accessor module: nothing of the package has
    # run since xarray's import, so the accessors are not there (README, "Use").
    code = """
    import xarray_hurray
    import xarray as xr
    try:
        xr.Dataset().hurray
    except AttributeError as err:
        print(err)
    """
    assert run_python(code) == "'Dataset' object has no attribute 'hurray'\n"


@pytest.mark.slow
def test_imports_leave_the_import_system_alone():
    code = """
    import sys
    before = list(sys.meta_path)
    import xarray_hurray
    assert sys.meta_path == before, (before, sys.meta_path)
    import xarray
    import xarray_hurray.xarray.accessor
    assert not [f for f in sys.meta_path if type(f).__module__.startswith("xarray_hurray")]
    assert type(xarray.__spec__.loader).__module__ == "_frozen_importlib_external"
    """
    run_python(code)


@pytest.mark.slow
def test_the_package_imports_where_xarray_cannot_be_imported(written):
    # an environment that blocks xarray (sys.modules[name] = None) still reads
    code = f"""
    import sys
    sys.modules["xarray"] = None
    import xarray_hurray
    print(xarray_hurray.open_reader({str(written)!r}).read("v", (slice(3, 4), slice(4, 5))))
    """
    assert run_python(code) == "[[244.]]\n"


def test_the_accessors_write(tmp_path):
    # registered by the package's import after xarray's, the accessor's methods reach
    # the writers
    target = tmp_path / "out.hurray"
    code = f"""
    import numpy as np
    import xarray as xr
    import xarray_hurray
    xr.Dataset({{"v": ("x", np.arange(5))}}).hurray.to_hurray({str(target)!r})
    """
    run_python(code)
    with xr.open_dataset(target, engine="hurray") as back:
        np.testing.assert_array_equal(back["v"].values, np.arange(5))


@pytest.mark.parametrize(
    "package",
    ["xarray_hurray", "xarray_hurray.xarray", "xarray_hurray.container", "xarray_hurray.io"],
)
def test_every_public_name_resolves(package):
    code = f"""
    import importlib
    module = importlib.import_module({package!r})
    missing = [name for name in module.__all__ if name not in dir(module)]
    assert not missing, missing
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    try:
        module.no_such_name
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("an unknown name resolved")
    print("ok")
    """
    assert run_python(code) == "ok\n"


def test_lazy_names_are_the_writers_themselves():
    from xarray_hurray.xarray import multiscale, to_hurray, to_zarr

    assert (xh.to_hurray, xh.to_zarr, xh.multiscale) == (to_hurray, to_zarr, multiscale)


def test_help_loads_nothing_heavy():
    code = """
    import contextlib, io
    from xarray_hurray.cli import main
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main(["--help"])
        except SystemExit:
            pass
    assert all(name in out.getvalue() for name in ("convert", "info", "view")), out.getvalue()
    """
    assert heavy_loaded(code) == []


PYRAMID = ROOT / "tests" / "data" / "fuzz_seed_1_3_pyramid.hurray"
"""A golden file with overviews: its record of them is read by ``hurray info``."""


def test_info_loads_nothing_heavy():
    code = f"""
    import contextlib, io, json
    from xarray_hurray.cli import main
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["info", "--json", {str(PYRAMID)!r}]) == 0
    print(json.dumps([level["factor"] for level in json.loads(out.getvalue())["levels"]]))
    """
    lines = run_python(code, REPORT_HEAVY).splitlines()
    assert json.loads(lines[0]) == [1, 2, 4]
    assert json.loads(lines[1]) == []


def test_opening_a_pyramid_through_xarray_loads_neither_dask_arrays_nor_zarr():
    code = f"""
    import sys
    import xarray as xr
    with xr.open_dataset({str(PYRAMID)!r}, engine="hurray") as ds:
        print(dict(ds.sizes))
    print(sorted(m for m in ("dask.array", "zarr") if m in sys.modules))
    """
    sizes, loaded = run_python(HIDE_OTHER_ENGINES, code).splitlines()
    assert sizes == "{'time': 2, 'y': 8, 'x': 6}"  # level 0, as the file's record says
    assert loaded == "[]"


PICKS = [((1,), {}), ((), {"size": {"x": 3}}), ((), {"resolution": {"x": 2.0}})]
"""The ways of picking level 1 of the pyramid: its number, a size, a resolution."""


def test_picking_a_level_and_reading_a_tile_loads_neither_dask_arrays_nor_zarr():
    # (xarray itself imports dask's core to ask whether an array is a dask one, and
    # dask.array where an integer index makes a new Variable: a tile takes slices);
    # every way of picking in one interpreter, what is loaded looked at after each
    code = f"""
    import sys
    import xarray as xr
    tree = xr.open_datatree({str(PYRAMID)!r}, engine="hurray")
    for args, kwargs in {PICKS!r}:
        level = tree.hurray.level(*args, **kwargs)
        tile = level["t"][:1, :2, :2].values
        loaded = sorted(m for m in ("dask.array", "zarr") if m in sys.modules)
        print(level.attrs["overview_level"], tile.shape, loaded)
    """
    lines = run_python(HIDE_OTHER_ENGINES, code).splitlines()
    assert lines == ["1 (1, 2, 2) []"] * len(PICKS)


def test_opening_with_dask_loads_only_what_dask_chunks_need(written):
    # chunks={} makes xarray import dask.array, whatever the engine; the engine itself
    # adds the format's modules and nothing a user did not ask for
    code = f"""
    import sys
    import xarray as xr
    ds = xr.open_dataset({str(written)!r}, engine="hurray", chunks={{}})
    assert ds.v.data.numblocks == (3, 3)
    unasked = ("zarr", "fsspec", "numba", "distributed", "aiohttp")
    print(sorted(m for m in unasked if m in sys.modules))
    """
    assert run_python(HIDE_OTHER_ENGINES, code).splitlines()[-1] == "[]"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_of_the_table_has_its_module(command, capsys):
    with pytest.raises(SystemExit) as stopped:
        build_parser(command).parse_args([command, "--help"])
    assert stopped.value.code == 0
    assert f"usage: hurray {command}" in capsys.readouterr().out


LIGHT = [PACKAGE / name for name in ("__init__.py", "errors.py", "lazy.py")] + [
    path for folder in ("layout", "io", "container") for path in (PACKAGE / folder).glob("*.py")
]
"""The modules every reader imports: none imports a heavy library at its top level."""


def top_level_imports(tree: ast.Module) -> list[str]:
    """The modules ``tree`` imports when it runs: at its top level, in blocks there
    (``try``, ``if``), but not in functions, classes or ``if TYPE_CHECKING:``."""
    found: list[str] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
        elif isinstance(node, ast.If):
            if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                pending += node.body + node.orelse
        elif isinstance(node, ast.Try):
            pending += node.body + node.orelse + node.finalbody
            pending += [stmt for handler in node.handlers for stmt in handler.body]
        elif isinstance(node, ast.With):
            pending += node.body
    return found


@pytest.mark.parametrize("path", LIGHT, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_heavy_import_at_the_top_of_a_reader_module(path):
    imported = top_level_imports(ast.parse(path.read_text(encoding="utf-8")))
    assert not [name for name in imported if name.partition(".")[0] in HEAVY]


def test_the_lint_sees_top_level_imports():
    code = textwrap.dedent(
        """
        import dask.array as da
        from typing import TYPE_CHECKING
        try:
            from zarr import open_array
        except ImportError:
            import fsspec
        if TYPE_CHECKING:
            import xarray
        def later():
            import pandas
        """
    )
    assert sorted(top_level_imports(ast.parse(code))) == ["dask.array", "fsspec", "typing", "zarr"]
