"""`llm`: a few-shot same-answer prompt to any `Generator` (paper: Flan-T5-XL as the auxiliary LLM, which
runs in-process on the `transformers` backend as a seq2seq model; vLLM serves no encoder-decoder models).

The score is P(Yes) / (P(Yes) + P(No)) at the first answer token (a seq2seq model's first decoder step)
when the backend returns log-probabilities, otherwise 1 for a parsed "Yes" and 0 for "No". All prompts of
the dataset go to the generator in one `generate` call, so the backend batches them. The prompt asks a
symmetric question, so by default each unordered pair is asked once (in a canonical order);
`directional: true` asks both orders.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
from pydantic import Discriminator, Field, Tag, field_validator

from a2c.judges.base import JudgeOptions, Pair, PairwiseJudge
from a2c.llm.base import Completion, GenerationRequest, Generator
from a2c.llm.config import AnyGeneratorConfig, GeneratorConfig
from a2c.prompting.prompts import load_template
from a2c.system.cache import make_key

_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


class UnparsedReplyWarning(UserWarning):
    """Replies with neither Yes nor No (scored 0, counted)."""


def yes_probability(completion: Completion) -> float | None:
    """P(Yes) from the first generated position that offers Yes or No, else the first Yes/No word.

    Token texts count stripped and case-folded, so BPE's " Yes" and SentencePiece's "▁Yes" (which the
    transformers backend decodes to "Yes") are both Yes."""
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


def _generator_branch(value: Any) -> str:
    return "Generator" if isinstance(value, Generator) else "GeneratorConfig"


# GeneratorConfig fields (what YAML can say; None = the run's generator) or a built `Generator` (Python
# callers); the branch is picked up front so a bad mapping gets only GeneratorConfig's errors
GeneratorOption = Annotated[
    Annotated[AnyGeneratorConfig | None, Tag("GeneratorConfig")] | Annotated[Generator, Tag("Generator")],
    Discriminator(_generator_branch)]


class LLMJudge(PairwiseJudge):
    """Asks a generator whether two answers to the question say the same thing."""

    name = "llm"
    label = "LLM"
    takes_run_generator = True
    preferred_for_clusters = True
    uses_question = True

    class Options(JudgeOptions):
        generator: GeneratorOption = Field(None, description="who answers the prompt (default: the run's "
                                                             "generator, else the embedded SmolLM2)")
        template: str = Field("same_answer", description="prompt template: shipped name or YAML path")
        directional: bool = Field(False, description="ask both orders of each pair")
        logprobs: int = Field(5, ge=0, description="top log-probabilities per position (0: read the words)")
        max_tokens: int = Field(3, ge=1, description="reply budget in tokens")

        @field_validator("template")
        @classmethod
        def _loadable(cls, template: str) -> str:
            load_template(template)  # a missing or malformed template is a ValueError at load
            return template

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        generator = options.generator
        if isinstance(generator, GeneratorConfig):
            from a2c.llm import build_generator

            generator = build_generator(generator)
        self._generator = generator
        self.template = load_template(options.template)
        self.directional = options.directional
        self.logprobs = options.logprobs
        self.max_tokens = options.max_tokens
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
