"""``hurray view``: the viewer page and a Hurray file, served on 127.0.0.1.

The page (``js/viewer/``, with the JavaScript reader ``js/src/``, its zstd decoder
included) ships in the package as ``xarray_hurray/web/``.  One threaded HTTP
server answers the page's files and the file itself, whose single ``Range`` requests
it answers with 206 (Partial Content), as object storage does.  A URL is not served:
the page reads it directly, which its server must allow (CORS).
"""

from __future__ import annotations

import argparse
import mimetypes
import re
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import as_file, files
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from ..container import has_magic
from ..errors import CliError
from ..io import is_url

SERVED = ("src", "viewer")
"""The folders of ``xarray_hurray/web/`` the server answers from."""

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")

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
        server = ViewServer(("127.0.0.1", args.port), Path(web), Path(target) if local else None)
        data = f"/data/{quote(Path(target).name)}" if local else target
        url = (
            f"http://127.0.0.1:{server.server_port}/viewer/index.html?url={quote(data, safe='/:')}"
        )
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
    """The page's files under ``/src/`` and ``/viewer/`` and the file at
    ``/data/<its name>``."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], web: Path, data: Path | None) -> None:
        super().__init__(address, _Handler)
        self.web = web.resolve()
        self.data = data


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ViewServer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the page's requests are not the user's business."""

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, body: bool) -> None:
        path = self._resolve(unquote(urlsplit(self.path).path))
        if path is None:
            self._status(404)
            return
        size = path.stat().st_size
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        if path.suffix == ".js":
            kind = "text/javascript"  # module scripts need a JavaScript type
        span = self._span(size)
        if span is None:
            self._status(416, {"Content-Range": f"bytes */{size}"})
            return
        start, stop = span
        ranged = "Range" in self.headers
        self.send_response(206 if ranged else 200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(stop - start))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Cache-Control", "no-cache")
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{size}")
        self.end_headers()
        if body:
            with path.open("rb") as f:
                f.seek(start)
                left = stop - start
                while left > 0:
                    block = f.read(min(_BLOCK, left))
                    if not block:  # the file got shorter meanwhile
                        break
                    self.wfile.write(block)
                    left -= len(block)

    def _resolve(self, route: str) -> Path | None:
        """The file a URL path names: the served file, or one of the page's (never a
        file outside their folders)."""
        data = self.server.data
        if data is not None and route == f"/data/{data.name}":
            return data
        folder, _, rest = route.lstrip("/").partition("/")
        if folder not in SERVED:
            return None
        root = (self.server.web / folder).resolve()
        path = (root / rest).resolve()
        return path if path.is_file() and path.is_relative_to(root) else None

    def _span(self, size: int) -> tuple[int, int] | None:
        """``[start, stop)`` of a single byte range request (the whole file without
        one); None when it cannot be served."""
        header = self.headers.get("Range")
        if header is None:
            return 0, size
        match = _RANGE.fullmatch(header.strip())
        if match is None or match.groups() == ("", ""):
            return None
        first, last = match.groups()
        if not first:  # the last n bytes
            return max(size - int(last), 0), size
        start, stop = int(first), size if not last else min(int(last) + 1, size)
        return (start, stop) if start < stop else None

    def _status(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()
