"""``hurray refs``: kerchunk references with standard Zarr v3 codecs, read back by
fsspec's reference file system and zarr."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import fsspec
import numpy as np
import pytest
import xarray as xr
import zarr
from reference_readers import reads_local_references, reads_s3_references

import xarray_hurray as xh
from xarray_hurray.cli.main import main
from xarray_hurray.container import ContainerReader
from xarray_hurray.io import LocalFileSource
from xarray_hurray.layout import HilbertLayout, MortonLayout, RowMajorLayout
from xarray_hurray.zarr.references import (
    REFERENCES_ATTR,
    UnreferenceableWarning,
    kerchunk_references,
    stale_references,
    stored_row_major,
)

STANDARD = {"bytes", "zstd", "blosc", "numcodecs.zlib", "numcodecs.lz4"}
"""Codecs that zarr-python and zarrita decode without this package."""


def dataset() -> xr.Dataset:
    rng = np.random.default_rng(1)
    v = rng.random((40, 50)).astype("float32")
    v[0:16, 16:32] = np.nan  # one chunk of the fill value alone: missing in the file
    v[20, 3] = np.nan
    n = rng.integers(-5, 5, (40, 50)).astype("int16")
    n[16:32, 0:16] = -9  # the encoded _FillValue alone: missing, read back as masked
    return xr.Dataset(
        {
            "v": (("y", "x"), v, {"units": "K", "levels": np.array([1.5, 2.5])}),
            "n": (("y", "x"), n),
            "b": (("y", "x"), rng.random((40, 50)) > 0.5),
            "c": (("y", "x"), (rng.random((40, 50)) + 1j).astype("complex64")),
            "t": ("y", np.arange(40).astype("datetime64[D]").astype("datetime64[ns]")),
            "label": ("x", np.array([f"x{i}" for i in range(50)])),
            "curve": (("y", "x"), rng.random((40, 50))),
            "scalar": ((), 7.5),
        },
        coords={"y": np.arange(40), "x": np.arange(50) * 0.5},
        attrs={"title": "references", "count": np.int64(3)},
    )


def encoding(codecs: str | None) -> dict[str, dict[str, object]]:
    return {
        "v": {"chunks": (16, 16), "codecs": codecs},
        "n": {"chunks": (16, 16), "codecs": codecs, "_FillValue": -9},
        "b": {"chunks": (32, 8), "codecs": codecs},
        "c": {"chunks": (16, 16), "codecs": codecs},
        "t": {"chunks": (8,), "codecs": codecs},
        "curve": {"chunks": (16, 16), "layout": "hilbert"},
    }


def open_references(refs: dict | str | Path) -> xr.Dataset:
    """The dataset of ``refs`` through fsspec's reference file system and zarr alone."""
    fs = fsspec.filesystem(
        "reference", fo=str(refs) if isinstance(refs, Path) else refs, asynchronous=True
    )
    store = zarr.storage.FsspecStore(fs, read_only=True, path="")
    return xr.open_zarr(store, consolidated=False, zarr_format=3)


def test_stored_row_major() -> None:
    assert stored_row_major_of(RowMajorLayout(), (5, 3))
    # a curve along one axis of power-of-two length is the identity
    assert stored_row_major_of(MortonLayout((0, 3)), (1, 8))
    assert stored_row_major_of(MortonLayout((3,)), (8,))
    # and so is Morton order on 2 x 2 (keys 0 1 / 2 3); padding, or a real curve, is not
    assert stored_row_major_of(MortonLayout((1, 1)), (2, 2))
    assert not stored_row_major_of(MortonLayout((3,)), (6,))
    assert not stored_row_major_of(MortonLayout((2, 2)), (4, 4))
    assert not stored_row_major_of(HilbertLayout(2, 2), (4, 4))


def stored_row_major_of(layout, chunks) -> bool:
    from xarray_hurray.container import VariableMeta

    shape = tuple(2 * c for c in chunks)
    dims = tuple(f"d{k}" for k in range(len(chunks)))
    var = VariableMeta("a", dims, shape, "float32", chunks, layout)
    return stored_row_major(var)


