"""Feedback while a2c works: bars that move at least every second on a terminal, and stay quiet in a log.

A stage's chunk of questions can take minutes, so a bar per chunk alone sits still. Inside it:
- every `generate` call has a bar (`GenerationBar`) that counts token budgets (a prompt weighs its
  `max_tokens`): each finished batch moves it (`GenerationBar.finished`, through the backend's `emit`), and
  a backend that runs a batch as one whole (transformers) reports each decoding step (`decoding_step`) and
  the forward pass that reads the batch's prompts (`reading_prompts`), and in-process vLLM each finished
  request (`engine_requests`), so the bar and its ETA move inside a batch too;
- work with no count of its own (a model or judge loading, a judge scoring a chunk, the report's figures)
  shows a status line with its elapsed time (`status`).
On a terminal a background thread redraws every open bar each `TICK_SECONDS` (`ticking`), so even one long
forward pass shows its clock moving. Written to a file or pipe (a log), bars redraw at most every
`LOG_REDRAW_SECONDS` and status lines are left out: a log gets no carriage-return stream.

Bars are off unless a caller opts in with `generation_progress` (a stage runner, the probe command,
`AskToChoose.answer(progress=True)`), so library use stays silent. Progress is display only: nothing here
changes what a model computes.

Other libraries' bars (GGUF conversion, weight loading, downloads) say nothing a user can act on and
repeat on every command; `quiet_library_progress` silences them (the CLI calls it unless `--debug`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm import tqdm

TICK_SECONDS = 1.0  # a shown bar on a terminal is redrawn at least this often, moving or not
LOG_REDRAW_SECONDS = 30.0  # a bar written to a file or pipe is redrawn at most this often
STATUS_AFTER_SECONDS = 1.0  # a status line appears only for work that lasts longer than this


@dataclass(frozen=True)
class _Bars:
    desc: str
    enabled: bool


_BARS: ContextVar[_Bars | None] = ContextVar("a2c_generation_bars", default=None)
_OPEN: ContextVar[GenerationBar | None] = ContextVar("a2c_open_generation_bar", default=None)


@contextmanager
def generation_progress(desc: str, enabled: bool = True) -> Iterator[None]:
    """Within the block, every `generate` call shows a bar labelled `desc` and long work a `status` line
    (none when not `enabled`); an inner block's label and switch win."""
    token = _BARS.set(_Bars(desc, enabled))
    try:
        yield
    finally:
        _BARS.reset(token)


def _bars_on() -> bool:
    bars = _BARS.get()
    return bars is not None and bars.enabled


def on_terminal() -> bool:
    """Whether bars (drawn on stderr, as tqdm does) reach a terminal rather than a log."""
    return sys.stderr.isatty()


def bar(**options: Any) -> tqdm[Any]:
    """A tqdm bar as every a2c bar is made: redrawn at most every `LOG_REDRAW_SECONDS` where stderr is no
    terminal, columns following the terminal. `disable` is passed explicitly by callers, which keeps it
    independent of the `TQDM_DISABLE` default that silences other libraries' bars."""
    from tqdm import tqdm  # not at import: `quiet_library_progress` must run before tqdm's first import

    if not on_terminal():
        options = {"mininterval": LOG_REDRAW_SECONDS, "maxinterval": LOG_REDRAW_SECONDS, **options}
    made: tqdm[Any] = tqdm(dynamic_ncols=True, **options)
    return made


@contextmanager
def ticking(shown: tqdm[Any]) -> Iterator[tqdm[Any]]:
    """Within the block, `shown` is redrawn every `TICK_SECONDS` by a background thread when it reaches a
    terminal, so its clock (elapsed time, ETA) moves while the work in the block holds its count still;
    the bar is closed at the end, its line cleared (`leave=False`) or ended, so the next line printed
    starts on a line of its own. A bar with a `delay` is first drawn once that has passed."""
    with shown:
        if shown.disable or not on_terminal():
            yield shown
            return
        stop, drawn = threading.Event(), threading.Event()

        def tick() -> None:
            while not stop.wait(TICK_SECONDS):
                if time.time() >= shown.start_t + (shown.delay or 0):
                    shown.refresh()  # under tqdm's lock, which every bar's own redraw takes too
                    drawn.set()

        thread = threading.Thread(target=tick, name=f"a2c progress: {shown.desc}", daemon=True)
        thread.start()
        try:
            yield shown
        finally:
            stop.set()
            thread.join()
            if drawn.is_set():  # tqdm clears (or ends) at close only a bar its own updates drew after `delay`
                shown.last_print_t = max(shown.last_print_t, shown.start_t + (shown.delay or 0))


@contextmanager
def status(label: str) -> Iterator[None]:
    """A line `label … 00:12` while the block runs, for work with no count of its own (a model or judge
    loading, a judge scoring a chunk, drawing figures): shown on a terminal within `generation_progress`
    once the work has lasted `STATUS_AFTER_SECONDS`, its clock redrawn every `TICK_SECONDS`; nothing in a
    log or when bars are off."""
    if not (_bars_on() and on_terminal()):
        yield  # no bar made: a config error must not wait for tqdm's import (`a2c run bad.yaml`)
        return
    with ticking(bar(total=None, desc=label, bar_format="{desc} … {elapsed}", leave=False,
                     delay=STATUS_AFTER_SECONDS, disable=False)):
        yield


