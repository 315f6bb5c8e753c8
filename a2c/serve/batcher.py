"""Gathering concurrent requests into batched passes, on a bounded queue, off the event loop.

A request waits at most `window` seconds after the first request of its batch arrived (or less, once
`max_batch` are waiting); then the whole batch goes to `run_batch` on one worker thread, so the event loop
keeps accepting, refusing and answering requests while the model works. One pass runs at a time: the
next batch gathers while it runs. The worker is a daemon thread, so a pass still running for requests
whose clients gave up (deadline) never holds up the exit once every answered request is out.
`max_pending` bounds the requests queued or being answered; the next one is refused (`QueueFull`), so a
flood costs memory and latency only up to that bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class QueueFull(Exception):
    """`max_pending` requests are already queued or being answered."""


@dataclass(eq=False)
class Job(Generic[T, R]):
    """One request's place in the queue; `future` gets its result or the exception that ended it."""

    item: T
    future: asyncio.Future[R]
    arrived: float = field(default_factory=time.monotonic)
    started: float | None = None  # when its batch went to the worker
    batch_size: int = 0
    progress_at_start: tuple[int, ...] = ()  # the worker's progress counters when its batch started
    abandoned: bool = False  # its client stopped waiting (deadline): dropped if still queued


class Batcher(Generic[T, R]):
    def __init__(self, run_batch: Callable[[Sequence[T]], Sequence[R | Exception]], *, window: float,
                 max_batch: int, max_pending: int,
                 progress: Callable[[], tuple[int, ...]] = tuple) -> None:
        self.run_batch = run_batch
        self.window, self.max_batch, self.max_pending = window, max_batch, max_pending
        self.progress = progress  # read when a batch starts, for a 504's account of what was done
        self.last_batch_seconds = 0.0
        self.batches = 0
        self._waiting: deque[Job[T, R]] = deque()
        self._pending = 0
        self._arrived = asyncio.Event()
        self._full = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        return self._pending

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._work(), name="a2c-serve-batcher")

    async def stop(self) -> None:
        """Stop gathering; jobs still waiting get CancelledError; a pass that runs is left to finish."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for job in self._waiting:
            if not job.future.done():
                job.future.cancel()
        self._waiting.clear()

    def submit(self, item: T) -> Job[T, R]:
        if self._pending >= self.max_pending:
            raise QueueFull
        job: Job[T, R] = Job(item, asyncio.get_running_loop().create_future())
        self._waiting.append(job)
        self._pending += 1
        self._arrived.set()
        if len(self._waiting) >= self.max_batch:
            self._full.set()
        return job

    def abandon(self, job: Job[T, R]) -> None:
        """The client stopped waiting: a queued job is dropped (its slot freed); a running one finishes."""
        if not job.abandoned and job.started is None:
            self._waiting.remove(job)
            self._pending -= 1
        job.abandoned = True

    async def _next_batch(self) -> list[Job[T, R]]:
        while True:
            while not self._waiting:
                self._arrived.clear()
                await self._arrived.wait()
            if len(self._waiting) < self.max_batch and self.window > 0:
                self._full.clear()
                # asyncio.wait, not wait_for: Python 3.11's wait_for drops a cancel (stop) that arrives as
                # the event is set
                full = asyncio.ensure_future(self._full.wait())
                closes = self._waiting[0].arrived + self.window
                try:
                    await asyncio.wait({full}, timeout=closes - time.monotonic())
                finally:
                    full.cancel()
            batch = [self._waiting.popleft() for _ in range(min(self.max_batch, len(self._waiting)))]
            if batch:  # empty when every waiting job was abandoned during the window
                return batch

    async def _in_thread(self, items: list[T]) -> Sequence[R | Exception]:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Sequence[R | Exception]] = loop.create_future()

        def settle(result: Sequence[R | Exception] | None, error: Exception | None) -> None:
            if done.done():
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(result or [])

        def run() -> None:
            result, error = None, None
            try:
                result = self.run_batch(items)
            except Exception as exc:
                error = exc
            with contextlib.suppress(RuntimeError):  # a closed loop: the server is gone, nobody waits
                loop.call_soon_threadsafe(settle, result, error)

        threading.Thread(target=run, name="a2c-serve-pass", daemon=True).start()
        return await done

    async def _work(self) -> None:
        while True:
            batch = await self._next_batch()
            started, progress = time.monotonic(), self.progress()
            for job in batch:
                job.started, job.batch_size, job.progress_at_start = started, len(batch), progress
            try:
                results = await self._in_thread([job.item for job in batch])
            except Exception as exc:
                results = [exc] * len(batch)
            self.last_batch_seconds = time.monotonic() - started
            self.batches += 1
            for job, result in zip(batch, results, strict=True):
                self._pending -= 1
                if job.abandoned or job.future.done():
                    continue
                if isinstance(result, Exception):
                    job.future.set_exception(result)
                else:
                    job.future.set_result(result)