@reads_local_references
@pytest.mark.parametrize("codecs", ["zstd", "zlib", "lz4", "blosc", None])
def test_references_read_back_identically(tmp_path, capsys, codecs) -> None:
    path = tmp_path / "data.hurray"
    xh.to_hurray(dataset(), path, encoding=encoding(codecs))
    out = tmp_path / "refs.json"
    assert main(["refs", str(path), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    # what cannot be referenced is named, never dropped in silence
    assert "'label'" in err and "'curve'" in err and "hilbert element layout" in err
    refs = json.loads(out.read_text())
    assert refs["version"] == 1
    for key, value in refs["refs"].items():
        if key.endswith("zarr.json") and json.loads(value)["node_type"] == "array":
            names = {codec["name"] for codec in json.loads(value)["codecs"]}
            assert names <= STANDARD, key
        elif not key.endswith("zarr.json"):
            assert value[0] == f"file://{path.resolve()}"
    # the all-fill chunks have no reference
    assert "v/c/0/1" not in refs["refs"] and "n/c/1/0" not in refs["refs"]
    assert "v/c/0/0" in refs["refs"]
    with xr.open_dataset(path, engine="hurray") as source:
        expected = source.drop_vars(["label", "curve"]).load()
    back = open_references(out).load()
    assert "generation 1" in back.attrs.pop(REFERENCES_ATTR)
    xr.testing.assert_identical(back, expected)


def test_standard_output_and_a_given_url(tmp_path, capsys) -> None:
    path = tmp_path / "data.hurray"
    xh.to_hurray(dataset()[["v"]], path)
    assert main(["refs", str(path), "--url", "s3://bucket/data.hurray"]) == 0
    refs = json.loads(capsys.readouterr().out)
    urls = {v[0] for k, v in refs["refs"].items() if not k.endswith("zarr.json")}
    assert urls == {"s3://bucket/data.hurray"}
    chunks = [v for k, v in refs["refs"].items() if k.startswith("v/c/")]
    reader = ContainerReader(LocalFileSource(path))
    index = reader.index("v")
    assert sorted((o, s) for _, o, s in chunks) == sorted(
        (int(o), int(s)) for o, s in zip(index["offset"], index["size"], strict=True) if s
    )


@reads_local_references
def test_groups_of_a_tree(tmp_path) -> None:
    tree = xr.DataTree.from_dict(
        {
            "/": xr.Dataset({"a": (("y", "x"), np.arange(12.0).reshape(3, 4))}),
            "/g": xr.Dataset({"b": ("z", np.arange(5, dtype="int8"))}, attrs={"group": "g"}),
        }
    )
    path = tmp_path / "tree.hurray"
    xh.to_hurray(tree, path)
    refs = kerchunk_references(ContainerReader(LocalFileSource(path)), path.as_uri())
    fs = fsspec.filesystem("reference", fo=refs, asynchronous=True)
    # each group opened at its own path: zarr's FsspecStore lists the groups below
    # the root of a reference file system as empty
    for group in ("", "g"):
        store = zarr.storage.FsspecStore(fs, read_only=True, path=group)
        back = xr.open_zarr(store, consolidated=False, zarr_format=3).load()
        back.attrs.pop(REFERENCES_ATTR, None)  # the root's
        xr.testing.assert_identical(back, xr.open_dataset(path, engine="hurray", group=group))


@reads_local_references
def test_a_file_of_the_old_default_layouts(tmp_path) -> None:
    """Written with the old default ("auto"): the variables whose curve is the
    identity are referenced, the others named."""
    path = tmp_path / "old.hurray"
    ds = dataset()[["v", "t"]]
    xh.to_hurray(ds, path, layout="auto", encoding={"t": {"chunks": (8,)}, "y": {"chunks": (8,)}})
    reader = ContainerReader(LocalFileSource(path))
    with pytest.warns(UnreferenceableWarning) as caught:
        refs = kerchunk_references(reader, path.as_uri())
    (message,) = [str(w.message) for w in caught]
    # x (50 long, one chunk) is padded to 64 by its curve, v is a curve: both named
    assert "'x'" in message and "'v'" in message and "'t'" not in message
    with xr.open_dataset(path, engine="hurray") as source:
        expected = source[["t"]].drop_vars("x", errors="ignore").load()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreferenceableWarning)
        back = open_references(refs)[["t"]].load()
    back.attrs.pop(REFERENCES_ATTR)
    xr.testing.assert_identical(back, expected)


def test_refs_of_a_missing_file(tmp_path, capsys) -> None:
    assert main(["refs", str(tmp_path / "nothing.hurray")]) == 2
    assert "no such file" in capsys.readouterr().err


@reads_s3_references
def test_references_to_a_file_on_s3(s3, tmp_path, capsys) -> None:
    ds = dataset()[["v", "n"]]
    remote = f"s3://{s3.bucket}/data.hurray"
    xh.to_hurray(ds, remote, storage_options=s3.storage_options)
    options = [f"--storage-option={k}={json.dumps(v)}" for k, v in s3.storage_options.items()]
    out = tmp_path / "refs.json"
    assert main(["refs", remote, "-o", str(out), *options]) == 0
    refs = json.loads(out.read_text())
    urls = {v[0] for k, v in refs["refs"].items() if not k.endswith("zarr.json")}
    assert urls == {remote}
    fs = fsspec.filesystem(
        "reference",
        fo=refs,
        remote_protocol="s3",
        remote_options={**s3.storage_options, "asynchronous": True},
        asynchronous=True,
    )
    back = xr.open_zarr(zarr.storage.FsspecStore(fs, read_only=True, path=""), consolidated=False)
    assert back.attrs.pop(REFERENCES_ATTR).startswith(f"made from {remote} (generation 1, ")
    with xr.open_dataset(remote, engine="hurray", storage_options=s3.storage_options) as source:
        xr.testing.assert_identical(back.load(), source.load())


@reads_local_references
def test_local_urls_are_read_as_fsspec_reads_them(tmp_path, capsys) -> None:
    """Names with a space, "+", "%" or non-ASCII text; and beside the file "x y", one
    literally named "x%20y", which a percent-encoded URL would name instead."""
    names = ["x y", "a+b", "p%q", "\u00e9t\u00e9", "x%20y"]
    for number, name in enumerate(names):
        ds = xr.Dataset({"v": (("y", "x"), np.full((4, 4), float(number)))})
        xh.to_hurray(ds, tmp_path / f"{name}.hurray")
    for number, name in enumerate(names):
        out = tmp_path / f"{number}.json"
        assert main(["refs", str(tmp_path / f"{name}.hurray"), "-o", str(out)]) == 0
        back = open_references(out).load()
        np.testing.assert_array_equal(back["v"].values, np.full((4, 4), float(number)))


def test_references_say_which_version_they_hold_for(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["refs", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "hold for the version of the file they were made from" in help_text
    path = tmp_path / "data.hurray"
    xh.to_hurray(dataset()[["v"]], path, encoding={"v": encoding("zstd")["v"]})
    refs = kerchunk_references(ContainerReader(LocalFileSource(path)), "file:///data.hurray")
    note = json.loads(refs["refs"]["zarr.json"])["attributes"][REFERENCES_ATTR]
    assert note.startswith("made from file:///data.hurray (generation 1, ")
    assert "hold for that version of the file only" in note


@pytest.mark.parametrize("change", ["compact", "region", "rewrite", "append"])
def test_stale_references_are_found_by_check(tmp_path, capsys, change) -> None:
    """References made before a change to the file no longer give what it holds:
    --check names their keys (a compaction moved every chunk: each of them)."""
    path, refs = tmp_path / "data.hurray", tmp_path / "refs.json"
    ds = dataset()[["v", "n"]]
    settings = {name: encoding("zstd")[name] for name in ("v", "n")}
    xh.to_hurray(ds, path, encoding=settings)
    xh.to_hurray(ds.isel(y=slice(0, 16)).drop_vars("x") * 2, path, region={"y": slice(0, 16)})
    assert main(["refs", str(path), "-o", str(refs)]) == 0
    assert main(["refs", str(path), "--check", str(refs)]) == 0
    assert "give what" in capsys.readouterr().out
    if change == "compact":
        assert main(["compact", str(path)]) == 0
    elif change == "region":
        xh.to_hurray(ds.isel(y=slice(16, 32)).drop_vars("x") + 1, path, region={"y": slice(16, 32)})
    elif change == "rewrite":
        xh.to_hurray(ds + 1, path, encoding=settings)
    else:
        more = ds.isel(y=slice(0, 8)).assign_coords(y=np.arange(40, 48))
        xh.to_hurray(more, path, append_dim="y")
    capsys.readouterr()
    assert main(["refs", str(path), "--check", str(refs)]) == 1
    err = capsys.readouterr().err
    stale = stale_references(ContainerReader(LocalFileSource(path)), json.loads(refs.read_text()))
    assert f"{len(stale)} references are stale" in err and repr(stale[0]) in err
    assert any(key.startswith("v/c/") for key in stale)
    if change == "compact":
        # every stored chunk moved but the coordinates', placed right after the head
        # in both versions (the region write appended the new chunks of "v" and "n")
        assert {k for k in stale if "/c/" in k} == {
            k
            for k in json.loads(refs.read_text())["refs"]
            if "/c/" in k and k.split("/")[0] not in ("x", "y")
        }


def test_a_fill_value_that_is_no_value_of_its_type_is_refused_naming_the_variable(
    tmp_path,
) -> None:
    """A file's attribute may be anything: Zarr's fill value cannot (xarray's own reading
    refuses such a file too)."""
    from xarray_hurray.container import ContainerWriter, DatasetMeta, VariableMeta
    from xarray_hurray.errors import HurrayFormatError

    odd = VariableMeta(
        "odd", ("k",), (3,), "float64", (3,), RowMajorLayout(), attrs={"_FillValue": "x"}
    )
    path = tmp_path / "odd.hurray"
    with ContainerWriter(path, DatasetMeta(attrs={}, variables=(odd,))) as writer:
        writer.write_chunk("odd", 0, np.arange(3.0).astype("<f8").tobytes())
    with pytest.raises(HurrayFormatError, match="variable 'odd': its _FillValue 'x' is no value"):
        kerchunk_references(ContainerReader(LocalFileSource(path)), "file:///odd.hurray")
