"""Range reads of remote objects: pinned to one version of the object, with a timeout
and bounded retries.

A reader takes a file's structure from its first read and fetches indexes and chunks
later, perhaps in another process.  Should the object be replaced in between, the new
index and chunks agree with each other and checksums cannot tell.  So the first
response pins the object's version: its ETag, its S3 version id, or its Last-Modified
time where that is all a server sends.  Every later request is conditional on it
(``If-Match``, ``If-Unmodified-Since``, or a request for the pinned S3 version), and
the identity each response carries is compared with the pin too, for servers that
ignore conditions.  A mismatch raises :class:`HurrayChangedError`.

Each attempt at a request has a timeout; dropped connections, timeouts, HTTP 408, 429
and 5xx answers and bodies shorter than their range are retried with exponential
backoff a bounded number of times, then :class:`SourceReadError` names the last
failure.  The bytes of a failed or short attempt are never returned.
"""

from __future__ import annotations

# asyncio is imported in the functions that await: a reader that never awaits skips
# its import (25 ms of a cold process)
import random
import re
import threading
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields
from typing import Any, Protocol

from ..errors import HurrayChangedError, HurrayValueError, RangeIgnoredWarning, SourceReadError


@dataclass(frozen=True)
class ObjectVersion:
    """What tells one version of a remote object from another; None where unknown.

    ``size`` is the object's length in bytes.
    """

    etag: str | None = None
    version_id: str | None = None
    last_modified: str | None = None
    size: int | None = None

    def conflict(self, other: ObjectVersion) -> str | None:
        """What differs between this version and ``other``, or None.

        Only what both record is compared; Last-Modified only when there is no ETag
        (the same bytes uploaded again get a new time but keep their ETag).
        """
        for name in ("etag", "version_id", "last_modified", "size"):
            if name == "last_modified" and self.etag and other.etag:
                continue
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is not None and theirs is not None and mine != theirs:
                return f"{name} {mine!r} became {theirs!r}"
        return None

    def http_conditions(self) -> dict[str, str]:
        """The request headers that make a GET fail (412) unless this version is served.

        Weak ETags never match ``If-Match`` (a strong comparison), so they are only
        compared with the response's.
        """
        if self.etag and not self.etag.startswith("W/"):
            return {"If-Match": self.etag}
        if self.last_modified:
            return {"If-Unmodified-Since": self.last_modified}
        return {}


def changed(name: str, what: str) -> HurrayChangedError:
    """The error for ``name``, whose version changed as ``what`` says."""
    return HurrayChangedError(
        f"{name} was replaced or modified after it was first read ({what}); "
        "open it again to read the new version",
        value=name,
    )


@dataclass(frozen=True)
class RetryPolicy:
    """How remote reads wait and retry.

    Parameters
    ----------
    timeout
        Seconds one attempt at a request may take, from connecting to the last byte.
    retries
        Further attempts after a failed first one (0: no retry).
    backoff
        Seconds before the first retry; each later wait doubles, with random jitter
        down to half of it so that many readers do not retry in step.
    """

    timeout: float = 30.0
    retries: int = 4
    backoff: float = 0.2

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise HurrayValueError(f"retry {item.name} must be a number >= 0, got {value!r}")
        if not self.timeout > 0 or not isinstance(self.retries, int):
            raise HurrayValueError(
                f"retry timeout must be > 0 and retries an integer, got {self.timeout!r}, "
                f"{self.retries!r}"
            )


DEFAULT_RETRY = RetryPolicy()
"""The policy of remote sources created without one."""


class Transient(Exception):
    """An attempt failed in a way that another attempt may not."""


Fetched = tuple[bytes, ObjectVersion | None]
"""Bytes of a range and the version of the object that served them (None when the
answer carried no bytes to check, as for a range past the end)."""


def backoff(policy: RetryPolicy, number: int) -> float:
    """Seconds to wait before attempt ``number`` (1 for the first retry): doubling from
    ``policy.backoff``, with random jitter down to half of it."""
    return policy.backoff * 2.0 ** (number - 1) * random.uniform(0.5, 1.0)


def exhausted(policy: RetryPolicy, what: str, last: str) -> SourceReadError:
    """The error for ``what`` once every attempt of ``policy`` failed, the last as ``last``."""
    return SourceReadError(f"{what}: {policy.retries + 1} attempts failed; the last: {last}")


