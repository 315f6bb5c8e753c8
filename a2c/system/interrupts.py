"""Stopping a2c from outside: Ctrl-C (SIGINT) and SIGTERM (`kill`, a service manager, a batch scheduler's
time limit) end a run the same way.

Python raises KeyboardInterrupt on SIGINT but simply dies on SIGTERM: no message, no grace for requests in
flight, no clean-up (`atexit`, the engines of the vllm backend). `sigterm_raises` makes SIGTERM raise
`Terminated`, a KeyboardInterrupt, so everything that handles a Ctrl-C handles it too; the CLI exits 143
(128 + 15) for it, as a process killed by SIGTERM does, with one line saying what happened.

`first_interrupt_as_event` is for a loop that must not be interrupted mid-step (the openai backend's,
which writes the cache): the first SIGINT or SIGTERM only tells the loop, which stops at its own pace; a
second one raises at once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where a Ctrl-C would raise KeyboardInterrupt."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated


# the handler of each signal when a2c's own behaviour applies: raising its exception
RAISING: dict[signal.Signals, Callable[[int, Any], None]] = {
    signal.SIGINT: signal.default_int_handler, signal.SIGTERM: _raise_terminated}


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises `Terminated` in the main thread (unless someone else handles
    it: only its default, dying, is replaced)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def first_interrupt_as_event(notify: Callable[[type[KeyboardInterrupt]], None]) -> Iterator[None]:
    """While the block runs, the first SIGINT or SIGTERM calls `notify` with the exception it would have
    raised (KeyboardInterrupt or Terminated) instead of raising it, and puts the raising handlers back, so
    a second one raises at once. `notify` runs in a signal handler: it should only record and queue.
    Only signals whose raising handler is in place (an ignored SIGINT or someone else's handler is left
    alone), and only in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    mine = [s for s, handler in RAISING.items() if signal.getsignal(s) is handler]

    def first(signum: int, frame: Any) -> None:
        for s in mine:
            signal.signal(s, RAISING[s])
        notify(Terminated if signum == signal.SIGTERM else KeyboardInterrupt)

    for s in mine:
        signal.signal(s, first)
    try:
        yield
    finally:
        for s in mine:
            signal.signal(s, RAISING[s])
