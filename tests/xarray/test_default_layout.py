"""The default element layout: row-major wherever a chunk is decoded whole, so the
default path permutes nothing and loads no compiled code; curves as explicit choices."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.container import ContainerReader
from xarray_hurray.io import LocalFileSource
from xarray_hurray.layout import default_layout


def dataset() -> xr.Dataset:
    rng = np.random.default_rng(3)
    return xr.Dataset(
        {
            "field": (("t", "y", "x"), rng.random((2, 32, 48)).astype("f4")),
            "mask": (("y", "x"), rng.random((32, 48)) > 0.5),
            "series": ("t", np.array([1.5, 2.5])),
        },
        coords={"y": np.arange(32), "x": np.arange(48)},
    )


def test_the_default_layout_is_row_major_unless_a_chunk_is_read_in_part() -> None:
    assert default_layout(read_in_part=False) == "row-major"
    assert default_layout(read_in_part=True) == "auto"


def test_a_hurray_file_stores_row_major_chunks_by_default(tmp_path) -> None:
    ds = dataset()
    path = tmp_path / "default.hurray"
    xh.to_hurray(ds, path, codecs=None, encoding={"field": {"chunks": (1, 16, 16)}})
    reader = ContainerReader(LocalFileSource(path))
    for var in reader.metadata.variables:
        assert var.layout.to_config() == {"name": "row-major"}, var.name
    # with no codec a stored chunk is the chunk's elements in C order, as numpy has them
    field = reader.metadata.variable("field")
    index = reader.index("field")
    grid = (2, 2, 3)
    first = int(np.ravel_multi_index((1, 1, 2), grid))
    with open(path, "rb") as f:
        f.seek(int(index["offset"][first]))
        stored = f.read(int(index["size"][first]))
    assert field.chunks == (1, 16, 16)
    assert stored == np.ascontiguousarray(ds["field"].values[1:2, 16:32, 32:48]).tobytes()
    with xr.open_dataset(path, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), ds)


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        ("auto", {"name": "hilbert", "hilbert_rank": 2, "hilbert_order": 4}),
        ("morton", {"name": "morton", "morton_bits": [4, 4]}),
    ],
)
def test_curves_stay_explicit_choices(tmp_path, layout, expected) -> None:
    ds = dataset()[["mask"]]
    path = tmp_path / f"{layout}.hurray"
    xh.to_hurray(ds, path, layout=layout, encoding={"mask": {"chunks": (16, 16)}})
    reader = ContainerReader(LocalFileSource(path))
    assert reader.metadata.variable("mask").layout.to_config() == expected
    with xr.open_dataset(path, engine="hurray") as back:
        xr.testing.assert_identical(back.load(), ds)


@pytest.mark.slow
def test_the_default_path_loads_no_compiled_code(tmp_path) -> None:
    """A fresh process writes and reads a Hurray file and a Hurray-in-Zarr store with
    the defaults, and numba is never imported (an explicit curve does import it), nor
    dask.distributed by the file's write."""
    pytest.importorskip("numba")
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        import xarray as xr
        import xarray_hurray as xh

        # 2**18 elements: a curve of this chunk is worth the kernels (tiles.MIN_ELEMENTS);
        # one chunk of them, as the default chunks of a map are tiles of 256 x 256
        ds = xr.Dataset({{"v": (("y", "x"), np.random.default_rng(0).random((512, 512)))}})
        one = {{"v": {{"chunks": (512, 512)}}}}
        xh.to_hurray(ds, {str(tmp_path / "a.hurray")!r}, encoding=one)
        xr.open_dataset({str(tmp_path / "a.hurray")!r}, engine="hurray").load()
        # no dask.distributed either: dask imports it to look for a client
        assert "distributed" not in sys.modules, "the default write imported distributed"
        xh.to_zarr(ds, {str(tmp_path / "a.zarr")!r}, mode="w")
        xr.open_zarr({str(tmp_path / "a.zarr")!r}).load()
        assert "numba" not in sys.modules, "the default path imported numba"
        xh.to_hurray(ds, {str(tmp_path / "b.hurray")!r}, layout="morton", encoding=one)
        assert "numba" in sys.modules, "a Morton layout no longer uses the kernels"
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