async def with_retries(
    attempt: Callable[[], Awaitable[Fetched]], policy: RetryPolicy, what: str
) -> Fetched:
    """``attempt()`` under ``policy``: each try timed out, transient failures retried.

    Raises
    ------
    SourceReadError
        When every attempt failed, naming ``what`` and the last failure.
    """
    import asyncio

    last = ""
    for number in range(policy.retries + 1):
        if number:
            await asyncio.sleep(backoff(policy, number))
        try:
            # the timeout cancels the attempt: a stalled answer's bytes are never used
            return await asyncio.wait_for(attempt(), policy.timeout)
        except TimeoutError:
            last = f"no answer within {policy.timeout} s"
        except Transient as err:
            last = str(err)
    raise exhausted(policy, what, last)


def _transient_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def checked_length(data: bytes, start: int, stop: int, size: int | None) -> bytes:
    """``data`` if it holds all of ``[start, stop)`` that an object of ``size`` bytes has.

    Raises
    ------
    Transient
        For a short (or long) body.
    """
    # a range may run past the end of the object: then only the bytes up to its size
    # come back, and a start past the end gets none
    expected = max(min(stop, size) - start, 0) if size is not None else stop - start
    if len(data) != expected:
        raise Transient(f"bytes [{start}, {stop}) answered with {len(data)} of {expected} bytes")
    return data


_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def http_request_headers(start: int, stop: int, pin: ObjectVersion | None) -> dict[str, str]:
    """The headers asking for bytes ``[start, stop)`` of the pinned version."""
    headers = {"Range": f"bytes={start}-{stop - 1}"}
    headers.update(pin.http_conditions() if pin else {})
    return headers


def http_refusal(url: str, status: int, reason: str, pin: ObjectVersion | None) -> Fetched | None:
    """What an HTTP answer of ``status`` to a range request means before its body:
    None for a body to read (200, 206), an empty answer for a range past the end
    (416); anything else raises.

    Raises
    ------
    HurrayChangedError
        When the server answers that the pinned version is gone (412).
    FileNotFoundError
        For a 404 before any version was pinned.
    Transient
        For failures worth another attempt.
    OSError
        For other refusals (401, 403, ...).
    """
    if status == 416:  # the range starts past the end: no bytes, nothing to pin
        return b"", None
    # once a version is pinned, a 404 means the object was replaced or removed
    if status == 412 or (status == 404 and pin is not None):
        raise changed(url, f"the server answered {status} {reason}")
    if status == 404:
        raise FileNotFoundError(url)
    if _transient_status(status):
        raise Transient(f"HTTP {status} {reason}")
    if status not in (200, 206):
        raise OSError(f"{url}: HTTP {status} {reason}")
    return None


class Headers(Protocol):
    """Response headers looked up by name, case-insensitively (aiohttp's, http.client's)."""

    def get(self, name: str, default: str = ..., /) -> str | None: ...


def http_answer(
    url: str, start: int, stop: int, status: int, headers: Headers, body: bytes
) -> Fetched:
    """Bytes ``[start, stop)`` and the version of the object from the body of a 200 or
    206 answer to a range request, checked against its headers.

    Raises
    ------
    Transient
        For a body shorter (or longer) than the range, or a ``Content-Range`` that is
        not the one asked for.
    """
    version = ObjectVersion(etag=headers.get("ETag"), last_modified=headers.get("Last-Modified"))
    if status == 200:  # the server ignored the range and sent everything
        whole = len(body)
        if (start, stop) != (0, whole):
            _warn_range_ignored(url, whole)
        size: int | None = whole
        body = body[start:stop]
    else:
        # a 206 for other bytes than asked must not be taken as ours: retried, never
        # returned
        match = _CONTENT_RANGE.fullmatch(headers.get("Content-Range", "") or "")
        if match is None or int(match[1]) != start:
            raise Transient(f"HTTP 206 with Content-Range {match and match[0]!r}")
        size = None if match[3] == "*" else int(match[3])
    return checked_length(body, start, stop, size), _with_size(version, size)


