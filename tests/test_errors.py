"""The package's errors: one base, the built-in type each stood for, the bad value
kept, the original chained; the CLI reports only these (and OS refusals) as one line."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray import errors
from xarray_hurray.cli import main
from xarray_hurray.container import VariableMeta, parse_codecs
from xarray_hurray.layout import RowMajorLayout, chunk_placement, layout_for_shape


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (errors.LayoutError, ValueError),
        (errors.HurrayFormatError, ValueError),
        (errors.HurrayValueError, ValueError),
        (errors.HurrayTypeError, TypeError),
        (errors.HurrayKeyError, KeyError),
        (errors.TargetExistsError, FileExistsError),
        (errors.SourceChangedError, OSError),
        (errors.HurrayChangedError, errors.SourceChangedError),
        (errors.SourceReadError, OSError),
        (errors.UnsupportedZarrError, RuntimeError),
        (errors.CliError, Exception),
    ],
)
def test_every_error_is_a_hurray_error_and_keeps_its_builtin_type(error, builtin):
    assert issubclass(error, errors.HurrayError) and issubclass(error, builtin)


@pytest.mark.parametrize(
    ("call", "value"),
    [
        (lambda: chunk_placement((4, 4), "zigzag"), "zigzag"),
        (lambda: layout_for_shape("spiral", (4, 4)), "spiral"),
        (lambda: parse_codecs("gzip"), {"id": "gzip"}),
    ],
)
def test_errors_keep_the_bad_value(call, value):
    with pytest.raises(errors.HurrayError) as raised:
        call()
    assert raised.value.value == value


def test_a_missing_name_prints_as_a_sentence_not_a_quoted_key(tmp_path):
    ds = xr.Dataset({"v": (("x",), np.zeros(3))})
    with pytest.raises(KeyError) as raised:
        xh.to_hurray(ds, tmp_path / "out.hurray", encoding={"w": {"chunks": (1,)}})
    assert str(raised.value) == "encoding given for 'w', which is not a variable of the dataset"
    assert raised.value.value == "w"


def test_context_is_added_to_a_copy_and_the_original_is_chained():
    with pytest.raises(
        errors.HurrayValueError, match="variable 'v': chunk order 'zigzag'"
    ) as raised:
        VariableMeta("v", ("x",), (4,), "float32", (4,), RowMajorLayout(), chunk_order="zigzag")
    original = raised.value.__cause__
    assert type(original) is errors.HurrayValueError and "variable" not in str(original)


def test_an_argument_error_in_to_hurray_chains_the_original(tmp_path):
    # the layout given for every variable is checked with the other arguments, before
    # any variable is described: the error names the arguments, not a variable
    ds = xr.Dataset({"v": (("x",), np.arange(4.0))})
    with pytest.raises(
        errors.LayoutError, match=r"^the arguments: unknown layout 'spiral'"
    ) as raised:
        xh.to_hurray(ds, tmp_path / "v.hurray", layout="spiral")
    assert isinstance(raised.value.__cause__, errors.LayoutError)
    assert raised.value.value == raised.value.__cause__.value == "spiral"


def test_the_cli_reports_its_own_errors_as_one_line(tmp_path, capsys):
    assert main(["info", str(tmp_path / "missing.hurray")]) == 2
    assert (
        capsys.readouterr().err.strip() == f"hurray: error: no such file: {tmp_path}/missing.hurray"
    )


def test_the_cli_lets_an_internal_bug_show_its_traceback(tmp_path, monkeypatch):
    from xarray_hurray.cli import info

    def broken(args):
        raise ValueError("a bug, not a user mistake")

    monkeypatch.setattr(info, "run", broken)
    with pytest.raises(ValueError, match="a bug"):
        main(["info", str(tmp_path / "any.hurray")])
