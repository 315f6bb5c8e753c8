"""Kept-alive HTTP/1.1 connections to a run's servers, over urllib3's connection pools.

urllib3 frames every exchange (http.client parses the status line, headers and chunks); a2c adds three
things the pools do not do by themselves, all through their public extension points (a connection class
and its `response_class`):

- **No answer reaches the wrong request.** An answer is read through a reader that, when the answer ends,
  looks (without waiting) for anything more: bytes the server sent after the answer, in the same write or
  already on the socket. Any such byte fails the exchange as a protocol error (the retry policy then sends
  the request again on a fresh connection), and the connection is closed, never reused. urllib3 also
  drops an idle connection with something to read before it lends it out again.
- **A bound on every answer**, enforced while reading: a Content-Length over the bound fails at once, and
  a body (with a length, chunked or read to the close) fails as soon as it passes the bound.
- **A deadline for the whole request**: every socket read ends by the calling thread's deadline
  (`a2c.llm.deadline`), so a server that trickles a byte at a time still ends by `request_timeout`.

Failures are raised as httpx's exception types (ConnectError, ReadTimeout, RemoteProtocolError, ...), the
names a2c's retry policy and error lines speak. Answers are never decompressed (`identity` is asked for),
redirects are not followed, and proxy variables (HTTP_PROXY) are not read.

Why urllib3: measured side by side (`benchmarks/bench_http_clients.py`), urllib3 and httpcore cost the
least CPU per request, aiohttp 15-55% more and httpx about twice as much; urllib3 and aiohttp kept every
answer with its own request against a server that sends a second answer after the first, httpcore and
httpx gave it to the next request.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import re
import select
import socket
import ssl
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx
import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    DecodeError,
    HTTPError,
    LocationParseError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)

from a2c.llm.deadline import capped

DEFAULT_MAX_BYTES = 8 << 20  # the largest answer read when the caller names no bound
_READ = 1 << 16
_NO_TIMEOUT = 3600.0  # a socket read's longest wait where none was set (urllib3 always sets one)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")

_local = threading.local()  # what this thread's reader saw after the answer it just read


class _DeadlineRaw(io.RawIOBase):
    """The socket's bytes, each read cut at the thread's deadline; `probing` reads only what is there."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        # the socket's own unbuffered file: it keeps the socket open while this answer is read, as
        # http.client's reader does (a connection that will close is closed before its body is read)
        self._file = sock.makefile("rb", buffering=0)
        self._timeout = sock.gettimeout() or _NO_TIMEOUT  # the read timeout urllib3 set for this answer
        self.probing = False

    def retire(self) -> None:
        """Shut the socket down: urllib3 sees it as dropped and never lends it out again."""
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        if self.probing:  # a look for bytes after the answer: never waits
            if self._sock.fileno() < 0:
                return None  # closed already (an answer read to the close): nothing can follow
            pending = isinstance(self._sock, ssl.SSLSocket) and self._sock.pending()
            if not pending and not select.select([self._sock], [], [], 0)[0]:
                return None
        wanted = capped(self._timeout)
        if self._sock.gettimeout() != wanted:  # set only when it changes: setting it is a system call
            self._sock.settimeout(wanted)
        return self._file.readinto(buffer)


class _Reader(io.BufferedReader):
    """http.client's buffered reader of one answer; when http.client closes it (the answer has ended), it
    records whether any byte followed the answer, buffered or on the socket."""

    def __init__(self, raw: _DeadlineRaw) -> None:
        super().__init__(raw)
        self._probe = raw

    def close(self) -> None:
        if not self.closed:
            self._probe.probing = True
            try:
                _local.trailing = bool(self.peek(1))
                if _local.trailing:  # the pool may have this connection back already: end it for good
                    self._probe.retire()
            except OSError:  # reset or closed by the server: nothing more to read, and not reusable
                _local.trailing = False
            finally:
                self._probe.probing = False
        super().close()


class _Source:
    """What http.client's response is made from: the socket, whose `makefile` is our reader."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def makefile(self, mode: str) -> _Reader:
        return _Reader(_DeadlineRaw(self._sock))


class _Response(http.client.HTTPResponse):
    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(_Source(sock), *args, **kwargs)  # type: ignore[arg-type]


class _Connection(HTTPConnection):
    response_class = _Response


class _TLSConnection(HTTPSConnection):
    response_class = _Response


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TLSPool(HTTPSConnectionPool):
    ConnectionCls = _TLSConnection


def _check_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers as sent, or ValueError naming (never showing) one that would break the request head."""
    for name, value in headers.items():
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            bad = True
        else:
            bad = not _TOKEN.fullmatch(name) or any(c in value for c in "\r\n\0")
        if bad:
            raise ValueError(f"the HTTP header {name!r} is not a valid header name and value")
    return {"Accept-Encoding": "identity", "Content-Type": "application/json", "User-Agent": "a2c",
            **headers}