class GenerationBar:
    """The bar of one `generate` call. It counts token budgets, each prompt weighing its `max_tokens`, so
    a decoding step moves it by one token of every row in the batch and its ETA holds from the first
    steps on (an upper bound: rows that stop early finish their budget at once); the prompts done are in
    its postfix."""

    def __init__(self, budgets: Sequence[int], done: Sequence[int]) -> None:
        """`budgets`: the `max_tokens` of every sample of the call; `done`: those of the samples the cache
        served. Disabled outside `generation_progress`."""
        bars = _BARS.get()
        self.prompts, self.done = len(budgets), len(done)
        self.stepped = 0  # budget credited by decoding steps of the batch running, before it finished
        self.where = ""  # what the batch running is doing
        self.bar = bar(total=sum(budgets), initial=sum(done), desc=bars.desc if bars else "", leave=False,
                       bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]",
                       postfix=self._said(), disable=not _bars_on() or not budgets)

    def _said(self) -> str:
        return f"{self.done}/{self.prompts} prompts" + (f", {self.where}" if self.where else "")

    @property
    def shown(self) -> bool:
        return not self.bar.disable

    def _show(self) -> None:
        if self.shown:
            self.bar.set_postfix_str(self._said(), refresh=False)

    def finished(self, budgets: Sequence[int]) -> None:
        """Samples with these budgets are done (a backend's `emit`): the budget not yet credited by
        decoding steps is added."""
        self.done += len(budgets)
        credit, self.stepped, self.where = sum(budgets) - self.stepped, 0, ""
        self._show()
        self.bar.update(credit)

    def stepped_to(self, rows: int, step: int, steps: int) -> None:
        self.credit(rows, f"token {step}/{steps}")

    def credit(self, budget: int, where: str) -> None:
        """Part of the running batch's budget is done (`where` says how far it is)."""
        self.stepped += budget
        self.where = where
        self._show()
        self.bar.update(budget)

    def reading(self, rows: int, tokens: int) -> None:
        self.where = f"reading {rows} prompts ({tokens} tokens)"
        self._show()
        self.bar.update(0)  # drawn as an update is, so a log is not written to more often


@contextmanager
def showing(generation: GenerationBar) -> Iterator[GenerationBar]:
    """Within the block, `decoding_step` and `reading_prompts` report to `generation` (the bar of the
    generate call running), which `ticking` redraws every second on a terminal."""
    token = _OPEN.set(generation)
    try:
        with ticking(generation.bar):
            yield generation
    finally:
        _OPEN.reset(token)


class EngineRequests:
    """What vLLM's `LLM.generate(use_tqdm=...)` drives as its bar: it calls `update(n)` as each request
    (n samples) finishes, sets `postfix`, reads `format_dict["elapsed"]`. Each finished request moves the
    generate call's bar by its share of the batch's budget (the batch's mean per sample: which request
    finished is not passed), so a batch the engine runs as one call moves per request; the rest of the
    budget is credited when the backend emits the batch."""

    def __init__(self, generation: GenerationBar, budget_each: int, total: int) -> None:
        self.generation, self.budget_each, self.total = generation, budget_each, total
        self.n = 0
        self.postfix: str | None = None  # the engine's token rates, not shown
        self.started = time.monotonic()

    @property
    def format_dict(self) -> dict[str, float]:
        return {"elapsed": max(time.monotonic() - self.started, 1e-9)}

    def update(self, n: int = 1) -> None:
        self.n += n
        self.generation.credit(n * self.budget_each, f"{self.n}/{self.total} samples of the batch")

    def refresh(self) -> None:
        """Redrawn by the generate call's bar itself."""

    def close(self) -> None:
        """Closed by the generate call."""


def engine_requests(samples: int, budget: int) -> Callable[..., Any] | bool:
    """`use_tqdm` for vLLM's `LLM.generate` over a batch of `samples` samples whose budgets sum to
    `budget`: requests reported to the open generate bar, or False (no bar of vLLM's own) when none is
    shown. vLLM also wraps its rendering of the prompts (an iterable) in it: that passes through as is."""
    generation = _OPEN.get()
    if generation is None or not generation.shown or samples == 0:
        return False
    shown = generation

    def made(iterable: Iterable[Any] | None = None, **_: Any) -> Any:
        return iterable if iterable is not None else EngineRequests(shown, budget // samples, samples)

    return made


def reading_prompts(rows: int, tokens: int) -> None:
    """A backend that runs a batch as one whole reports the forward pass that reads its prompts (`rows`
    prompts, `tokens` in all, padding included): on a loaded CPU one pass over long prompts takes tens of
    seconds before the first token, and the bar says what it waits for."""
    generation = _OPEN.get()
    if generation is not None and generation.shown:
        generation.reading(rows, tokens)


def decoding_step(rows: int, step: int, steps: int) -> None:
    """A backend that runs a batch as one whole reports each decoding step of its `rows` rows here: a batch
    of 32 prompts on two CPU cores takes minutes, and a bar of finished prompts would sit still for all of
    them; each step moves the bar by one token of every row."""
    generation = _OPEN.get()
    if generation is not None and generation.shown:
        generation.stepped_to(rows, step, steps)


# read by tqdm (every bar's default `disable`) and huggingface_hub (also transformers' bars) at import
QUIET_ENV = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def quiet_library_progress() -> None:
    """Silence other libraries' progress bars in this process (and the processes it starts).

    The environment works for libraries imported later; those already imported are told directly.
    tqdm reads its variable only when first imported, so a bar made with plain `tqdm` by a library
    (transformers' GGUF conversion) stays visible when tqdm was imported before this call.
    """
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)
    if "huggingface_hub" in sys.modules:
        from huggingface_hub import utils as hub_utils

        # exported by huggingface_hub.utils, though not declared re-exported
        hub_utils.disable_progress_bars()  # type: ignore[attr-defined]
    if "transformers" in sys.modules:
        from transformers.utils import logging

        logging.disable_progress_bar()
