"""`scripted`: a deterministic stand-in model for fast tests of stage logic (no weights, no server).

Every reply is a pure function of the request, as with inspect_ai's `mockllm`, so tests of what stages do
with replies (sets before/after A2C, accurate masks, counts, resume, reuse) run in milliseconds and can
predict each reply. The model name is the script: `scripted` replies with one of "1", "2", "3";
`scripted:Yes|No` with one of "Yes", "No". A greedy request's reply depends on its prompt alone; a
sampled one's also on its seed and temperature, so samples differ the way real ones do.

Asked for log-probabilities, `scripted` puts all the mass on its reply (a fully confident model), one
"token" long;
`scripted-spread:…` spreads it over every scripted reply (`spread_logprobs`), so code that weighs label
probabilities against each other (contextual calibration) has something to weigh.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

from a2c.llm.base import Completion, GenerationRequest
from a2c.llm.config import ScriptedConfig
from a2c.llm.render import flatten
from a2c.llm.sampling import Emit, SampleResult

DEFAULT_SCRIPT = ("1", "2", "3")


def script_replies(model: str) -> tuple[str, ...]:
    """The replies a scripted model name stands for: `scripted` or `scripted:A|B|...`."""
    _, _, listed = model.partition(":")
    replies = tuple(r for r in listed.split("|") if r) if listed else DEFAULT_SCRIPT
    return replies or DEFAULT_SCRIPT


def scripted_reply(request: GenerationRequest, replies: Sequence[str]) -> str:
    """The reply to one request: picked by a hash of its prompt (and, when sampling, seed and temperature),
    then cut at its first stop string."""
    prompt = request.prompt if request.prompt is not None else flatten(request.messages or ())
    sampled = (request.seed, request.temperature, request.top_p) if request.temperature > 0 else None
    digest = hashlib.sha256(repr((prompt, sampled)).encode()).digest()
    text = replies[int.from_bytes(digest[:4], "big") % len(replies)]
    cuts = [text.find(s) for s in request.stop if s in text]
    return text[:min(cuts)] if cuts else text


def spread_logprobs(request: GenerationRequest, reply: str, replies: Sequence[str]) -> dict[str, float]:
    """First-position log-probabilities of `scripted-spread`: the reply has weight 2 and every other scripted
    reply a weight in (0, 1] from a hash of the prompt, normalised. The reply is always the most probable;
    how much the others get varies from prompt to prompt, as with a real model."""
    prompt = request.prompt if request.prompt is not None else flatten(request.messages or ())
    digest = hashlib.sha256(repr(("spread", prompt)).encode()).digest()
    weights = {text: (1 + digest[k % len(digest)]) / 256 for k, text in enumerate(replies) if text != reply}
    weights[reply] = 2.0
    total = sum(weights.values())
    return {text: math.log(w / total) for text, w in weights.items()}


class ScriptedBackend:
    backend = "scripted"
    truncates_to: int | None = None  # no context to overflow
    keep_going = False  # a batch runs as one whole: it fails as one
    sampler: str | None = None

    def __init__(self, model: str) -> None:
        self.model = model
        self.replies = script_replies(model)
        self.spread = model.partition(":")[0] == "scripted-spread"

    @classmethod
    def from_config(cls, config: ScriptedConfig) -> ScriptedBackend:
        return cls(config.model)

    def draw_identity(self) -> None:
        return None  # a pure function of the request

    def served_model(self) -> None:
        return None  # the script is the name

    def run(self, jobs: Sequence[GenerationRequest], emit: Emit) -> None:
        done = []
        for j, job in enumerate(jobs):
            text = scripted_reply(job, self.replies)
            prompt = job.prompt if job.prompt is not None else flatten(job.messages or ())
            done.append((j, SampleResult(self.completion(job, text), len(prompt.split()))))
        emit(done)

    def completion(self, job: GenerationRequest, text: str) -> Completion:
        """The reply as one "token" carrying all the mass (or, spread, the most): its log-probability is
        the one its top-k gives it, so the two never disagree; k = 0 gives the chosen token alone."""
        if job.logprobs is None or not text:
            return Completion(text, "stop", 1)
        top = spread_logprobs(job, text, self.replies) if self.spread else {text: 0.0}
        return Completion(text, "stop", 1, [top] if job.logprobs > 0 else None,
                          token_logprobs=[top[text]], tokens=[text])
