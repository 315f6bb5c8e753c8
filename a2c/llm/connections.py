"""Kept-alive HTTP/1.1 connections to a run's servers: each request one write, each answer read here.

Why not httpx, nor http.client: a probe of a served model sends thousands of requests, and the client's own
CPU per request is a goal (`benchmarks/bench_probe_client.py`). httpx's request machinery (URL and header
models, hooks, the pool's bookkeeping) cost ~1.5 ms of CPU per request; http.client ~0.4 ms more than the
socket work itself, most of it the email package's header parser and the header-by-header writes. What a2c
asks of a server is narrow: a JSON POST or a GET, answered with a Content-Length, chunked, or read to the
close. So a request is a head made once per URL, plus its length and body, sent in one write; the answer is
read by the small reader below (status line, headers, body; interim 1xx answers skipped; http.client's
limits on line length and header count), the only header fields it acts on being the framing ones.

A request borrows an idle connection to its server (or opens one) and gives it back once its answer is read
whole, so each worker thread goes on using one connection. An idle connection the server has closed
meanwhile is dropped before it is used (as httpcore does). Failures are raised as httpx's exception types
(ConnectError, ReadTimeout, RemoteProtocolError, ...): the names a2c's retry policy and error lines already
speak; a malformed answer names http.client's exception for it (BadStatusLine, IncompleteRead, ...). Every
socket operation ends by the calling thread's deadline (`a2c.llm.deadline`). Proxy variables (HTTP_PROXY)
are not read: the client connects to its URLs directly.
"""

from __future__ import annotations

import http.client
import io
import re
import select
import socket
import ssl
import threading
from collections.abc import Mapping
from typing import Any, BinaryIO
from urllib.parse import urlsplit

import httpx

from a2c.llm.deadline import capped

_Origin = tuple[str, str, int]  # scheme, host, port
_DEFAULT_PORT = {"http": 80, "https": 443}
_MAX_LINE = 65536  # http.client's limits: the longest line and the most header fields of an answer
_MAX_HEADERS = 100
_ILLEGAL_IN_TARGET = re.compile(r"[\x00-\x20\x7f]")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_LINE_ENDS = (b"\r\n", b"\n", b"")


def _arm(sock: socket.socket, timeout: float) -> None:
    """The socket's timeout for its next operation: `timeout`, or the time left where that is shorter
    (set only when it changes: setting it is a system call)."""
    wanted = capped(timeout)
    if sock.gettimeout() != wanted:
        sock.settimeout(wanted)


class _DeadlineReader(io.RawIOBase):
    """The socket's bytes, each read cut at the thread's deadline."""

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self._sock, self._timeout = sock, timeout

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        _arm(self._sock, self._timeout)
        return self._sock.recv_into(buffer)


class _Connection:
    """One kept-alive socket and the buffered reader its answers are read through."""

    __slots__ = ("reader", "sock")

    def __init__(self, sock: socket.socket, timeout: float) -> None:
        self.sock = sock
        self.reader = io.BufferedReader(_DeadlineReader(sock, timeout))

    def close(self) -> None:
        self.sock.close()


def _line(reader: BinaryIO, what: str) -> bytes:
    line = reader.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise http.client.LineTooLong(what)
    return line


def _status(reader: BinaryIO) -> tuple[bytes, int]:
    """The version and status of the status line."""
    line = _line(reader, "status line")
    if not line:
        raise http.client.RemoteDisconnected("Remote end closed connection without response")
    parts = line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or len(parts[1]) != 3 or not parts[1].isdigit():
        raise http.client.BadStatusLine(repr(line))
    return parts[0], int(parts[1])


def _headers(reader: BinaryIO) -> dict[bytes, bytes]:
    """The answer's header fields by lower-case name (the first of a repeated one, as http.client reads)."""
    fields: dict[bytes, bytes] = {}
    for _ in range(_MAX_HEADERS + 1):
        line = _line(reader, "header line")
        if line in _LINE_ENDS:
            if not line:
                raise http.client.IncompleteRead(b"")  # the connection ended inside the head
            return fields
        name, _, value = line.partition(b":")
        fields.setdefault(name.strip().lower(), value.strip())
    raise http.client.HTTPException(f"got more than {_MAX_HEADERS} headers")


def _exactly(reader: BinaryIO, size: int) -> bytes:
    data = reader.read(size)
    if len(data) < size:
        raise http.client.IncompleteRead(data, size - len(data))
    return data


def _chunked(reader: BinaryIO) -> bytes:
    parts: list[bytes] = []
    while True:
        size = _line(reader, "chunk size").split(b";", 1)[0].strip()
        if not size or size.lstrip(b"0123456789abcdefABCDEF"):
            raise http.client.IncompleteRead(b"".join(parts))
        length = int(size, 16)
        if not length:
            break
        parts.append(_exactly(reader, length))
        _exactly(reader, 2)  # the chunk's line end
    while _line(reader, "trailer line") not in _LINE_ENDS:
        pass  # trailer fields: nothing a2c reads
    return b"".join(parts)


