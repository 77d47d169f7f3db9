"""``hurray view``: the viewer page and a Hurray file, served on 127.0.0.1.

The page (``js/viewer/``, with the JavaScript reader ``js/src/``, its zstd decoder
included) ships in the package as ``xarray_hurray/web/``.  One threaded HTTP
server answers the page's files and the file itself, whose single ``Range`` requests
it answers with 206 (Partial Content), as object storage does, with an ``ETag`` and
``Last-Modified`` and the conditions a reader and a browser send (``If-Match``,
``If-Unmodified-Since``, ``If-None-Match``, ``If-Modified-Since``, ``If-Range``).  A
URL is not served: the page reads it directly, which its server must allow (CORS).

The server answers only requests addressed to it (``Host`` is ``127.0.0.1:port`` or
``localhost:port``: a page of another site whose name is made to resolve to
127.0.0.1 gets nothing), serves at most :data:`MAX_CONNECTIONS` connections at once
(others get 503) and closes a connection idle for :data:`IDLE_SECONDS`, half-sent
requests included.  Every refusal has a status and a line of text.
"""

from __future__ import annotations

import argparse
import email.utils
import mimetypes
import os
import re
import sys
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote, unquote, urlsplit

from ..container import has_magic
from ..errors import CliError
from ..io import is_url

SERVED = ("src", "viewer")
"""The folders of ``xarray_hurray/web/`` the server answers from."""

PAGE = "/viewer/index.html"
"""The viewer page; ``/`` and ``/viewer/`` lead there, with the served file."""

MAX_CONNECTIONS = 32
"""Connections served at once (a browser opens at most 6 to one server); more are
answered 503 at once, so that a flood of connections never holds a thread each."""

IDLE_SECONDS = 10.0
"""Seconds a connection may wait for the rest of a request, or stay open between
requests, or a client take to accept an answer's bytes, before it is closed."""

_RANGE = re.compile(r"bytes=(\d{0,18})-(\d{0,18})")
"""A single byte range; numbers of more digits than any file's size are refused."""

