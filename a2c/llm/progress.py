"""Feedback while generating: a bar of prompts done / total per `generate` call, moved per finished batch.

A stage's chunk of questions can take minutes, so a bar per chunk sits still; every backend reports each
finished batch through `emit`, which is where this bar moves, and a backend that runs a batch as one whole
(transformers) reports each decoding step through `decoding_step`, so the bar moves inside a batch too.
Bars are off unless a caller opts in with `generation_progress` (a stage runner, the probe command), so
library use stays silent.

Other libraries' bars (GGUF conversion, weight loading, downloads) say nothing a user can act on and
repeat on every command; `quiet_library_progress` silences them (the CLI calls it unless `--debug`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm import tqdm


@dataclass(frozen=True)
class _Bars:
    desc: str
    enabled: bool


_BARS: ContextVar[_Bars | None] = ContextVar("a2c_generation_bars", default=None)
_OPEN: ContextVar[tqdm[Any] | None] = ContextVar("a2c_open_generation_bar", default=None)


@contextmanager
def generation_progress(desc: str, enabled: bool = True) -> Iterator[None]:
    """Within the block, every `generate` call shows a bar labelled `desc` (none when not `enabled`); an
    inner block's label and switch win."""
    token = _BARS.set(_Bars(desc, enabled))
    try:
        yield
    finally:
        _BARS.reset(token)


def generation_bar(total: int, done: int) -> tqdm[Any]:
    """The bar of one `generate` call: `total` samples, `done` of them already served by the cache.
    Disabled outside `generation_progress`. Passing `disable` explicitly keeps it independent of the
    `TQDM_DISABLE` default that silences other libraries' bars."""
    from tqdm import tqdm  # not at import: `quiet_library_progress` must run before tqdm's first import

    bars = _BARS.get()
    return tqdm(total=total, initial=done, desc=bars.desc if bars else "", unit="prompt",
                leave=False, disable=bars is None or not bars.enabled or total == 0, dynamic_ncols=True)


@contextmanager
def showing(bar: tqdm[Any]) -> Iterator[tqdm[Any]]:
    """Within the block, `decoding_step` reports to `bar` (the bar of the generate call running)."""
    token = _OPEN.set(bar)
    try:
        with bar:
            yield bar
    finally:
        _OPEN.reset(token)


def decoding_step(step: int, steps: int) -> None:
    """A backend that runs a batch as one whole reports each decoding step here: a batch of 32 prompts on two
    CPU cores takes minutes, and the bar, which counts finished prompts, would sit still for all of them;
    the step it shows redraws it (and its elapsed time) every step."""
    bar = _OPEN.get()
    if bar is not None and not bar.disable:
        bar.set_postfix_str(f"batch token {step}/{steps}")


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
