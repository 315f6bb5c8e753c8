"""The context-length guard of the in-process backends: a prompt longer than the model takes is cut or
refused, never run as is (a 24,000-token question grew the transformers backend past 10 GB in under a
minute) and never silently (cut samples are counted in `GenerationStats.truncated` and warned about).

What a cut keeps: the first half of the token budget from the prompt's start and the second half from
its end. A chat prompt starts with the template's opening, the system turn and the instructions or
few-shot examples, and ends with the question's last words and the marker where the reply begins; a model
shown only the start has no turn to answer, one shown only the end has lost its instructions. A
question that alone overflows the window loses its middle, which keeps how it starts and what it asks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from a2c.common.errors import A2CError
from a2c.llm.base import GenerationRequest

ContextPolicy = Literal["truncate", "refuse"]

# a tokenizer without a known limit reports a huge sentinel (int(1e30)) as its `model_max_length`
_NO_TOKENIZER_LIMIT = 1_000_000


class ContextLengthError(A2CError):
    """A prompt that does not fit the model's context under `context_policy: refuse`, or a reply budget
    (`max_tokens`) that leaves no room for any prompt."""


class ContextLengthWarning(UserWarning):
    """Prompts were cut to fit the model's context; the samples are counted in `GenerationStats.truncated`."""


def model_context(model_config: Any, tokenizer: Any, cap: int) -> int:
    """Tokens a transformers model attends to at once: the smallest of `cap` (`max_model_len`), its
    position table and its tokenizer's limit (T5 has relative positions, no table; its tokenizer says 512)."""
    limits = [cap]
    positions = getattr(model_config, "max_position_embeddings", None)
    if positions:
        limits.append(int(positions))
    if tokenizer.model_max_length < _NO_TOKENIZER_LIMIT:
        limits.append(int(tokenizer.model_max_length))
    return min(limits)


def _describe(request: GenerationRequest) -> str:
    """The request as a user recognises it: the start of its raw prompt or of its last chat turn."""
    text = request.prompt if request.prompt is not None else (request.messages or ())[-1].content
    return repr(text[:80] + ("..." if len(text) > 80 else ""))


@dataclass(frozen=True)
class ContextGuard:
    model: str
    limit: int  # tokens the model attends to at once
    policy: ContextPolicy
    # a decoder-only model's reply shares the window with its prompt; an encoder-decoder reads the prompt
    # in its encoder, and the reply has the decoder to itself
    reply_in_context: bool

    @property
    def truncates_to(self) -> int | None:
        """The limit prompts are cut to, or None when they are refused instead."""
        return self.limit if self.policy == "truncate" else None

    def fit(self, ids: list[int], request: GenerationRequest) -> list[int]:
        """The prompt's token ids as the model will read them: unchanged when they fit, else cut in the
        middle (`truncate`) or refused with an error naming the request (`refuse`)."""
        reply = request.max_tokens if self.reply_in_context else 0
        budget = self.limit - reply
        if len(ids) <= budget:
            return ids
        if budget < 1:
            raise ContextLengthError(
                f"max_tokens={request.max_tokens} fills the whole context of {self.model} ({self.limit} "
                f"tokens), leaving no room for the prompt {_describe(request)}",
                hint="lower max_tokens, or raise max_model_len up to the model's own context")
        if self.policy == "refuse":
            room = f"{budget}" + (f" ({self.limit} less max_tokens={reply} for the reply)" if reply else "")
            raise ContextLengthError(
                f"the prompt {_describe(request)} has {len(ids)} tokens; {self.model} reads at most {room} "
                "(context_policy: refuse)",
                hint="`context_policy: truncate` cuts the middle of such prompts; or raise max_model_len up "
                     "to the model's own context")
        head = budget // 2
        return ids[:head] + ids[len(ids) - (budget - head):]
