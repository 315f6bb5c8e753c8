"""`llm`: a generator grades each answer against the question's gold answers (our prompt `grade_answer`).

The score is P(Yes) / (P(Yes) + P(No)) at the first reply position that offers either, when the backend
returns log-probabilities, else 1 for a parsed "Yes" and 0 for "No" (the `llm` judge's reading,
`a2c.judges.llm.yes_probability`); correct when above the threshold (0.5). A reply with neither word has
no score (NaN): it is counted and warned about, and its answer is left ungraded rather than called
incorrect. Every distinct (question, gold answers, answer) is asked once, all in one `generate` call, so
the backend batches them and the generator's request cache answers a rerun without a model call.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from pydantic import ConfigDict, Field, field_validator

from a2c.judges.llm import GeneratorOption, yes_probability
from a2c.llm.base import GenerationRequest, Generator
from a2c.llm.config import GeneratorConfig
from a2c.prompting.prompts import load_template
from a2c.qa.correctness.rule import CorrectnessRule, References, RuleOptions


class UngradedAnswerWarning(UserWarning):
    """Grader replies with neither Yes nor No: those answers have no label (counted)."""


class GraderOptions(RuleOptions):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    threshold: float = Field(0.5, description="P(correct) above it is correct")
    generator: GeneratorOption = Field(None, description="who grades (default: the run's generator, else "
                                                         "the embedded SmolLM2)")
    template: str = Field("grade_answer", min_length=1,
                          description="prompt template: shipped name or YAML path (fields question, gold, "
                                      "answer)")
    logprobs: int = Field(5, ge=0, description="top log-probabilities per position (0: read the words)")
    max_tokens: int = Field(3, ge=1, description="reply budget in tokens")

    @field_validator("template")
    @classmethod
    def _loadable(cls, template: str) -> str:
        fields = set(load_template(template).fields)  # a missing or malformed template fails here
        if fields != {"question", "gold", "answer"}:
            raise ValueError(f"template {template!r} takes fields {sorted(fields)}; a grader template takes "
                             "['answer', 'gold', 'question']")
        return template


def grader_generator(options: GraderOptions) -> Generator:
    """The generator the options name, built (with its request cache) from a config when given one, else
    the embedded default model."""
    from a2c.llm import build_generator

    if isinstance(options.generator, GeneratorConfig):
        return build_generator(options.generator)
    return options.generator if options.generator is not None else build_generator()


def gold_text(correct: Sequence[str]) -> str:
    """The gold aliases as the prompt lists them."""
    return "; ".join(correct)


def _grade(answers: Sequence[str], refs: Sequence[References], options: GraderOptions) -> np.ndarray:
    template = load_template(options.template)
    # `score_correctness` has checked that every reference carries its question (`uses_question`)
    keys = [(str(getattr(r, "question", "")), gold_text(r.correct), a)
            for a, r in zip(answers, refs, strict=True)]
    distinct = list(dict.fromkeys(keys))
    requests = [GenerationRequest(messages=template.messages(question=q, gold=g, answer=a), temperature=0.0,
                                  max_tokens=options.max_tokens, logprobs=options.logprobs or None)
                for q, g, a in distinct]
    generations = grader_generator(options).generate(requests) if requests else []
    found = {key: yes_probability(g.completions[0]) for key, g in zip(distinct, generations, strict=True)}
    unparsed = sum(p is None for p in found.values())
    if unparsed:
        warnings.warn(f"{unparsed} of {len(found)} grader replies had neither Yes nor No; those answers are "
                      "left ungraded (NaN), not counted as incorrect", UngradedAnswerWarning, stacklevel=3)
    return np.array([np.nan if (p := found[k]) is None else p for k in keys], dtype=np.float64)


LLM_GRADER = CorrectnessRule(_grade, GraderOptions, "LLM grader P(correct)", strict=True, uses_question=True,
                             takes_run_generator=True, column="LLM-A")
