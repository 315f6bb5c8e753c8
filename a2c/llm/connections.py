"""Kept-alive HTTP connections to a run's servers, made with the standard library's `http.client`.

Why not httpx: its request machinery (URL and header models, cookie, auth and redirect hooks, the pool's
bookkeeping) cost ~1.5 ms of CPU per request, more than all the rest a2c does for one, and a probe of a
served model sends thousands (`benchmarks/bench_probe_client.py`); `http.client` reads the same HTTP/1.1
for about a third of it. A request borrows an idle connection to its server (or opens one) and gives it
back once its answer is read whole, so each worker thread goes on using one connection. An idle connection
the server has closed meanwhile is dropped before it is used (as httpcore does). Failures are raised as
httpx's exception types (ConnectError, ReadTimeout, RemoteProtocolError, ...): the names a2c's retry policy
and error lines already speak. Every socket operation ends by the calling thread's deadline
(`a2c.llm.deadline`). Proxy variables (HTTP_PROXY) are not read: the client connects to its URLs directly.
"""

from __future__ import annotations

import http.client
import io
import select
import socket
import ssl
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from a2c.llm.deadline import capped

_Origin = tuple[str, str, int]  # scheme, host, port


class _DeadlineReader(io.RawIOBase):
    """The socket's own reader, each read cut at the thread's deadline. The socket's timeout was set to the
    read timeout, or to the time left where that was shorter, and the time left only shrinks, so capping
    the current timeout again gives min(read timeout, time left now)."""

    def __init__(self, sock: socket.socket, raw: Any) -> None:
        self._sock, self._raw = sock, raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(capped(self._sock.gettimeout() or 0.0))
        read: int = self._raw.readinto(buffer)
        return read

    def close(self) -> None:
        self._raw.close()  # the socket closes once its connection let go of it too (http.client's count)
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    """http.client's response, reading through `_DeadlineReader`."""

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.fp = io.BufferedReader(_DeadlineReader(sock, self.fp.detach()))


class _HTTP(http.client.HTTPConnection):
    response_class = _DeadlineResponse


class _HTTPS(http.client.HTTPSConnection):
    response_class = _DeadlineResponse


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether an idle kept-alive socket has something to read: the server closed it (or broke protocol)."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


class Connections:
    """HTTP/1.1 requests with JSON bodies, over kept-alive connections shared by the calling threads."""

    def __init__(self, headers: Mapping[str, str], timeout: float) -> None:
        self._headers = {"Content-Type": "application/json", **headers}
        self._timeout = timeout
        self._idle: dict[_Origin, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._split: dict[str, tuple[_Origin, str]] = {}  # URL → (its server, the path to ask for)
        self._tls: ssl.SSLContext | None = None  # made on the first https connection (it reads the CAs)

    def request(self, method: str, url: str, body: bytes | None = None) -> tuple[int, bytes]:
        """The status and the whole body of the answer to `method url`; transport failures as httpx's."""
        origin, target = self._target(url)
        conn = self._borrow(origin)
        try:
            status, data = self._exchange(conn, method, target, body)
        except BaseException:
            conn.close()  # half a request or half an answer: the connection cannot be used again
            raise
        if conn.sock is not None:  # http.client closes it itself after `Connection: close`
            with self._lock:
                self._idle[origin].append(conn)
        return status, data

    def _target(self, url: str) -> tuple[_Origin, str]:
        found = self._split.get(url)
        if found is None:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise httpx.UnsupportedProtocol(f"not an http(s) URL: {url}")
            port = parts.port or (443 if parts.scheme == "https" else 80)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            found = self._split[url] = ((parts.scheme, parts.hostname, port), path)
        return found

    def _borrow(self, origin: _Origin) -> http.client.HTTPConnection:
        with self._lock:
            idle = self._idle.setdefault(origin, [])
            while idle:
                conn = idle.pop()
                if conn.sock is not None and not _closed_by_peer(conn.sock):
                    return conn
                conn.close()
        scheme, host, port = origin
        if scheme == "https":
            self._tls = self._tls or ssl.create_default_context()
            return _HTTPS(host, port, timeout=self._timeout, context=self._tls)
        return _HTTP(host, port, timeout=self._timeout)

    def _exchange(self, conn: http.client.HTTPConnection, method: str, target: str,
                  body: bytes | None) -> tuple[int, bytes]:
        if conn.sock is None:
            try:
                conn.timeout = capped(self._timeout)
                conn.connect()
            except TimeoutError as exc:
                raise httpx.ConnectTimeout(str(exc) or "timed out") from None
            except OSError as exc:  # refused, unreachable, unknown host, TLS
                raise httpx.ConnectError(str(exc)) from None
        sock = conn.sock
        try:
            sock.settimeout(capped(self._timeout))  # sendall: the whole write within it
            conn.request(method, target, body, self._headers)
        except TimeoutError as exc:
            raise httpx.WriteTimeout(str(exc) or "timed out") from None
        except OSError as exc:
            raise httpx.WriteError(str(exc)) from None
        try:
            sock.settimeout(capped(self._timeout))
            response = conn.getresponse()
            return response.status, response.read()
        except TimeoutError as exc:
            raise httpx.ReadTimeout(str(exc) or "timed out") from None
        except http.client.HTTPException as exc:  # closed before an answer, a garbled status line
            raise httpx.RemoteProtocolError(f"{type(exc).__name__}: {exc}") from None
        except OSError as exc:  # reset
            raise httpx.ReadError(str(exc)) from None


def status_error(method: str, url: str, status: int, data: bytes) -> httpx.HTTPStatusError:
    """An answer with an error status as httpx's error, which a2c's retry policy and messages read."""
    request = httpx.Request(method, url)
    return httpx.HTTPStatusError(f"HTTP {status} from {url}", request=request,
                                 response=httpx.Response(status, content=data, request=request))
