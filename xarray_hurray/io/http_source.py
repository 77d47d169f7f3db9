"""Plain ``http(s)://`` URLs read with the standard library's HTTP client.

Opening a URL through fsspec first imports fsspec's HTTP file system and aiohttp, and
aiohttp builds a TLS context with the system's certificates as it is imported: 0.16
to 0.19 s on an idle machine (0.7 s under load) before the first request of a
process leaves, three round trips of a 50 ms link.  ``http.client`` imports in
milliseconds and needs a TLS context only for ``https``.  :class:`HttpSource` keeps
what :class:`~xarray_hurray.io.FsspecSource` promises for HTTP: the first answer pins
the object's version and every later request is conditional on it and checked
(:mod:`.remote`), each attempt has a timeout, transient failures are retried under a
:class:`~xarray_hurray.io.RetryPolicy`, and the ranges of one read are fetched
concurrently, up to ``OBJECT_STORE.concurrency`` at a time.  Connections are kept
alive, one per thread of a shared pool.

URLs opened with ``storage_options`` (headers, authentication, client options) are
read through fsspec as before.
"""

from __future__ import annotations

import http.client
import os
import threading
import time
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from .costs import OBJECT_STORE, PLAIN_HTTP
from .plan import MergePolicy
from .pool import SharedThreadPool
from .remote import (
    DEFAULT_RETRY,
    Fetched,
    ObjectVersion,
    RetryPolicy,
    Transient,
    backoff,
    exhausted,
    http_answer,
    http_refusal,
    http_request_headers,
)
from .source import PooledSource

MAX_REDIRECTS = 5
"""Redirects followed by one request before it fails."""

_BLOCK = 1 << 20
"""Bytes of a body read between checks of the attempt's deadline."""

_local = threading.local()


def plain_http(url: str) -> bool:
    """Whether ``url`` is an ``http(s)`` URL this source reads (no credentials in it)."""
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.hostname) and "@" not in parts.netloc


_tls: Any = None


def _tls_context() -> Any:
    """The default TLS context, with the system's certificates, made on first use."""
    global _tls
    if _tls is None:
        import ssl

        _tls = ssl.create_default_context()
    return _tls


class _Deadline:
    """The end of one attempt; sockets wait at most until then."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left; TimeoutError once none are."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left


def _connection(scheme: str, netloc: str, deadline: _Deadline) -> tuple[Any, bool]:
    """This thread's kept-alive connection to ``netloc`` (made on first use), waiting at
    most until ``deadline``; and whether its socket is open from an earlier request."""
    connections: dict[tuple[int, str, str], Any] = _local.__dict__.setdefault("connections", {})
    key = (os.getpid(), scheme, netloc)
    connection = connections.get(key)
    if connection is None:
        if scheme == "https":
            connection = http.client.HTTPSConnection(netloc, context=_tls_context())
        else:
            connection = http.client.HTTPConnection(netloc)
        connections[key] = connection
    connection.timeout = deadline.left()  # for connecting
    if connection.sock is not None:
        connection.sock.settimeout(connection.timeout)
    return connection, connection.sock is not None


def _drop(scheme: str, netloc: str) -> None:
    """Close and forget this thread's connection to ``netloc`` (after a failure)."""
    connections = _local.__dict__.get("connections", {})
    found = connections.pop((os.getpid(), scheme, netloc), None)
    if found is not None:
        found.close()


def _target(url: str) -> tuple[str, str, str]:
    """Scheme, host and the request target (path and query, unsafe bytes quoted) of ``url``."""
    parts = urlsplit(url)
    path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=~")
    return parts.scheme, parts.netloc, path + (f"?{parts.query}" if parts.query else "")


_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)
"""How a request on a kept-alive connection that the server has closed fails."""


