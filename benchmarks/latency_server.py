"""A local HTTP file server that adds latency per request and limits bandwidth.

Remote reads are measured against a real socket rather than an in-process wrapper,
so client-side costs (connection set-up, file system instantiation, size lookups)
count as they do against an object store.  Every request waits ``latency`` seconds
before its first byte; the bodies of all responses share one link of ``bandwidth``
bytes per second, sent in turn.  Concurrent requests overlap: the server runs a
thread per connection and its listen backlog holds every connection a client opens
at once (Python's default of 5 drops the rest, and each dropped connection costs
the client a one-second retransmit).

It serves GET and HEAD of the files under a directory, with single ``Range``
headers (``bytes=a-b``, ``bytes=a-``, ``bytes=-n``), HTTP/1.1 keep-alive, and logs
the requests it answers (arrival time, method, body bytes).

Use from a benchmark::

    from latency_server import LatencyServer

    with LatencyServer(directory, latency=0.05, bandwidth=100e6) as server:
        url = server.url("data.hurray")
        server.reset()
        ...                               # read url with any HTTP client
        print(server.requests)            # requests answered since reset()

or on its own: ``python benchmarks/latency_server.py DIRECTORY --latency 0.05``.
"""

from __future__ import annotations

import argparse
import mimetypes
import os
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import unquote, urlsplit

BACKLOG = 1024
"""Connections the listening socket queues: more than any client opens at once."""

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class _Link:
    """One link shared by all responses: bodies leave in turn at ``bandwidth`` bytes/s."""

    def __init__(self, bandwidth: float | None) -> None:
        self.bandwidth = bandwidth
        self._free_at = 0.0
        self._lock = threading.Lock()

    def wait_to_send(self, nbytes: int) -> None:
        """Sleep until a body of ``nbytes`` would have crossed the link."""
        if not self.bandwidth or nbytes <= 0:
            return
        with self._lock:
            start = max(time.perf_counter(), self._free_at)
            self._free_at = start + nbytes / self.bandwidth
            done = self._free_at
        time.sleep(max(done - time.perf_counter(), 0.0))


def _content_type(path: Path) -> str:
    """The type of a served file: by its suffix, so that a browser takes a page and its
    module scripts as such (js/bench/tiles.js loads the viewer from this server)."""
    if path.suffix == ".js":
        return "text/javascript"
    return mimetypes.guess_type(path.name)[0] or "application/octet-stream"