class Connections:
    """HTTP/1.1 requests with JSON bodies, over kept-alive connections shared by the calling threads.

    Args:
        headers: sent with every request (an Authorization header, say); checked here.
        timeout: seconds each connect and each socket read or write may take.
        max_connections: connections kept per server (one per worker thread that uses it).
    """

    def __init__(self, headers: Mapping[str, str], timeout: float, max_connections: int = 8) -> None:
        self._headers = _check_headers(headers)
        self._timeout = timeout
        self._pools = urllib3.PoolManager(num_pools=16, maxsize=max_connections, retries=False)
        self._pools.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}
        # a URL's pool and request target (path and query), found once: the pool's key costs per request
        self._by_url: dict[str, tuple[HTTPConnectionPool, str]] = {}

    def request(self, method: str, url: str, body: bytes | None = None,
                max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[int, bytes]:
        """The status and the whole body of the answer to `method url`.

        Args:
            method: GET or POST.
            url: an http(s) URL.
            body: the JSON body to send, or None.
            max_bytes: the largest body read; a longer one is a protocol error.

        Returns:
            The status code and the body's bytes.

        Raises:
            httpx.TransportError: a connection, timeout or protocol failure (httpx's subclasses).
        """
        if not url.startswith(("http://", "https://")):
            raise httpx.UnsupportedProtocol(f"not an http(s) URL: {url}")
        if any(c in url for c in " \t\r\n\0\x7f") or not url.isascii():
            raise httpx.InvalidURL(f"the path of {url!r} holds a space or a character HTTP forbids")
        limit = capped(self._timeout)
        _local.trailing = False
        response = None
        try:
            found = self._by_url.get(url)
            if found is None:
                parts = urlsplit(url)
                target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                found = self._by_url[url] = (self._pools.connection_from_url(url), target)
            pool, target = found
            response = pool.urlopen(
                method, target, body=body, headers=self._headers, redirect=False, retries=False,
                preload_content=False, decode_content=False,
                timeout=urllib3.Timeout(connect=limit, read=limit))
            data = _body(response, url, max_bytes)
            if _local.trailing:
                raise httpx.RemoteProtocolError(
                    f"{url} sent bytes after its answer (an answer without a request): the connection is "
                    "dropped and the answer discarded")
        except BaseException as exc:
            if response is not None:
                _discard(response)
            if isinstance(exc, HTTPError):
                raise _as_httpx(exc, url) from None
            if isinstance(exc, (ValueError, OverflowError, MemoryError, http.client.HTTPException)):
                # http.client's own refusals of a garbled answer (a negative chunk size, a size past memory)
                raise httpx.RemoteProtocolError(f"{url}: malformed answer ({type(exc).__name__}: "
                                                f"{str(exc)[:200]})") from None
            raise
        response.release_conn()
        return response.status, data


def _body(response: urllib3.BaseHTTPResponse, url: str, max_bytes: int) -> bytes:
    """The answer's body, read in pieces and refused as soon as it is longer than `max_bytes`."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and (len(declared) > 18 or int(declared) > max_bytes):
        raise httpx.RemoteProtocolError(
            f"{url} announced an answer of {_size(declared)} (Content-Length), over the bound of "
            f"{max_bytes:,} bytes (max_response_bytes)")
    body = bytearray()
    # read1: at most what one chunk or one socket read gives, so a flood of tiny chunks builds no list
    while piece := response.read1(_READ):
        if len(body) + len(piece) > max_bytes:
            raise httpx.RemoteProtocolError(
                f"{url} sent an answer longer than the bound of {max_bytes:,} bytes (max_response_bytes)")
        body += piece
    return bytes(body)


def _size(declared: str) -> str:
    return f"{int(declared):,} bytes" if len(declared) <= 30 else f"a {len(declared)}-digit number of bytes"


def _discard(response: urllib3.BaseHTTPResponse) -> None:
    """Close the answer's connection (half an answer, or more than one: it cannot carry another request)."""
    connection = getattr(response, "connection", None)
    if connection is not None:
        connection.close()
    response.close()
    response.release_conn()


def _as_httpx(exc: HTTPError, url: str) -> Exception:
    """urllib3's failure as the httpx type the retry policy and error lines read."""
    reason = getattr(exc, "reason", None) or (exc.args[1] if len(exc.args) > 1 else None)
    text = f"{type(reason).__name__}: {reason}" if isinstance(reason, BaseException) else str(exc)
    kinds: tuple[tuple[type[HTTPError], type[Exception]], ...] = (
        (NewConnectionError, httpx.ConnectError), (ConnectTimeoutError, httpx.ConnectTimeout),
        (SSLError, httpx.ConnectError), (ReadTimeoutError, httpx.ReadTimeout),
        (LocationParseError, httpx.InvalidURL), (DecodeError, httpx.DecodingError))
    for urllib3_kind, kind in kinds:
        if isinstance(exc, urllib3_kind):
            return kind(text if urllib3_kind is LocationParseError else f"{url}: {text}")
    if isinstance(exc, ProtocolError):
        inner = exc.args[1] if len(exc.args) > 1 else None
        if isinstance(inner, TimeoutError):
            return httpx.ReadTimeout(f"{url}: {inner or 'timed out'}")
        if isinstance(inner, (ConnectionResetError, BrokenPipeError)) and \
                not isinstance(inner, http.client.RemoteDisconnected):
            return httpx.ReadError(f"{url}: {text}")
        return httpx.RemoteProtocolError(f"{url}: {text}")
    if "timed out" in str(exc).lower():
        return httpx.ReadTimeout(f"{url}: {text}")
    return httpx.RemoteProtocolError(f"{url}: {text}")


def status_error(method: str, url: str, status: int, data: bytes) -> httpx.HTTPStatusError:
    """An answer with an error status as httpx's error, which a2c's retry policy and messages read."""
    request = httpx.Request(method, url)
    return httpx.HTTPStatusError(f"HTTP {status} from {url}", request=request,
                                 response=httpx.Response(status, content=data, request=request))
