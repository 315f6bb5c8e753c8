"""What every generation backend accepts and returns.

Stages build a list of requests for the whole dataset and hand it to one `Generator.generate` call,
so backends can batch (transformers), schedule (vLLM) or fan out (HTTP) as they see fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt and its sampling parameters.

    Exactly one of `prompt` (raw completion text) and `messages` (chat turns; the backend applies the
    model's chat template) is set. `n` samples are drawn; sample i of a request is cached under its own
    key, so n samples at temperature t are n cache entries, never one.
    """

    prompt: str | None = None
    messages: tuple[Message, ...] | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 64
    stop: tuple[str, ...] = ()
    seed: int | None = None
    n: int = 1
    # log-probabilities per generated token: None asks for none; k >= 0 asks for the chosen token's
    # (`Completion.token_logprobs`) and, for k >= 1, the k most probable beside it (`Completion.logprobs`)
    logprobs: int | None = None

    def __post_init__(self) -> None:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("a GenerationRequest needs exactly one of prompt= or messages=")
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if self.logprobs is not None and self.logprobs < 0:
            raise ValueError(f"logprobs must be None or >= 0, got {self.logprobs}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not 0.0 < self.top_p <= 1.0:  # False for NaN and inf too
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        # NaN passes a `< 0` check and would reach the cache key and the JSONL records as `NaN`
        if not (math.isfinite(self.temperature) and self.temperature >= 0):
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature}")


@dataclass
class Completion:
    """One sample of a request.

    Asked for log-probabilities (`GenerationRequest.logprobs`), a backend fills `token_logprobs` with
    log p of each generated token and `tokens` with their texts: the white-box signal that sequence
    probability, perplexity and semantic entropy are built on, kept apart from the top-k because a sampled
    token may lie outside it. In-process backends read the model's own distribution (temperature 1, before
    top-p), whatever the request samples with; a server reports its own. `logprobs` holds the top-k per
    position plus the chosen token, for k >= 1 only. Each is None where not asked for or where the backend
    or server did not give it.
    """

    text: str
    finish_reason: str | None = None
    completion_tokens: int = 0
    # per generated token: {token text: log-probability} for the top-k tokens and the chosen one
    logprobs: list[dict[str, float]] | None = None
    token_logprobs: list[float] | None = None  # per generated token: the chosen token's log-probability
    tokens: list[str] | None = None  # per generated token: its text, as the backend decodes it alone


@dataclass
class Generation:
    """All samples of one request, in sample-index order."""

    request: GenerationRequest
    completions: list[Completion]
    prompt_tokens: int = 0
    cached: list[bool] = field(default_factory=list)  # per sample: served from the request cache

    @property
    def text(self) -> str:
        """The first sample's text: the common case of n = 1."""
        return self.completions[0].text


@dataclass
class GenerationStats:
    """Counts since the generator was built: how many samples a model produced vs the cache served, and
    how many of either came from a prompt cut to fit the model's context (`context_policy: truncate`)."""

    generated: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    truncated: int = 0


@runtime_checkable
class Generator(Protocol):
    """A text generator: a backend (`transformers`, `vllm`, `openai`) bound to one model; `stats` counts
    its work so runs can report model calls, cache hits and tokens per stage."""

    @property
    def stats(self) -> GenerationStats: ...

    @property
    def backend(self) -> str: ...

    @property
    def model(self) -> str: ...

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Answer every request, in order; one call per stage, batched by the backend.

        Args:
            requests: the prompts with their sampling settings.

        Returns:
            One generation per request, in the order of `requests`.
        """
        ...


@dataclass
class WrappedGenerator:
    """A `Generator` around another one: it is the inner generator's backend, model and counts, and a
    subclass changes only how `generate` runs (recording calls, leaving out prompts nobody waits for)."""

    inner: Generator

    @property
    def backend(self) -> str:
        return self.inner.backend

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def stats(self) -> GenerationStats:
        return self.inner.stats

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        return self.inner.generate(requests)
