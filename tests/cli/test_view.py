"""``hurray view``: its server answers the page's files and byte ranges of the file as
object storage does, and nothing outside them; the page's files ship with the package."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.cli import main
from xarray_hurray.cli.view import SERVED, ViewServer


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, bytes]]:
    """The address of a view server of a small file, and the file's bytes."""
    path = tmp_path_factory.mktemp("view") / "small file.hurray"
    xh.to_hurray(xr.Dataset({"v": (("y", "x"), np.arange(600.0).reshape(20, 30))}), path)
    server = ViewServer(("127.0.0.1", 0), Path(str(files("xarray_hurray") / "web")), path)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", path.read_bytes()
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of a GET of ``url``."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@pytest.mark.parametrize(
    ("header", "span"),
    [("bytes=0-99", (0, 100)), ("bytes=50-", (50, None)), ("bytes=-10", (-10, None))],
)
def test_ranges_of_the_file(
    served: tuple[str, bytes], header: str, span: tuple[int, int | None]
) -> None:
    address, data = served
    status, headers, body = get(f"{address}/data/small%20file.hurray", {"Range": header})
    assert status == 206
    assert body == data[slice(*span)]
    start = span[0] % len(data)
    assert headers["Content-Range"] == f"bytes {start}-{start + len(body) - 1}/{len(data)}"


def test_the_whole_file_and_a_range_past_its_end(served: tuple[str, bytes]) -> None:
    address, data = served
    assert get(f"{address}/data/small%20file.hurray")[2] == data
    status, headers, _ = get(
        f"{address}/data/small%20file.hurray", {"Range": f"bytes={len(data)}-"}
    )
    assert (status, headers["Content-Range"]) == (416, f"bytes */{len(data)}")


def test_the_page_and_its_scripts(served: tuple[str, bytes]) -> None:
    address, _ = served
    status, headers, body = get(f"{address}/viewer/index.html")
    assert status == 200 and b"<canvas" in body and headers["Content-Type"] == "text/html"
    for script in ("/viewer/viewer.js", "/src/hurray.js", "/src/zstd.js", "/src/map/layer.js"):
        status, headers, _ = get(address + script)
        assert (status, headers["Content-Type"]) == (200, "text/javascript")


@pytest.mark.parametrize(
    "route", ["/pyproject.toml", "/src/../../pyproject.toml", "/src/%2e%2e/package.json", "/data/x"]
)
def test_nothing_else_is_served(served: tuple[str, bytes], route: str) -> None:
    address, _ = served
    assert get(address + route)[0] == 404


def test_the_page_ships_with_the_package() -> None:
    # package data (pyproject.toml) through the links of xarray_hurray/web to js/
    web = files("xarray_hurray") / "web"
    assert all((web / folder).is_dir() for folder in SERVED)
    assert (web / "viewer" / "index.html").is_file()
    assert (web / "src" / "hurray.js").is_file()


def test_a_file_that_is_not_hurray_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a Hurray file")
    assert main(["view", str(path), "--no-open"]) == 2
    assert f"not a Hurray file: {path}" in capsys.readouterr().err
    assert main(["view", str(tmp_path / "missing.hurray"), "--no-open"]) == 2
    assert "no such file" in capsys.readouterr().err
