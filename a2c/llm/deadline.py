"""A deadline for a whole HTTP request, which per-socket-operation timeouts do not give.

A socket timeout bounds each operation (connect, each write, each read), so a server that sends a byte
every two seconds never times out and a request can last for ever. Here every socket operation of the
calling thread is also cut at that thread's deadline (set with `deadline_at`): an operation gets at most
the time left, and none starts once the deadline has passed, so a request ends by it whatever the server
does, in the status line, the headers or the body (`a2c.llm.connections` asks `capped` before each one).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_local = threading.local()


class DeadlinePassed(TimeoutError):
    """The calling thread's deadline passed before a socket operation could start."""


@contextmanager
def deadline_at(when: float) -> Iterator[None]:
    """Socket operations of this thread inside the block end by `when` (a `time.monotonic()` value)."""
    _local.when = when
    try:
        yield
    finally:
        _local.when = None


def capped(timeout: float) -> float:
    """`timeout`, or the time left to this thread's deadline where that is shorter."""
    when: float | None = getattr(_local, "when", None)
    if when is None:
        return timeout
    left = when - time.monotonic()
    if left <= 0:
        raise DeadlinePassed("the request's deadline (request_timeout) has passed")
    return min(timeout, left)
