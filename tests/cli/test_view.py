"""``hurray view``: its server answers the page's files and byte ranges of the file as
object storage does, and nothing outside them; the page's files ship with the package.
It answers only requests addressed to it, every refusal with a status and a line of
text, and a flood of connections never holds a thread each."""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr

import xarray_hurray as xh
from xarray_hurray.cli import main
from xarray_hurray.cli.view import MAX_CONNECTIONS, SERVED, ViewServer


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, bytes]]:
    """The address of a view server of a small file, and the file's bytes."""
    path = tmp_path_factory.mktemp("view") / "small file.hurray"
    xh.to_hurray(xr.Dataset({"v": (("y", "x"), np.arange(600.0).reshape(20, 30))}), path)
    with running(ViewServer(("127.0.0.1", 0), WEB, path)) as address:
        yield address, path.read_bytes()


WEB = Path(str(files("xarray_hurray") / "web"))


@contextlib.contextmanager
def running(server: ViewServer) -> Iterator[str]:
    """The address of ``server``, serving in a thread until the block ends."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
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


def raw(address: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of a GET of ``path`` with exactly ``headers`` (``Host``
    among them, or none at all)."""
    connection = http.client.HTTPConnection(address.removeprefix("http://"), timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, dict(response.headers), response.read()
    finally:
        connection.close()


def test_only_requests_addressed_to_the_server_are_answered(served: tuple[str, bytes]) -> None:
    """A page of another site whose name resolves to 127.0.0.1 (DNS rebinding) sends
    its own name as ``Host``: it gets nothing of the file."""
    address, data = served
    port = address.rsplit(":", 1)[1]
    route = "/data/small%20file.hurray"
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}"):
        assert raw(address, route, {"Host": host})[::2] == (200, data)
    for headers in ({"Host": f"evil.example:{port}"}, {"Host": "127.0.0.1"}, {}):
        status, answer, body = raw(address, route, headers)
        assert status == 403 and answer["Content-Type"].startswith("text/plain")
        assert b"127.0.0.1 or localhost" in body


def test_the_root_and_the_viewer_folder_lead_to_the_page_of_the_file(
    served: tuple[str, bytes],
) -> None:
    address, _ = served
    port = address.rsplit(":", 1)[1]
    # the file's URL (``/data/small%20file.hurray``) quoted as a value of the query
    page = "/viewer/index.html?url=/data/small%2520file.hurray"
    for route in ("/", "/viewer/", "/viewer"):
        status, headers, body = raw(address, route, {"Host": f"localhost:{port}"})
        assert (status, headers["Location"]) == (302, page)
        assert body.decode().strip() == f"the viewer: {page}"
        status, _, body = get(address + route)  # followed
        assert status == 200 and b"<canvas" in body


@pytest.mark.parametrize("route", ["/src/%00", "/src/a%00b.js", "/src/" + "x" * 5000, "/nothing"])
def test_a_path_that_names_nothing_is_a_404_with_a_line_of_text(
    served: tuple[str, bytes], route: str
) -> None:
    address, _ = served
    status, headers, body = get(address + route)
    assert status == 404 and headers["Content-Type"].startswith("text/plain")
    assert body.startswith(b"not found") and body.endswith(b"\n")


@pytest.mark.parametrize(
    "header",
    [
        "bytes=-0",
        "bytes=" + "9" * 5000 + "-",
        "bytes=0-" + "9" * 5000,
        "bytes=-" + "9" * 5000,
        "bytes=5-3",
        "bytes=0-1,4-5",
        "bytes=x-",
    ],
)
def test_a_range_that_cannot_be_served_is_a_416(served: tuple[str, bytes], header: str) -> None:
    address, data = served
    status, headers, body = get(f"{address}/data/small%20file.hurray", {"Range": header})
    assert (status, headers["Content-Range"]) == (416, f"bytes */{len(data)}")
    assert body == b"the range is not within the file\n"


