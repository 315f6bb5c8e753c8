"""Which question of a batched pass each model call was made for, so each response reports its own usage.

A batched pass asks the prompts of every question of the batch in one generate call per step, so the
generator's counters only give the batch's totals. `RecordingGenerator` keeps every call's requests and
results; `attribute` gives each call to the question whose text (the question, one of its paraphrases or
the question a rank prompt showed) it holds, the longest such text deciding. Each prompt of the stages
ends with the question it is about (`Original question: ...`, `Question: ...`), so this is exact but for
a question that is a piece of another question of the same batch and prompt. Samples the request cache
served cost no upstream tokens and are counted apart; identical prompts of two questions are asked once
(the generator merges them) and charged to the first.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from a2c.choose import Choice
from a2c.llm.base import Generation, GenerationRequest, WrappedGenerator
from a2c.llm.sampling import RequestsFailed


@dataclass
class Usage:
    """Upstream work: samples a model generated (`model_calls`) and their tokens; cache hits apart."""

    model_calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, generation: Generation) -> None:
        for completion, cached in zip(generation.completions, _cached_flags(generation), strict=True):
            if cached:
                self.cached += 1
                continue
            self.model_calls += 1
            self.prompt_tokens += generation.prompt_tokens
            self.completion_tokens += completion.completion_tokens

    def __iadd__(self, other: Usage) -> Usage:
        self.model_calls += other.model_calls
        self.cached += other.cached
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        return self


def _cached_flags(generation: Generation) -> list[bool]:
    return generation.cached or [False] * len(generation.completions)


@dataclass
class RecordingGenerator(WrappedGenerator):
    """A `Generator` that keeps every call it passes on, and counts calls and samples as they finish."""

    calls: list[list[Generation]] = field(default_factory=list)
    steps: int = 0  # generate calls finished, ever (read by the event loop for a 504's "what was done")
    samples: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        try:
            out = self.inner.generate(requests)
        except RequestsFailed as exc:  # the answered ones were asked too: they count
            self._record([g for r, g in enumerate(exc.generations) if r not in exc.errors])
            raise
        self._record(out)
        return out

    def _record(self, generations: list[Generation]) -> None:
        with self._lock:
            self.calls.append(generations)
            self.steps += 1
            self.samples += sum(len(g.completions) for g in generations)

    def take(self) -> list[list[Generation]]:
        """Every call recorded since the last `take` (its generations), and forget them."""
        with self._lock:
            calls, self.calls = self.calls, []
        return calls


def subject(request: GenerationRequest) -> str:
    """The text a prompt is about: its last user turn (or the raw prompt)."""
    if request.messages is None:
        return request.prompt or ""
    users = [m.content for m in request.messages if m.role == "user"]
    return users[-1] if users else ""


def anchors(choice: Choice) -> set[str]:
    """The texts that mark a prompt as asked for this question."""
    texts = {choice.question, *choice.asked, *(c.shown_question for c in choice.choices)}
    return {t for t in texts if t.strip()}


def _asked_once(calls: Sequence[Sequence[Generation]]) -> list[Generation]:
    """The generations of every call, a request repeated within one call kept once: it was asked once."""
    out = []
    for call in calls:
        seen: set[GenerationRequest] = set()
        for generation in call:
            if generation.request not in seen:
                seen.add(generation.request)
                out.append(generation)
    return out


def attribute(calls: Sequence[Sequence[Generation]], choices: Sequence[Choice]) -> tuple[list[Usage], Usage]:
    """Usage per question, and the batch's total (which also holds calls no question could be found for)."""
    marks = [anchors(c) for c in choices]
    per_question = [Usage() for _ in choices]
    total = Usage()
    for generation in _asked_once(calls):
        total.add(generation)
        about = subject(generation.request)
        best, owner = 0, None
        for i, texts in enumerate(marks):
            length = max((len(t) for t in texts if t in about), default=0)
            if length > best:
                best, owner = length, i
        if owner is not None:
            per_question[owner].add(generation)
    return per_question, total


def mentions(text: str, marks: Sequence[set[str]]) -> list[int]:
    """Every question one of whose texts is in `text`: each a prompt may be about (where `attribute` picks
    one to charge, a failure must reach them all)."""
    return [i for i, texts in enumerate(marks) if any(t in text for t in texts)]