def _get(url: str, headers: dict[str, str], deadline: _Deadline) -> tuple[Any, bytes | None]:
    """Send a GET of ``url``; its response, and the body when the status is 200 or 206
    (read in blocks, the deadline checked between them).  A kept-alive connection the
    server closed meanwhile is replaced at once, without counting as a failure."""
    scheme, netloc, target = _target(url)
    try:
        connection, reused = _connection(scheme, netloc, deadline)
        try:
            connection.request("GET", target, headers=headers)
            response = connection.getresponse()
        except _STALE:
            if not reused:
                raise
            _drop(scheme, netloc)
            connection, _ = _connection(scheme, netloc, deadline)
            connection.request("GET", target, headers=headers)
            response = connection.getresponse()
        if response.status not in (200, 206):
            response.read()  # the body of a refusal, so that the connection is reused
            return response, None
        blocks = []
        while block := response.read(_BLOCK):
            blocks.append(block)
            if connection.sock is not None:
                connection.sock.settimeout(deadline.left())
        return response, b"".join(blocks)
    except BaseException:
        _drop(scheme, netloc)
        raise


class HttpSource(PooledSource):
    """An ``http(s)://`` URL read with ``http.client``: pinned to the version its first
    read saw, with a timeout per attempt and bounded retries, ranges fetched
    concurrently (see the module's description).

    Parameters
    ----------
    url
        The object's URL.
    retry
        Timeout and retries of each request; :data:`DEFAULT_RETRY` when None.
    version
        The version to pin from the start (a pickled source carries its own).
    """

    _threads = SharedThreadPool(OBJECT_STORE.concurrency, "hurray-http")
    """The threads that fetch the ranges of reads."""

    def __init__(
        self, url: str, *, retry: RetryPolicy | None = None, version: ObjectVersion | None = None
    ) -> None:
        super().__init__(version)
        self.url = url
        self.retry = retry or DEFAULT_RETRY

    @property
    def name(self) -> str:
        return self.url

    def _attempt(self, start: int, stop: int) -> Fetched:
        """One attempt at bytes ``[start, stop)``, redirects followed.

        Raises
        ------
        TimeoutError
            When the attempt outlasts the retry policy's timeout.
        Transient, HurrayChangedError, FileNotFoundError, OSError
            As :func:`~.remote.http_refusal` and :func:`~.remote.http_answer` say;
            dropped connections and malformed answers are transient.
        """
        deadline = _Deadline(self.retry.timeout)
        headers = http_request_headers(start, stop, self._version)
        url = self.url
        try:
            for _ in range(MAX_REDIRECTS + 1):
                response, body = _get(url, headers, deadline)
                location = response.getheader("Location")
                if response.status in (301, 302, 303, 307, 308) and location:
                    url = urljoin(url, location)
                    continue
                refused = http_refusal(self.url, response.status, response.reason, self._version)
                if refused is not None or body is None:
                    return refused or (b"", None)
                return http_answer(self.url, start, stop, response.status, response.headers, body)
        except TimeoutError:
            raise
        except (ConnectionError, http.client.HTTPException) as err:
            raise Transient(f"{type(err).__name__}: {err}") from None
        raise OSError(f"{self.url}: more than {MAX_REDIRECTS} redirects")

    def _fetch(self, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)`` under the retry policy, their version checked."""
        if stop <= start:
            return b""
        last = ""
        for number in range(self.retry.retries + 1):
            if number:
                time.sleep(backoff(self.retry, number))
            try:
                data, version = self._attempt(start, stop)
            except TimeoutError:
                last = f"no answer within {self.retry.timeout} s"
                continue
            except Transient as err:
                last = str(err)
                continue
            self._check_version(version)
            return data
        raise exhausted(self.retry, f"reading bytes [{start}, {stop}) of {self.url}", last)

    def default_policy(self) -> MergePolicy:
        return PLAIN_HTTP.merge_policy()

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "retry": self.retry, "version": self._version}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, state["url"], retry=state["retry"], version=state["version"])