def test_answers_carry_validators_and_honour_conditions(served: tuple[str, bytes]) -> None:
    """``ETag`` and ``Last-Modified``, and the conditions a reader (``If-Match``,
    ``If-Unmodified-Since``) and a browser (``If-None-Match``, ``If-Modified-Since``,
    ``If-Range``) send."""
    address, data = served
    url = f"{address}/data/small%20file.hurray"
    status, headers, _ = get(url)
    tag, modified = headers["ETag"], headers["Last-Modified"]
    assert status == 200 and tag.startswith('"') and email.utils.parsedate_to_datetime(modified)
    earlier = email.utils.formatdate(
        email.utils.parsedate_to_datetime(modified).timestamp() - 60, usegmt=True
    )
    cases = [
        ({"If-None-Match": tag}, 304, b""),
        ({"If-None-Match": f'W/{tag}, "other"'}, 304, b""),
        ({"If-None-Match": '"other"'}, 200, data),
        ({"If-Modified-Since": modified}, 304, b""),
        ({"If-Modified-Since": earlier}, 200, data),
        ({"If-Match": tag, "Range": "bytes=0-9"}, 206, data[:10]),
        ({"If-Match": '"other"', "Range": "bytes=0-9"}, 412, None),
        ({"If-Match": f"W/{tag}"}, 412, None),
        ({"If-Unmodified-Since": modified, "Range": "bytes=0-9"}, 206, data[:10]),
        ({"If-Unmodified-Since": earlier}, 412, None),
        ({"If-Range": tag, "Range": "bytes=5-9"}, 206, data[5:10]),
        ({"If-Range": modified, "Range": "bytes=5-9"}, 206, data[5:10]),
        ({"If-Range": '"other"', "Range": "bytes=5-9"}, 200, data),
        ({"If-Range": earlier, "Range": "bytes=5-9"}, 200, data),
    ]
    for conditions, expected, body in cases:
        status, headers, got = get(url, conditions)
        assert status == expected, conditions
        assert body is None or got == body, conditions
        if status in (200, 206, 304):
            assert (headers["ETag"], headers["Last-Modified"]) == (tag, modified), conditions


class CountingViewServer(ViewServer):
    """A view server that counts its own threads serving a connection (a count of all
    the process's serving threads would take in the last ones of other servers, such
    as the module's, ending while the test runs)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.serving = 0
        self._counting = threading.Lock()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Serve ``request`` as the view server does, counted while it does."""
        with self._counting:
            self.serving += 1
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._counting:
                self.serving -= 1


@pytest.mark.parametrize("count", [200, pytest.param(1500, marks=pytest.mark.slow)])
def test_half_sent_requests_hold_neither_threads_nor_the_server(count) -> None:
    """``count`` connections that each send part of a request and no more: at most
    ``MAX_CONNECTIONS`` threads serve them at any time, the others are answered 503 at
    once, each served one is closed once idle; the server then answers as before."""
    server = CountingViewServer(("127.0.0.1", 0), WEB, None, idle_seconds=3.0)
    with running(server) as address:
        port = int(address.rsplit(":", 1)[1])
        sockets, most = [], 0
        try:
            for k in range(count):
                connection = socket.create_connection(("127.0.0.1", port), timeout=10)
                connection.sendall(b"GET /viewer/index.html HTTP/1.1\r\nHost: 127.0.0.1:")
                sockets.append(connection)
                if k % 20 == 0:
                    most = max(most, server.serving)
            most = max(most, server.serving)
            # each is answered 503, or served until it has been idle for three seconds
            # and closed without an answer: none stays open (three, so that a loaded
            # machine opens them all before the first served ones are closed)
            answers = [connection.recv(200) for connection in sockets]
        finally:
            for connection in sockets:
                connection.close()
        assert MAX_CONNECTIONS // 2 <= most <= MAX_CONNECTIONS
        assert all(a == b"" or a.startswith(b"HTTP/1.1 503 Service Unavailable") for a in answers)
        assert sum(a != b"" for a in answers) >= count // 2
        deadline = time.monotonic() + 10
        while server.serving and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.serving == 0
        assert get(address + "/viewer/index.html")[0] == 200
