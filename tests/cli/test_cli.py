"""The ``hurray`` command, run in-process through ``main`` and once as a subprocess."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.cli import main
from xarray_hurray.cli.demo import REGIONS, format_regions, run_demo, temperature_dataset
from xarray_hurray.container import ContainerReader
from xarray_hurray.container.format import HEADER_SIZE
from xarray_hurray.container.tempfiles import temporary_path
from xarray_hurray.io import LocalFileSource, MergePolicy, plan_reads
from xarray_hurray.layout import chunk_placement


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, xr.Dataset]:
    """A small 2-D dataset stored with Hilbert chunk order: a grid of 8 x 8 chunks."""
    rng = np.random.default_rng(3)
    values = rng.standard_normal((128, 128)).astype("f4")
    ds = xr.Dataset(
        {"v": (("y", "x"), values, {"units": "m"})},
        coords={"y": np.arange(128.0), "x": np.arange(128.0)},
        attrs={"title": "sample"},
    )
    path = tmp_path_factory.mktemp("cli") / "sample.hurray"
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (16, 16)}}, chunk_order="hilbert")
    return path, ds


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_info_json_matches_the_file(sample, capsys):
    path, ds = sample
    status, out, _ = run(capsys, "info", str(path), "--json")
    assert status == 0
    facts = json.loads(out)
    v = next(var for var in facts["variables"] if var["name"] == "v")
    assert v["dims"] == ["y", "x"] and v["shape"] == [128, 128] and v["dtype"] == "float32"
    assert v["chunks"] == [16, 16] and v["chunk_count"] == 64
    # the writer's defaults: chunks along the Hilbert curve, row-major inside them
    assert v["chunk_order"] == "hilbert" and v["layout"]["name"] == "row-major"
    assert v["raw_bytes"] == ds["v"].nbytes
    index = ContainerReader(LocalFileSource(path)).index("v")
    assert v["stored_bytes"] == int(index["size"].sum())
    assert v["compression_ratio"] == pytest.approx(ds["v"].nbytes / v["stored_bytes"], rel=1e-3)
    assert v["attrs"]["units"] == "m" and facts["attrs"] == {"title": "sample"}
    assert facts["file_bytes"] == path.stat().st_size


def test_info_json_is_strict_json_for_non_finite_values(tmp_path, capsys):
    ds = xr.Dataset(
        {"t": (("y", "x"), np.full((4, 4), np.nan, dtype="f4"))},
        attrs={"peak": np.float64(np.inf), "series": [1.0, np.nan]},
    )
    ds["t"].encoding["_FillValue"] = np.nan
    path = tmp_path / "nan.hurray"
    xh.to_hurray(ds, path)
    status, out, _ = run(capsys, "info", str(path), "--json")
    assert status == 0

    def reject(constant: str) -> None:
        raise ValueError(f"non-standard JSON constant {constant}")

    facts = json.loads(out, parse_constant=reject)
    assert facts["attrs"] == {"peak": "Infinity", "series": [1.0, "NaN"]}
    assert facts["variables"][0]["attrs"]["_FillValue"] == "NaN"


def test_info_text_names_every_variable(sample, capsys):
    status, out, _ = run(capsys, "info", str(sample[0]))
    assert status == 0
    for name in (
        "v (y=128, x=128) float32",
        "chunks       16 x 16 (64 chunks, 64 stored)",
        ":units = 'm'",
    ):
        assert name in out


def brute_force_costs(path: Path, rows: slice, cols: slice) -> dict[str, tuple[int, int]]:
    """Runs and requests per chunk order, by laying the stored chunks out again by hand."""
    reader = ContainerReader(LocalFileSource(path))
    sizes = reader.index("v")["size"].astype(int)
    grid = (8, 8)
    wanted = {
        r * 8 + c
        for r in range(rows.start // 16, (rows.stop - 1) // 16 + 1)
        for c in range(cols.start // 16, (cols.stop - 1) // 16 + 1)
    }
    base = int(reader.index("v")["offset"].min())
    out = {}
    for kind in ("row-major", "morton", "hilbert"):
        offset, spans = base, []
        for chunk in chunk_placement(grid, kind).tolist():
            if chunk in wanted:
                spans.append((offset, offset + sizes[chunk]))
            offset += sizes[chunk]
        runs = 1 + sum(a[1] != b[0] for a, b in itertools.pairwise(spans))
        starts, stops = np.array(spans).T
        requests = len(plan_reads(starts, stops, MergePolicy(max_gap=0)).requests)
        out[kind] = (runs, requests)
    return out


def test_plan_counts_agree_with_a_brute_force_layout(sample, capsys):
    path, _ = sample
    status, out, _ = run(
        capsys, "plan", str(path), "--var", "v", "--region", "y=16:80, x=0:64", "--max-gap", "0"
    )
    assert status == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()}
    truth = brute_force_costs(path, slice(16, 80), slice(0, 64))
    for kind, (runs, requests) in truth.items():
        assert rows[kind][1:4] == ["16", str(runs), str(requests)]
    assert "(this file)" in " ".join(rows["hilbert"])
    # The real requests listed come from the file's own index.
    assert f"requests after merging: {truth['hilbert'][1]}" in out


def test_plan_lists_merged_ranges_inside_the_file(sample, capsys):
    path, _ = sample
    status, out, _ = run(capsys, "plan", str(path), "--var", "v", "--region", "y=0:40", "--all")
    assert status == 0
    ranges = [line.split("  ")[1] for line in out.splitlines() if line.startswith("  [")]
    spans = [tuple(int(n) for n in r.strip("[)").split(", ")) for r in ranges]
    assert all(HEADER_SIZE <= a < b <= path.stat().st_size for a, b in spans)
    assert "raw byte ranges (one per chunk): 24" in out


def test_verify_ok_then_corrupt(sample, tmp_path, capsys):
    path, _ = sample
    status, out, _ = run(capsys, "verify", str(path))
    assert status == 0 and "ok (66 chunks" in out
    damaged = tmp_path / "damaged.hurray"
    data = bytearray(path.read_bytes())
    entries = ContainerReader(LocalFileSource(path)).index("v")
    for chunk in (5, 40):
        data[int(entries["offset"][chunk]) + 3] ^= 0xFF
    damaged.write_bytes(bytes(data))
    status, _, err = run(capsys, "verify", str(damaged))
    assert status == 1
    assert err.count("checksum mismatch") == 2
    assert "chunk 5 of variable 'v'" in err and "chunk 40 of variable 'v'" in err
    assert err.strip().splitlines()[-1].startswith("hurray: error:")


def test_info_and_verify_name_the_temporary_files_of_unfinished_writes(sample, tmp_path, capsys):
    path = tmp_path / "x.hurray"
    path.write_bytes(sample[0].read_bytes())
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ours = temporary_path(path)
    killed = ours.with_name(ours.name.replace(f"-{os.getpid()}-", f"-{dead.pid}-"))
    legacy = tmp_path / f".x.hurray.{'a' * 32}.tmp"  # a 0.1.0 writer's, of any age
    for left in (killed, legacy):
        left.write_bytes(b"partial")
    status, out, _ = run(capsys, "verify", str(path))
    assert status == 0
    names = ", ".join(sorted([str(killed), str(legacy)]))
    assert f"2 temporary file(s) of unfinished writes to this file: {names}" in out
    status, out, _ = run(capsys, "info", str(path))
    assert "2 temporary file(s) of unfinished writes" in out
    status, out, _ = run(capsys, "info", str(path), "--json")
    assert json.loads(out)["unfinished_writes"] == sorted([str(killed), str(legacy)])
    killed.unlink()
    legacy.unlink()
    status, out, _ = run(capsys, "verify", str(path))
    assert "unfinished" not in out


def test_verify_corrupt_header_is_status_1(sample, tmp_path, capsys):
    data = bytearray(sample[0].read_bytes())
    data[20] ^= 0x01
    damaged = tmp_path / "header.hurray"
    damaged.write_bytes(bytes(data))
    status, _, err = run(capsys, "verify", str(damaged))
    assert status == 1 and "corrupt" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["info", "{missing}"], "no such file"),
        (["info", "{text}"], "is not a Hurray file"),
        (["verify", "{text}"], "is not a Hurray file"),
        (["plan", "{file}", "--var", "nope"], "no variable 'nope'"),
        (["plan", "{file}", "--var", "v", "--region", "y=0-5"], "bad region item"),
        (["plan", "{file}", "--var", "v", "--region", "z=0:5"], "has no dimension 'z'"),
        (["plan", "{file}", "--var", "v", "--region", "y=900"], "out of bounds"),
        (["plan", "{file}", "--var", "v", "--region", "y=1,y=2"], "appears twice"),
        # past the end of y (128 long), or before its start
        (["plan", "{file}", "--var", "v", "--region", "y=500:600"], "'y=500:600' is out of"),
        (["plan", "{file}", "--var", "v", "--region", "y=100:129"], "129 is not within"),
        (["plan", "{file}", "--var", "v", "--region", "y=-200:"], "out of bounds"),
        (["info", "{file}", "--storage-option", "novalue"], "key=value"),
        (["convert", "{missing}", "{out}"], "no such file"),
        (["convert", "{file}", "{out}", "--chunks", "y=0"], "bad chunks item"),
        (["convert", "{file}", "{out}", "--chunks", "q=4"], "not in"),
        (["convert", "{file}", "{file}"], "exists; pass --overwrite"),
        (["convert", "{file}", "{nowhere}"], "no directory to write the file in"),
        (["convert", "{file}", "{out_zarr}", "--chunk-order", "hilbert"], "Hurray output only"),
        (["frobnicate"], "invalid choice"),
        ([], "required"),
    ],
)
def test_user_mistakes_are_one_line_and_status_2(sample, tmp_path, capsys, argv, message):
    text = tmp_path / "notes.txt"
    text.write_text("not a hurray file\n")
    names = {
        "missing": str(tmp_path / "missing.hurray"),
        "text": str(text),
        "file": str(sample[0]),
        "out": str(tmp_path / "out.hurray"),
        "out_zarr": str(tmp_path / "out.zarr"),
        "nowhere": str(tmp_path / "missing" / "out.hurray"),
    }
    status, _, err = run(capsys, *(a.format(**names) for a in argv))
    assert status == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("hurray: error:")
    assert message in err
    assert not (tmp_path / "out.hurray").exists() and not (tmp_path / "out.zarr").exists()


def test_convert_netcdf_to_hurray_and_zarr(sample, tmp_path, capsys):
    _, ds = sample
    source = tmp_path / "in.nc"
    # h5netcdf is the test extra's netCDF engine; older xarray does not choose it itself
    ds.to_netcdf(source, engine="h5netcdf")
    hurray = tmp_path / "out.hurray"
    status, out, _ = run(
        capsys, "convert", str(source), str(hurray), "--chunks", "y=32,x=32",
        "--chunk-order", "morton", "--codecs", "zlib",
    )  # fmt: skip
    assert status == 0 and "wrote" in out
    back = xr.open_dataset(hurray, engine="hurray")
    xr.testing.assert_identical(back, ds)
    reader = ContainerReader(LocalFileSource(hurray))
    v = reader.variable("v")
    assert v.chunks == (32, 32) and v.chunk_order == "morton" and v.codecs[0]["id"] == "zlib"
    store = tmp_path / "out.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither writing nor opening warns
        status, _, _ = run(capsys, "convert", str(hurray), str(store), "--layout", "hilbert")
        assert status == 0
        opened = xr.open_dataset(store, engine="zarr")  # consolidated metadata found
    assert (store / "zarr.json").is_file()
    assert "consolidated_metadata" in json.loads((store / "zarr.json").read_text())
    xr.testing.assert_identical(opened, ds)
    xr.testing.assert_identical(xr.open_dataset(store, engine="zarr", consolidated=False), ds)
    assert opened["v"].encoding["serializer"].to_dict()["configuration"]["layout"] == "hilbert"


NETCDF_3_EMPTY = b"CDF\x01" + bytes(28)
"""A netCDF-3 classic file with no dimensions, attributes or variables: the magic, a
record count of 0, and three absent lists (two zero words each)."""


@pytest.mark.skipif(
    any(importlib.util.find_spec(p) for p in ("scipy", "netCDF4")),
    reason="a reader of netCDF-3 is installed",
)
def test_convert_of_an_input_no_package_reads_prints_xarrays_whole_message_and_what_to_install(
    tmp_path, capsys
):
    source, out = tmp_path / "old.nc", tmp_path / "out.hurray"
    source.write_bytes(NETCDF_3_EMPTY)
    status, _, err = run(capsys, "convert", str(source), str(out))
    assert status == 2 and len(err.splitlines()) == 1
    # xarray's message ends with the pages it points to, kept whole
    assert "dependencies may not be installed, see: https://docs.xarray.dev/" in err
    assert err.count("https://") == 2
    assert err.rstrip().endswith(
        "old.nc is a netCDF-3 file, which xarray reads with scipy or netCDF4: install one "
        "of them (python -m pip install scipy)"
    )
    assert not out.exists()


def test_convert_of_a_file_no_engine_knows_names_no_package(tmp_path, capsys):
    source = tmp_path / "notes.txt"
    source.write_text("plain text\n")
    status, _, err = run(capsys, "convert", str(source), str(tmp_path / "out.hurray"))
    assert status == 2 and len(err.splitlines()) == 1
    assert "did not find a match in any of xarray's currently installed IO backends" in err
    assert "https://docs.xarray.dev/" in err and "pip install" not in err


def test_convert_refuses_a_layout_that_cannot_hold_the_chunks(sample, tmp_path, capsys):
    out = tmp_path / "bad.zarr"
    status, _, err = run(
        capsys, "convert", str(sample[0]), str(out), "--layout", "hilbert", "--chunks", "y=16,x=8"
    )
    assert status == 2 and "variable 'v'" in err and "cannot hold chunks (16, 8)" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("kept", [False, True])
def test_demo_leaves_its_files_only_in_a_folder_it_is_given(tmp_path, monkeypatch, capsys, kept):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))  # the system's temporary folder
    argv = ["demo", "--out", str(tmp_path / "kept")] if kept else ["demo"]
    status, out, _ = run(capsys, *argv)
    assert status == 0 and "Requests and bytes per region read" in out
    assert list(temporary.iterdir()) == []
    if kept:
        listed = out.split("\nFiles:\n")[1].split("\n\n")[0].splitlines()
        assert sorted(p for p in (tmp_path / "kept").iterdir()) == sorted(
            Path(line.split()[-1]) for line in listed
        )
        assert "hurray info" in out
    else:
        assert "The files were removed; hurray demo --out DIR" in out


def test_demo_counts_and_files(tmp_path):
    paths, tables = run_demo(tmp_path)
    assert set(paths) == {"hilbert", "morton", "row-major", "zarr v3"}
    assert all(p.exists() for p in paths.values())
    merged, unmerged = tables.values()
    assert list(merged) == list(REGIONS)
    country = unmerged["a country, one day"]
    # A 4 x 4 block of chunks aligned to the curve: one run along Hilbert and Morton,
    # one per row in row-major order, one per chunk in Zarr.
    assert (country["hilbert"].requests, country["morton"].requests) == (1, 1)
    assert country["row-major"].requests == 4 and country["zarr v3"].requests == 16
    band = unmerged["a latitude band, one day"]
    assert band["row-major"].requests == 1 < band["hilbert"].requests
    for row in unmerged.values():
        sizes = {c.bytes_read for name, c in row.items() if name != "zarr v3"}
        assert len(sizes) == 1  # without merging every order reads just the chunks needed


@pytest.mark.slow
def test_module_runs_as_a_subprocess(sample):
    result = subprocess.run(
        [sys.executable, "-m", "xarray_hurray", "verify", str(sample[0])],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "xarray_hurray", "info", "/no/such/file.hurray"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert missing.returncode == 2
    assert missing.stderr == "hurray: error: no such file: /no/such/file.hurray\n"


def test_convert_chooses_the_output_format_by_extension(sample, tmp_path, capsys):
    path, ds = sample
    netcdf = tmp_path / "out.nc"
    status, out, err = run(capsys, "convert", str(path), str(netcdf))
    assert status == 0 and f"wrote {netcdf}" in out
    assert netcdf.read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"  # netCDF-4 is HDF5
    with xr.open_dataset(netcdf, engine="h5netcdf") as back:
        xr.testing.assert_identical(back, ds)
    status, _, err = run(capsys, "convert", str(path), str(tmp_path / "out.h5"))
    assert status == 2 and "not .h5; choose one of those extensions" in err
    assert not (tmp_path / "out.h5").exists()
    status, _, err = run(capsys, "convert", str(path), str(netcdf), "--layout", "hilbert")
    assert status == 2 and "netCDF has no layouts" in err


def test_convert_progress_is_one_summary_line_of_one_style_off_a_terminal(sample, tmp_path, capsys):
    path, _ = sample
    lines = []
    for name in ("out.hurray", "out.zarr", "out.nc"):
        status, _, err = run(capsys, "convert", str(path), str(tmp_path / name))
        assert status == 0 and "\r" not in err and err.count("\n") == 1
        lines.append(err)
    assert lines[0].startswith("writing out.hurray |" + "#" * 24 + "| 100% ")
    assert "chunks" in lines[0]
    for line, name in zip(lines[1:], ("out.zarr", "out.nc"), strict=True):
        assert line.startswith(f"writing {name} |" + "#" * 24 + "| 100% ") and "tasks" in line


def test_convert_reads_and_writes_urls_with_storage_options(sample, tmp_path, s3, capsys):
    path, ds = sample
    options = [f"--storage-option={k}={json.dumps(v)}" for k, v in s3.storage_options.items()]
    remote = f"s3://{s3.bucket}/out.hurray"
    assert run(capsys, "convert", str(path), remote, *options)[0] == 0
    local = tmp_path / "back.hurray"
    status, _, _ = run(capsys, "convert", remote, str(local), *options)
    assert status == 0
    with xr.open_dataset(local, engine="hurray") as back:
        xr.testing.assert_identical(back, ds)


def test_remote_errors_are_one_line_and_status_2(sample, tmp_path, s3, capsys, monkeypatch):
    path, _ = sample
    url = f"s3://{s3.bucket}/out.hurray"
    xh.to_hurray(xr.open_dataset(path, engine="hurray"), url, storage_options=s3.storage_options)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    endpoint = json.dumps(s3.storage_options["client_kwargs"])
    no_key = [
        f"--storage-option=client_kwargs={endpoint}",
        "--storage-option=skip_instance_cache=true",
    ]
    for argv in (["convert", url, str(tmp_path / "o.hurray")], ["info", url], ["verify", url]):
        status, _, err = run(capsys, *argv, *no_key)
        assert status == 2, err
        assert err == "hurray: error: NoCredentialsError: Unable to locate credentials\n"


def test_a_missing_file_system_package_is_one_line(capsys):
    pytest.importorskip("fsspec")
    if importlib.util.find_spec("gcsfs") is not None:
        pytest.skip("gcsfs is installed: the message to test is not given")
    status, _, err = run(capsys, "info", "gs://bucket/field.hurray")
    assert status == 2 and err.startswith("hurray: error: a package this needs is missing")
    assert "gcsfs" in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_output_closed_early_stops_quietly(tmp_path):
    path = tmp_path / "many.hurray"
    ds = xr.Dataset({"v": (("y", "x"), np.zeros((256, 256), "f4"))})
    xh.to_hurray(ds, path, encoding={"v": {"chunks": (4, 4)}}, codecs=None)
    argv = [sys.executable, "-m", "xarray_hurray", "plan", str(path), "--var", "v", "--all"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.readline()  # `| head -1`: read a line, then go away
        child.stdout.close()
        err = child.stderr.read()
    assert child.returncode == 141 and err == b""


@pytest.mark.parametrize("printed", ["as info prints it", "with a leading slash"])
def test_plan_reaches_a_variable_in_a_group_by_the_path_info_prints(tmp_path, capsys, printed):
    """A tree's groups, and the levels of a pyramid (groups "0", "1", ...)."""
    rng = np.random.default_rng(8)
    ds = xr.Dataset({"t2m": (("y", "x"), rng.standard_normal((64, 64)))})
    tree, pyramid = tmp_path / "tree.hurray", tmp_path / "map.hurray"
    xh.to_hurray(xr.DataTree.from_dict({"/forecast": ds}), tree)
    xh.to_hurray(ds, pyramid, overviews=1, encoding={"t2m": {"chunks": (16, 16)}})
    for path, name in ((tree, "forecast/t2m"), (pyramid, "1/t2m")):
        status, out, _ = run(capsys, "info", str(path))
        assert status == 0 and f"\n{name} (y=" in out
        given = name if printed == "as info prints it" else f"/{name}"
        status, out, err = run(capsys, "plan", str(path), "--var", given, "--region", "y=0:8")
        assert status == 0, err
        assert out.startswith(f"{path}: {name}[y=0:8]")
        assert "requests after merging: 1" in out
    status, _, err = run(capsys, "plan", str(pyramid), "--var", "t2m")
    assert status == 2 and "it holds ['0/t2m', '1/t2m']" in err


def test_plan_of_an_empty_region_plans_nothing(sample, capsys):
    path, _ = sample
    status, out, _ = run(capsys, "plan", str(path), "--var", "v", "--region", "y=20:5")
    assert status == 0
    assert "requests after merging: 0" in out and "raw byte ranges (one per chunk): 0" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(("row-major", "hil"))]
    assert all(row[1:5] == ["0", "0", "0", "0"] for row in rows) and len(rows) == 2


def test_demo_says_how_big_each_region_is():
    rows = {line[:26].strip(): line[26:].split() for line in format_regions(
        temperature_dataset()).splitlines()[1:]}  # fmt: skip
    assert list(rows) == list(REGIONS)
    assert rows["a city, one day"] == ["1", "x", "40", "x", "60", "10", "kB", "4"]
    assert rows["a country, all days"][-1] == "128"  # as many chunks as run_demo reads
