"""`llm`: a few-shot same-answer prompt to any `Generator` (paper: Flan-T5-XL as the auxiliary LLM).

The score is P(Yes) / (P(Yes) + P(No)) at the first answer token when the backend returns
log-probabilities, otherwise 1 for a parsed "Yes" and 0 for "No". All prompts of the dataset go to the
generator in one `generate` call, so the backend batches them. The prompt asks a symmetric question, so by
default each unordered pair is asked once (in a canonical order); `directional: true` asks both orders.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from a2c.cache import DEFAULT_CACHE_PATH, make_key
from a2c.judges.base import JUDGES, CacheOption, JudgeError, Pair, PairwiseJudge
from a2c.llm.base import Completion, GenerationRequest, Generator
from a2c.prompts import load_template

_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


class UnparsedReplyWarning(UserWarning):
    """Replies with neither Yes nor No (scored 0, counted)."""


def yes_probability(completion: Completion) -> float | None:
    """P(Yes) from the first generated position that offers Yes or No, else the first Yes/No word."""
    for top in completion.logprobs or []:
        mass = {"yes": 0.0, "no": 0.0}
        for token, logprob in top.items():
            word = token.strip().casefold()
            if word in mass:
                mass[word] += math.exp(logprob)
        if mass["yes"] + mass["no"] > 0:
            return mass["yes"] / (mass["yes"] + mass["no"])
    match = _WORD.search(completion.text)
    return None if match is None else float(match.group(1).casefold() == "yes")


@JUDGES.register("llm")
class LLMJudge(PairwiseJudge):
    """Asks a generator whether two answers to the question say the same thing."""

    name = "llm"
    uses_question = True

    def __init__(self, *, generator: Generator | None = None, template: str = "same_answer",
                 threshold: float = 0.5, directional: bool = False, logprobs: int = 5, max_tokens: int = 3,
                 cache: CacheOption = DEFAULT_CACHE_PATH) -> None:
        super().__init__(threshold=threshold, cache=cache)
        if max_tokens < 1 or logprobs < 0:
            raise JudgeError("judge 'llm': max_tokens must be >= 1 and logprobs >= 0")
        self._generator = generator
        self.template = load_template(template)
        self.directional = directional
        self.logprobs = logprobs
        self.max_tokens = max_tokens
        self.unparsed = 0

    @property
    def generator(self) -> Generator:
        """The embedded default generator unless one was given (built on first use, once per process)."""
        if self._generator is None:
            from a2c.llm import build_generator

            self._generator = build_generator()
        return self._generator

    def identity(self) -> dict[str, Any]:
        t = self.template
        prompt = make_key(system=t.system, examples=t.examples, user=t.user)
        return {"judge": self.name, "backend": self.generator.backend, "model": self.generator.model,
                "prompt": prompt, "logprobs": self.logprobs, "max_tokens": self.max_tokens}

    def score_pairs(self, pairs: Sequence[Pair]) -> np.ndarray:
        requests = [
            GenerationRequest(messages=self.template.messages(question=p.question, answer_a=p.a,
                                                              answer_b=p.b),
                              temperature=0.0, max_tokens=self.max_tokens, logprobs=self.logprobs or None)
            for p in pairs
        ]
        scores = [yes_probability(g.completions[0]) for g in self.generator.generate(requests)]
        unparsed = sum(s is None for s in scores)
        if unparsed:
            self.unparsed += unparsed
            warnings.warn(f"{unparsed} of {len(scores)} same-answer replies had neither Yes nor No; scored 0",
                          UnparsedReplyWarning, stacklevel=2)
        return np.array([0.0 if s is None else s for s in scores])
