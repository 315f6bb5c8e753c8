"""A deadline for a whole HTTP request, which httpx does not have.

httpx's timeouts bound each socket operation (connect, each write, each read), so a server that sends a
byte every two seconds never times out and a request can last for ever. Here every socket operation of the
calling thread is also cut at that thread's deadline (set with `deadline_at`): a read gets at most the
time left, and none starts once the deadline has passed, so a request ends by it whatever the server does,
in the status line, the headers or the body.

It works below httpx, on httpcore's network streams: the transport is httpx's own, with a network backend
that wraps the sockets it opens. The sockets are this module's, so the client connects to its base URLs
directly (`HTTP_PROXY`/`HTTPS_PROXY` are not read).
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

_local = threading.local()


@contextmanager
def deadline_at(when: float) -> Iterator[None]:
    """Socket operations of this thread inside the block end by `when` (a `time.monotonic()` value)."""
    _local.when = when
    try:
        yield
    finally:
        _local.when = None


def _capped(timeout: float | None, expired: type[httpcore.TimeoutException]) -> float | None:
    when: float | None = getattr(_local, "when", None)
    if when is None:
        return timeout
    left = when - time.monotonic()
    if left <= 0:
        raise expired("the request's deadline (request_timeout) has passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _capped(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _capped(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname,
                                             _capped(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _capped(timeout, httpcore.ConnectTimeout),
                                               local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, _capped(timeout, httpcore.ConnectTimeout),
                                                       socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's transport whose connection pool opens its sockets through `_Backend` (httpx offers no
    public way to pass a network backend; its pool keeps the backend in `_network_backend`)."""

    def __init__(self, limits: httpx.Limits) -> None:
        super().__init__(limits=limits)
        self._pool._network_backend = _Backend()
