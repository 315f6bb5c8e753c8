"""An a2c `Generator` over inspect's own model API, so A2C's variation and rank prompts go through the
model `inspect eval --model` names (its provider, limits, retries, usage accounting and log).

A2C's stages are synchronous; the solver runs them in a worker thread and each `generate` call hops back
onto inspect's event loop, where every sample of the call is sent at once (inspect's connection limit
decides how many are in flight).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio
import anyio.from_thread
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
)

from a2c.llm import logprobs as token_logprobs
from a2c.llm.base import Completion, Generation, GenerationRequest, GenerationStats, Message
from a2c.llm.sampling import sample_seed

_MESSAGE = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
# inspect's stop reasons in OpenAI's finish_reason words (the ones a2c's stages read)
_FINISH = {"stop": "stop", "max_tokens": "length", "model_length": "length"}


def chat_messages(request: GenerationRequest) -> list[ChatMessage]:
    """The request as inspect chat messages; a raw completion prompt is one user turn (inspect's model API
    is chat-only)."""
    turns = request.messages or (Message("user", request.prompt or ""),)
    return [_MESSAGE[m.role](content=m.content) for m in turns]


def generate_config(request: GenerationRequest, sample: int) -> GenerateConfig:
    return GenerateConfig(temperature=request.temperature, top_p=request.top_p, max_tokens=request.max_tokens,
                          stop_seqs=list(request.stop) or None, seed=sample_seed(request.seed, sample),
                          logprobs=True if request.logprobs is not None else None,
                          top_logprobs=request.logprobs)


def completion_of(output: ModelOutput, k: int | None = None) -> Completion:
    """A model's output as a `Completion`; `k` = 0 (the chosen tokens only) leaves the top-k out."""
    logprobs = None
    tokens: list[str] | None = None
    chosen: list[float] | None = None
    found = output.choices[0].logprobs if output.choices else None
    if found is not None:
        logprobs = [{t.token: t.logprob for t in (lp.top_logprobs or [])} or {lp.token: lp.logprob}
                    for lp in found.content]
        chosen = token_logprobs.chosen([lp.logprob for lp in found.content])
        tokens = token_logprobs.texts([lp.token for lp in found.content], len(found.content))
        if chosen is None:
            tokens = None
        if k == 0:
            logprobs = None
    finish = _FINISH.get(output.stop_reason, output.stop_reason)
    return Completion(text=output.completion, finish_reason=finish,
                      completion_tokens=output.usage.output_tokens if output.usage else 0, logprobs=logprobs,
                      token_logprobs=chosen, tokens=tokens)


@dataclass
class InspectGenerator:
    """A `Generator` bound to one inspect `Model`; call `generate` from a worker thread that anyio started
    (`anyio.to_thread.run_sync`), never from the event loop itself."""

    target: Model
    stats: GenerationStats = field(default_factory=GenerationStats)

    @property
    def backend(self) -> str:
        return "inspect"

    @property
    def model(self) -> str:
        return str(self.target)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        outputs = anyio.from_thread.run(self._generate_all, list(requests))
        out = []
        for request, samples in zip(requests, outputs, strict=True):
            completions = [completion_of(o, request.logprobs) for o in samples]
            prompt_tokens = samples[0].usage.input_tokens if samples[0].usage else 0
            self.stats.generated += len(completions)
            self.stats.prompt_tokens += prompt_tokens * len(completions)
            self.stats.completion_tokens += sum(c.completion_tokens for c in completions)
            out.append(Generation(request, completions, prompt_tokens, [False] * len(completions)))
        return out

    async def _generate_all(self, requests: list[GenerationRequest]) -> list[list[ModelOutput]]:
        results: list[list[ModelOutput | None]] = [[None] * r.n for r in requests]

        async def one(i: int, k: int) -> None:
            request = requests[i]
            results[i][k] = await self.target.generate(chat_messages(request),
                                                       config=generate_config(request, k))

        async with anyio.create_task_group() as group:
            for i, request in enumerate(requests):
                for k in range(request.n):
                    group.start_soon(one, i, k)
        return [[o for o in row if o is not None] for row in results]