class _Server(ThreadingHTTPServer):
    request_queue_size = BACKLOG
    daemon_threads = True
    # set by LatencyServer before serving
    root: Path
    latency: float
    link: _Link
    counts: Counter[str]
    log: list[tuple[float, str, int]]
    spans: list[tuple[float, float]]
    count_lock: threading.Lock


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse connections
    # The headers and the body leave in two writes: with Nagle's algorithm the second
    # waits for the client's (delayed, up to 40 ms) acknowledgement of the first.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a benchmark prints its own figures."""

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, body: bool) -> None:
        """Answer after the latency; log the request once its body is sent."""
        server = self.server
        arrival = time.perf_counter()
        with server.count_lock:
            server.counts[self.command] += 1
        time.sleep(server.latency)
        path = self._file()
        size = path.stat().st_size if path is not None else 0
        span = self._span(size) if path is not None else None
        if path is None or span is None:
            self._logged(arrival, 0)
            if path is None:
                self._empty(404)
            else:
                self._empty(416, {"Content-Range": f"bytes */{size}"})
            return
        start, stop = span
        ranged = "Range" in self.headers
        self.send_response(206 if ranged else 200)
        self.send_header("Content-Length", str(stop - start))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", _content_type(path))
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{size}")
        self.end_headers()
        if not body:
            self._logged(arrival, 0)
            return
        with path.open("rb") as f:
            f.seek(start)
            data = f.read(stop - start)
        server.link.wait_to_send(len(data))
        self._logged(arrival, len(data))  # before the client can see the body
        self.wfile.write(data)

    def _logged(self, arrival: float, sent: int) -> None:
        """Log a request that arrived at ``arrival`` as answered now, with ``sent``
        body bytes."""
        server = self.server
        with server.count_lock:
            server.log.append((arrival, self.command, sent))
            server.spans.append((arrival, time.perf_counter()))

    def _file(self) -> Path | None:
        """The served file the request names, or None (never outside the root)."""
        relative = unquote(urlsplit(self.path).path).lstrip("/")
        path = (self.server.root / relative).resolve()
        if not path.is_file() or not path.is_relative_to(self.server.root):
            return None
        return path

    def _span(self, size: int) -> tuple[int, int] | None:
        """``[start, stop)`` the request asks for; None when it cannot be served."""
        header = self.headers.get("Range")
        if header is None:
            return 0, size
        match = _RANGE.match(header.strip())
        if match is None or match.group(1) == match.group(2) == "":
            return None
        first, last = match.groups()
        if first == "":  # suffix: the last n bytes
            return max(size - int(last), 0), size
        start = int(first)
        stop = size if last == "" else min(int(last) + 1, size)
        if start >= size or stop <= start:
            return None
        return start, stop

    def _empty(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", "0")
        self.end_headers()


class LatencyServer:
    """Serve the files under ``root`` on 127.0.0.1 from a background thread.

    Parameters
    ----------
    root
        The directory whose files are served; URL paths are relative to it.
    latency
        Seconds each request waits before its response starts.
    bandwidth
        Bytes per second of the link all response bodies share; None: unlimited.
    port
        The port to listen on; 0 picks a free one.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        latency: float = 0.05,
        bandwidth: float | None = None,
        port: int = 0,
    ) -> None:
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.root = Path(root).resolve()
        self._server.latency = latency
        self._server.link = _Link(bandwidth)
        self._server.counts = Counter()
        self._server.log = []
        self._server.spans = []
        self._server.count_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def latency(self) -> float:
        """Seconds added to each request."""
        return self._server.latency

    @property
    def bandwidth(self) -> float | None:
        """Bytes per second of the shared link; None: unlimited."""
        return self._server.link.bandwidth

    @property
    def address(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, relative: str) -> str:
        """The URL of the file at ``relative`` under the root."""
        return f"{self.address}/{relative.lstrip('/')}"

    @property
    def requests(self) -> int:
        """Requests answered (any method) since the start or the last :meth:`reset`."""
        with self._server.count_lock:
            return sum(self._server.counts.values())

    @property
    def counts(self) -> dict[str, int]:
        """Requests answered per HTTP method since the start or the last :meth:`reset`."""
        with self._server.count_lock:
            return dict(self._server.counts)

    @property
    def log(self) -> list[tuple[float, str, int]]:
        """``(arrival, method, body bytes)`` of each request answered since :meth:`reset`,
        in the order they were answered.  Arrivals are ``time.perf_counter()``, which on
        Linux is one clock for all processes: a client, in this process or another,
        can tell which requests its steps made and the time before its first request."""
        with self._server.count_lock:
            return list(self._server.log)

    @property
    def arrivals(self) -> list[float]:
        """When each request since :meth:`reset` arrived, earliest first."""
        return sorted(entry[0] for entry in self.log)

    @property
    def round_trips(self) -> int:
        """Round trips since :meth:`reset`: groups of requests in flight together.

        A request joins the current group when it arrives before any request of the
        group has been answered, and starts the next group when it arrives after one
        was (it can only have been sent on an answer, or later).  Gaps between
        arrivals would split requests sent together whenever a loaded machine delays
        one of them by a fraction of the latency; the answers come a whole latency
        after the arrivals, so this count holds under load.
        """
        with self._server.count_lock:
            spans = sorted(self._server.spans)
        count, first_answer = 0, -float("inf")
        for arrival, answered in spans:
            if arrival >= first_answer:
                count, first_answer = count + 1, answered
            else:
                first_answer = min(first_answer, answered)
        return count

    def reset(self) -> None:
        """Start counting requests from zero."""
        with self._server.count_lock:
            self._server.counts.clear()
            self._server.log.clear()
            self._server.spans.clear()

    def start(self) -> LatencyServer:
        """Start serving in a daemon thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> LatencyServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", help="directory to serve")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--bandwidth", type=float, default=None, help="bytes per second")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    server = LatencyServer(args.root, args.latency, args.bandwidth, args.port)
    print(f"serving {args.root} at {server.address} (Ctrl-C stops)")
    server.start()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
