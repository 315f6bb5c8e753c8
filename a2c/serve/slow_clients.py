"""Slow clients are dropped: a connection has `read_timeout` seconds to send a whole request head.

uvicorn closes a keep-alive connection that stays idle after a response, but puts no limit on a request
head that arrives a byte at a time or never ends: 200 such connections stayed open with no end, each
holding a socket and a buffer. `head_deadline` gives uvicorn's h11 protocol a timer, armed when the
connection opens and again when each response is done; when it fires and no whole request head has
arrived since, the connection is closed. A body that trickles in has its own limit in the app
(`a2c.serve.app.read_json`), as the app only sees a request once its head is complete.
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class _HeadDeadline(H11Protocol):
    read_timeout = 10.0  # set by `head_deadline`
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self.read_timeout, self._head_overdue)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_overdue(self) -> None:
        """Close the connection if it is still waiting for a request head (h11's IDLE: none since the
        last response, or one begun but not finished)."""
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def head_deadline(read_timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing connections that send no whole request head in `read_timeout` s."""
    return type("HeadDeadlineProtocol", (_HeadDeadline,), {"read_timeout": read_timeout})