def _answer(reader: BinaryIO, method: str) -> tuple[int, bytes, bool]:
    """Status, body, and whether the connection may carry another request."""
    while True:
        version, status = _status(reader)
        fields = _headers(reader)
        if not 100 <= status < 200 or status == 101:
            break  # interim answers (100 Continue, 103 Early Hints) come before the one that counts
    connection = fields.get(b"connection", b"").lower()
    keep = b"close" not in connection if version == b"HTTP/1.1" else b"keep-alive" in connection
    if method == "HEAD" or status in (204, 304) or status < 200:
        return status, b"", keep and status != 101
    if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
        return status, _chunked(reader), keep
    length = fields.get(b"content-length", b"")
    if length.isdigit():
        return status, _exactly(reader, int(length)), keep
    return status, reader.read(), False  # no length: the body ends with the connection


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether an idle kept-alive socket has something to read: the server closed it (or broke protocol)."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


class Connections:
    """HTTP/1.1 requests with JSON bodies, over kept-alive connections shared by the calling threads."""

    def __init__(self, headers: Mapping[str, str], timeout: float) -> None:
        fields = {"Accept-Encoding": "identity", "Content-Type": "application/json", **headers}
        lines = []
        for name, value in fields.items():  # a line break would end the head early: refused, unnamed value
            try:
                if not _TOKEN.fullmatch(name) or any(c in value for c in "\r\n\0"):
                    raise ValueError
                lines.append(f"{name}: {value}\r\n".encode("latin-1"))
            except ValueError:  # UnicodeEncodeError too: a header is sent as latin-1
                raise ValueError(f"the HTTP header {name!r} is not a valid header name and value") from None
        self._fields = b"".join(lines)
        self._timeout = timeout
        self._idle: dict[_Origin, list[_Connection]] = {}
        self._lock = threading.Lock()
        self._heads: dict[tuple[str, str], tuple[_Origin, bytes]] = {}  # (method, URL) → server, head
        self._tls: ssl.SSLContext | None = None  # made on the first https connection (it reads the CAs)

    def request(self, method: str, url: str, body: bytes | None = None) -> tuple[int, bytes]:
        """The status and the whole body of the answer to `method url`; transport failures as httpx's."""
        origin, head = self._head(method, url)
        conn = self._borrow(origin) or self._open(origin)
        try:
            status, data, keep = self._exchange(conn, method, head, body)
        except BaseException:
            conn.close()  # half a request or half an answer: the connection cannot be used again
            raise
        if keep:
            with self._lock:
                self._idle[origin].append(conn)
        else:
            conn.close()
        return status, data

    def _head(self, method: str, url: str) -> tuple[_Origin, bytes]:
        """The server of `url` and the request's head up to its length field, made once per method and URL."""
        found = self._heads.get((method, url))
        if found is None:
            parts = urlsplit(url)
            if parts.scheme not in _DEFAULT_PORT or not parts.hostname:
                raise httpx.UnsupportedProtocol(f"not an http(s) URL: {url}")
            port = parts.port or _DEFAULT_PORT[parts.scheme]
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            if _ILLEGAL_IN_TARGET.search(target) or not target.isascii():
                raise httpx.InvalidURL(f"the path of {url!r} holds a space or a character HTTP forbids")
            try:
                host = parts.hostname.encode("idna").decode("ascii")
            except UnicodeError:
                raise httpx.InvalidURL(f"the host of {url!r} is not a valid host name") from None
            host = f"[{host}]" if ":" in host else host
            shown = host if port == _DEFAULT_PORT[parts.scheme] else f"{host}:{port}"
            head = f"{method} {target} HTTP/1.1\r\nHost: {shown}\r\n".encode("ascii") + self._fields
            found = self._heads[(method, url)] = ((parts.scheme, parts.hostname, port), head)
        return found

    def _borrow(self, origin: _Origin) -> _Connection | None:
        """An idle connection to `origin` that is still open; None: open a new one."""
        with self._lock:
            idle = self._idle.setdefault(origin, [])
            while idle:
                conn = idle.pop()
                if not _closed_by_peer(conn.sock):
                    return conn
                conn.close()
        return None

    def _open(self, origin: _Origin) -> _Connection:
        scheme, host, port = origin
        try:
            sock = socket.create_connection((host, port), timeout=capped(self._timeout))
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if scheme == "https":
                    self._tls = self._tls or ssl.create_default_context()
                    sock = self._tls.wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(str(exc) or "timed out") from None
        except OSError as exc:  # refused, unreachable, unknown host, TLS
            raise httpx.ConnectError(str(exc)) from None
        return _Connection(sock, self._timeout)

    def _exchange(self, conn: _Connection, method: str, head: bytes,
                  body: bytes | None) -> tuple[int, bytes, bool]:
        try:
            _arm(conn.sock, self._timeout)  # sendall: the whole write within it
            conn.sock.sendall(head + (b"\r\n" if body is None else b"Content-Length: %d\r\n\r\n%b"
                                      % (len(body), body)))
        except TimeoutError as exc:
            raise httpx.WriteTimeout(str(exc) or "timed out") from None
        except OSError as exc:
            raise httpx.WriteError(str(exc)) from None
        try:
            return _answer(conn.reader, method)
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