_BLOCK = 1 << 20
"""Bytes sent in one write."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Give the parser of ``hurray view`` its description and arguments."""
    parser.description = (
        "Serve the viewer page and FILE on 127.0.0.1 (Range requests included), print the "
        "page's URL and open it in a browser. A URL is not served: the page reads it "
        "directly, which its server must allow (CORS)."
    )
    parser.add_argument("file", metavar="FILE_OR_URL", help="a local Hurray file, or its URL")
    parser.add_argument("--port", type=int, default=0, help="the port (default: a free one)")
    parser.add_argument("--no-open", action="store_true", help="print the URL only")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve the page and ``args.file`` until interrupted."""
    target: str = args.file
    local = not is_url(target)
    if local:
        if not Path(target).is_file():
            raise CliError(f"no such file: {target}")
        if not has_magic(target):
            raise CliError(f"not a Hurray file: {target}")
    with as_file(files("xarray_hurray") / "web") as web:
        shown = Path(target) if local else target
        server = ViewServer(("127.0.0.1", args.port), Path(web), shown)
        url = f"http://127.0.0.1:{server.server_port}{server.page}"
        print(f"serving {target} at {url} (Ctrl-C stops)", flush=True)
        if not args.no_open:
            threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
    return 0


class ViewServer(ThreadingHTTPServer):
    """The page's files under ``/src/`` and ``/viewer/``, the file at ``/data/<its
    name>`` (a local one; a URL the page reads itself), and ``/`` leading to the page
    with the file.

    Parameters
    ----------
    address
        Where to listen: ``("127.0.0.1", port)``.
    web
        The folder of the page's files.
    shown
        The file the page shows: a local path, served, or a URL.
    idle_seconds
        :data:`IDLE_SECONDS`, for tests.
    """

    daemon_threads = True
    request_queue_size = 128
    """Connections the system holds for the server to accept: a burst of them past
    the default 5 would wait a second each for the client's retry."""

    def __init__(
        self,
        address: tuple[str, int],
        web: Path,
        shown: Path | str | None,
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        super().__init__(address, _Handler)
        self.web = web.resolve()
        self.data = shown if isinstance(shown, Path) else None
        """The local file served, if any."""
        self.shown = shown
        self.idle_seconds = idle_seconds
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        names = ("127.0.0.1", "localhost")
        port = self.server_port
        self.hosts = frozenset(f"{name}:{port}" for name in names) | (
            frozenset(names) if port == 80 else frozenset()
        )
        """The ``Host`` values of requests addressed to this server."""

    @property
    def page(self) -> str:
        """The path and query of the viewer page showing the file."""
        if self.shown is None:
            return PAGE
        data = f"/data/{quote(self.shown.name)}" if isinstance(self.shown, Path) else self.shown
        return f"{PAGE}?url={quote(data, safe='/:')}"

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve ``request`` in a thread of its own while fewer than
        :data:`MAX_CONNECTIONS` are served, else answer 503 at once and close it."""
        if not self._slots.acquire(blocking=False):
            text = b"busy: too many connections; try again\n"
            try:
                request.settimeout(1.0)
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"
                    b"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                    + b"Content-Length: %d\r\n\r\n" % len(text)
                    + text
                )
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Serve ``request`` (in its own thread), then give its slot back."""
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away or stopped reading is no error of the server's."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ViewServer

    def setup(self) -> None:
        super().setup()
        # reading a request, waiting for the next one and sending an answer each stop
        # after this long (a timeout while reading closes the connection quietly)
        self.connection.settimeout(self.server.idle_seconds)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the page's requests are not the user's business."""

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, body: bool) -> None:
        host = (self.headers.get("Host") or "").strip().lower()
        if host not in self.server.hosts:
            self._status(403, "this server answers requests to 127.0.0.1 or localhost, at its port")
            return
        route = unquote(urlsplit(self.path).path)
        if route in ("/", "/viewer", "/viewer/"):
            self._status(302, f"the viewer: {self.server.page}", {"Location": self.server.page})
            return
        path = self._resolve(route)
        if path is None:
            self._status(404, "not found: the server holds the viewer page (at /) and its file")
            return
        try:
            opened = path.open("rb")
        except OSError:
            self._status(404, "not found: the file cannot be opened")
            return
        with opened:
            self._send(opened, path.name, body)

    def _send(self, opened: BinaryIO, name: str, body: bool) -> None:
        """Answer with the bytes of ``opened``, the file at the request's path: the
        conditions first, then the range."""
        # the validators of the very bytes sent: stat of the open file
        stat = os.fstat(opened.fileno())
        size = stat.st_size
        tag = f'"{stat.st_size:x}-{stat.st_mtime_ns:x}-{stat.st_ino:x}"'
        modified = email.utils.formatdate(stat.st_mtime, usegmt=True)
        validators = {"ETag": tag, "Last-Modified": modified}
        refused = self._preconditions(tag, int(stat.st_mtime))
        if refused is not None:
            status, text = refused
            self._status(status, text, validators if status == 304 else None)
            return
        ranged = "Range" in self.headers and self._range_applies(tag, modified)
        span = self._span(size) if ranged else (0, size)
        if span is None:
            self._status(
                416, "the range is not within the file", {"Content-Range": f"bytes */{size}"}
            )
            return
        start, stop = span
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if name.endswith(".js"):
            kind = "text/javascript"  # module scripts need a JavaScript type
        self.send_response(206 if ranged else 200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(stop - start))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Cache-Control", "no-cache")
        for header, value in validators.items():
            self.send_header(header, value)
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{size}")
        self.end_headers()
        if body:
            opened.seek(start)
            left = stop - start
            while left > 0:
                block = opened.read(min(_BLOCK, left))
                if not block:  # the file got shorter meanwhile
                    self.close_connection = True  # the answer falls short of its length
                    break
                self.wfile.write(block)
                left -= len(block)

    def _preconditions(self, tag: str, mtime: int) -> tuple[int, str] | None:
        """The status refusing the request by its conditions (RFC 9110 § 13.2.2: 412
        where ``If-Match`` or ``If-Unmodified-Since`` fails, 304 where ``If-None-Match``
        or ``If-Modified-Since`` finds the version the client holds), or None."""
        match = self.headers.get("If-Match")
        if match is not None:
            if not _tag_listed(match, tag, strong=True):
                return 412, "the file is no longer the version asked for (If-Match)"
        elif _before(self.headers.get("If-Unmodified-Since"), mtime):
            return 412, "the file changed since the time asked for (If-Unmodified-Since)"
        none_match = self.headers.get("If-None-Match")
        if none_match is not None:
            if _tag_listed(none_match, tag, strong=False):
                return 304, ""
        elif _before(self.headers.get("If-Modified-Since"), mtime) is False:
            return 304, ""
        return None

    def _range_applies(self, tag: str, modified: str) -> bool:
        """Whether the ``Range`` is served: without ``If-Range``, or where it names the
        version served (its strong ETag, or exactly its Last-Modified); else the
        whole file goes out, as RFC 9110 § 13.1.5 says."""
        condition = self.headers.get("If-Range")
        if condition is None:
            return True
        condition = condition.strip()
        if condition.startswith(('"', "W/")):
            return condition == tag
        return condition == modified

    def _resolve(self, route: str) -> Path | None:
        """The file a URL path names: the served file, or one of the page's (never a
        file outside their folders); None for any other path, names the system
        cannot take (a NUL, too long) included."""
        data = self.server.data
        if data is not None and route == f"/data/{data.name}":
            return data
        folder, _, rest = route.lstrip("/").partition("/")
        if folder not in SERVED:
            return None
        root = (self.server.web / folder).resolve()
        try:
            path = (root / rest).resolve()
            return path if path.is_file() and path.is_relative_to(root) else None
        except (OSError, ValueError):
            return None

    def _span(self, size: int) -> tuple[int, int] | None:
        """``[start, stop)`` of the single byte range the request asks for; None when
        it cannot be served: several ranges, a malformed one, one that starts past
        the end or ends before it starts, the last 0 bytes."""
        match = _RANGE.fullmatch(self.headers.get("Range", "").strip())
        if match is None or match.groups() == ("", ""):
            return None
        first, last = match.groups()
        if not first:  # the last n bytes
            count = int(last)
            return (max(size - count, 0), size) if count and size else None
        start = int(first)
        stop = size if not last else min(int(last) + 1, size)
        return (start, stop) if start < stop and (not last or int(last) >= start) else None

    def _status(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
        """An answer of ``status`` whose body is ``text`` (none for a 304)."""
        data = f"{text}\n".encode() if status != 304 else b""
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if data:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        if status != 304:  # a 304 has no body, and a length there would be the file's
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data and self.command != "HEAD":
            self.wfile.write(data)


def _tag_listed(header: str, tag: str, strong: bool) -> bool:
    """Whether the ETag list ``header`` (or ``*``) names ``tag``: by strong comparison
    (a weak tag names nothing) or by weak comparison (its ``W/`` ignored)."""
    listed = [item.strip() for item in header.split(",")]
    if "*" in listed:
        return True
    if strong:
        return tag in listed
    return tag in (item.removeprefix("W/") for item in listed)


def _before(header: str | None, mtime: int) -> bool | None:
    """Whether the HTTP date ``header`` is before ``mtime`` (whole seconds since the
    epoch): the file changed after it; None without a date that parses."""
    if not header:
        return None
    try:
        date = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return date.timestamp() < mtime