async def http_range(
    fs: Any, url: str, start: int, stop: int, pin: ObjectVersion | None
) -> Fetched:
    """One attempt at bytes ``[start, stop)`` of ``url`` through an fsspec HTTP file system.

    Raises
    ------
    HurrayChangedError, FileNotFoundError, Transient, OSError
        As :func:`http_refusal` and :func:`http_answer` say.
    """
    import aiohttp

    session = await fs.set_session()
    options = dict(fs.kwargs)
    headers = dict(options.pop("headers", None) or {})
    headers.update(http_request_headers(start, stop, pin))
    try:
        async with session.get(fs.encode_url(url), headers=headers, **options) as response:
            refused = http_refusal(url, response.status, str(response.reason), pin)
            if refused is not None:
                return refused
            body = await response.read()
            return http_answer(url, start, stop, response.status, response.headers, body)
    except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as err:
        # from None: the retry loop reports the message; the chain would only repeat it
        raise Transient(f"{type(err).__name__}: {err}") from None


_RANGE_IGNORED: set[str] = set()
_RANGE_IGNORED_LOCK = threading.Lock()


def _warn_range_ignored(url: str, size: int) -> None:
    """Warn, once per URL and process (reads run in several threads at once), that the
    server of ``url`` sends the whole file for a range request."""
    with _RANGE_IGNORED_LOCK:
        if url in _RANGE_IGNORED:
            return
        _RANGE_IGNORED.add(url)
    warnings.warn(
        f"{url}: the server ignored the HTTP Range request and sent the whole file "
        f"({size} bytes): every read downloads all of it; serve the file from a server "
        "that honours Range requests",
        RangeIgnoredWarning,
        stacklevel=2,
    )


def _with_size(version: ObjectVersion, size: int | None) -> ObjectVersion:
    return ObjectVersion(version.etag, version.version_id, version.last_modified, size)


async def s3_range(fs: Any, path: str, start: int, stop: int, pin: ObjectVersion | None) -> Fetched:
    """One attempt at bytes ``[start, stop)`` of ``path`` through an s3fs file system.

    A pinned version id is requested as such (so a versioned bucket keeps serving the
    version first read); a pinned ETag goes into ``IfMatch``.

    Raises
    ------
    HurrayChangedError, FileNotFoundError, Transient
        As :func:`http_range`.
    """
    import aiohttp
    from botocore.exceptions import (
        ClientError,
        HTTPClientError,
        IncompleteReadError,
        ResponseStreamingError,
    )

    client = await fs.set_session()
    bucket, key, version_id = fs.split_path(path)
    request: dict[str, Any] = {"Bucket": bucket, "Key": key, "Range": f"bytes={start}-{stop - 1}"}
    version_id = (pin.version_id if pin else None) or version_id
    if version_id:
        request["VersionId"] = version_id
    if pin and pin.etag:
        request["IfMatch"] = pin.etag
    try:
        response = await client.get_object(**request, **fs.req_kw)
        try:
            body = await response["Body"].read()
        finally:
            response["Body"].close()
    except ClientError as err:
        status = int(err.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
        code = err.response.get("Error", {}).get("Code", "")
        if status == 416:
            return b"", None
        if status == 412 or (status == 404 and pin is not None):
            raise changed(f"s3://{path}", f"S3 answered {status} {code}") from None
        if status == 404:
            raise FileNotFoundError(f"s3://{path}") from None
        if _transient_status(status):
            raise Transient(f"S3 {status} {code}") from None
        raise
    except (
        HTTPClientError,
        IncompleteReadError,
        ResponseStreamingError,
        aiohttp.ClientError,
    ) as err:
        raise Transient(f"{type(err).__name__}: {err}") from None
    match = _CONTENT_RANGE.fullmatch(response.get("ContentRange") or "")
    size = int(match[3]) if match and match[3] != "*" else None
    if match is None or int(match[1]) != start:
        raise Transient(f"S3 answered a range request with ContentRange {match and match[0]!r}")
    modified = response.get("LastModified")
    version = ObjectVersion(
        etag=response.get("ETag"),
        version_id=response.get("VersionId"),
        last_modified=None if modified is None else modified.isoformat(),
        size=size,
    )
    return checked_length(body, start, stop, size), version


def info_version(info: dict[str, Any]) -> ObjectVersion:
    """The version an fsspec ``info`` dict describes, for file systems without
    conditional requests (the keys differ between implementations)."""

    def first(*keys: str) -> str | None:
        return next((str(info[k]) for k in keys if info.get(k) is not None), None)

    size = info.get("size")
    return ObjectVersion(
        etag=first("ETag", "etag", "e_tag", "md5Hash"),
        version_id=first("VersionId", "version_id", "generation"),
        last_modified=first("LastModified", "last_modified", "mtime", "updated", "created"),
        size=size if isinstance(size, int) else None,
    )
