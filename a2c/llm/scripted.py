"""`scripted`: a deterministic stand-in model for fast tests of stage logic (no weights, no server).

Every reply is a pure function of the request, as with inspect_ai's `mockllm`, so tests of what stages do
with replies (sets before/after A2C, accurate masks, counts, resume, reuse) run in milliseconds and can
predict each reply. The model name is the script: `scripted` replies with one of "1", "2", "3";
`scripted:Yes|No` with one of "Yes", "No". A greedy request's reply depends on its prompt alone; a
sampled one's also on its seed and temperature, so samples differ the way real ones do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from a2c.llm.base import Completion, GenerationRequest
from a2c.llm.sampling import Emit, SampleResult
from a2c.prompts import flatten

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


class ScriptedBackend:
    backend = "scripted"
    truncates_to = None  # no context to overflow

    def __init__(self, model: str) -> None:
        self.model = model
        self.replies = script_replies(model)

    def served_model(self) -> None:
        return None  # the script is the name

    def run(self, jobs: Sequence[GenerationRequest], emit: Emit) -> None:
        done = []
        for j, job in enumerate(jobs):
            text = scripted_reply(job, self.replies)
            # one "token" per reply: log-probabilities give the reply all the mass, as a confident model
            logprobs = [{text: 0.0}] if job.logprobs is not None and text else None
            prompt = job.prompt if job.prompt is not None else flatten(job.messages or ())
            done.append((j, SampleResult(Completion(text, "stop", 1, logprobs), len(prompt.split()))))
        emit(done)
