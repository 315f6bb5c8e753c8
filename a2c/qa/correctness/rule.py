"""What a correctness rule is, the registry of them, and scoring many answers under one.

A rule turns (answer, references) into a score, and the score into a label by a threshold: `score >
threshold` for a strict rule, `score >= threshold` otherwise. A rule that asks a model (`llm`) also reads
each answer's question and may get no score for an answer (an unparsed reply): its score is NaN and its
label unknown, counted in `Correctness.unparsed`, never taken as incorrect. This module imports no numpy
and no rule, so a config check lists the names without loading one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from a2c.common.components import one_line, validate_options
from a2c.common.errors import A2CError
from a2c.common.registry import Registry

if TYPE_CHECKING:
    import numpy as np


class CorrectnessError(A2CError, ValueError):
    """A correctness call that cannot be scored: a bad option, mismatched inputs, missing references."""


class References(Protocol):
    """What a rule reads of an answer's question: gold aliases (`correct`) and, for TruthfulQA's protocol,
    false references (`incorrect`). `a2c.qa.data.QARecord` is one; so is `GoldAnswers`."""

    @property
    def correct(self) -> tuple[str, ...]: ...

    @property
    def incorrect(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class GoldAnswers:
    """Gold aliases of one question and, where the set has them, its false references and the question's
    text (which a grader rule reads). Hashable, so answers sharing one question's references are
    grouped."""

    correct: tuple[str, ...]
    incorrect: tuple[str, ...] = ()
    question: str = ""

    def __post_init__(self) -> None:
        for side in ("correct", "incorrect"):
            refs = getattr(self, side)
            if isinstance(refs, str) or not all(isinstance(r, str) for r in refs):
                raise TypeError(f"GoldAnswers.{side} must be a sequence of str, got {refs!r}")
            object.__setattr__(self, side, tuple(refs))
        if not isinstance(self.question, str):
            raise TypeError(f"GoldAnswers.question must be a str, got {self.question!r}")


class RuleOptions(BaseModel):
    """Every rule takes a threshold; strict, so a YAML string is not read as a number."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    threshold: float = Field(description="the score a correct answer must reach (the rule's default)")


# (answers, their references, the rule's options) → one score per answer
Scorer = Callable[[Sequence[str], Sequence[References], Any], "np.ndarray"]


@dataclass(frozen=True)
class CorrectnessRule:
    """One rule: its score, its options (the threshold's default among them) and what it needs.

    `strict`: the label is `score > threshold` (else `>=`). `needs_incorrect`: every answer's references
    must include false ones (TruthfulQA's protocol compares with them; the gold-answer rules do not).
    `uses_question`: the references must carry the question's text (`question`), which the rule reads.
    `takes_run_generator`: the rule asks a model, given as its `generator` option; a run passes its own
    generator when the option is unset."""

    score: Scorer
    options: type[RuleOptions]
    label: str  # what a report calls the rule's score
    strict: bool
    needs_incorrect: bool = False
    uses_question: bool = False
    takes_run_generator: bool = False
    column: str = ""  # its accuracy column in reports (`F1-A`, as R1-A for ROUGE-1); "": the name

    @property
    def default_threshold(self) -> float:
        default: float = self.options.model_fields["threshold"].default
        return default


CORRECTNESS_RULES: Registry[CorrectnessRule] = Registry("correctness rule", base=CorrectnessRule,
                                                       group="a2c.correctness")
for _name in ("truthfulqa", "exact_match", "token_f1", "rouge_l"):
    CORRECTNESS_RULES.register_lazy(_name, f"a2c.qa.correctness.rules:{_name.upper()}")
CORRECTNESS_RULES.register_lazy("llm", "a2c.qa.correctness.grader:LLM_GRADER")


@dataclass(frozen=True)
class Correctness:
    """Scores and labels of many answers under one rule (entry i: answer i), with what decided them.

    A NaN score (a grader's unparsed reply) has no label: `correct` is False there and `graded` False, so
    `labels` (1, 0 or NaN) is what a caller reads when it must not count those answers as incorrect."""

    rule: str
    threshold: float
    strict: bool
    scores: np.ndarray  # float64
    correct: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def graded(self) -> np.ndarray:
        """Whether each answer got a score (False: the rule's model gave no readable reply)."""
        import numpy as np

        graded: np.ndarray = ~np.isnan(self.scores)
        return graded

    @property
    def unparsed(self) -> int:
        """How many answers got no score."""
        return int((~self.graded).sum())

    @property
    def labels(self) -> np.ndarray:
        """1.0 correct, 0.0 incorrect, NaN ungraded (float64)."""
        import numpy as np

        labels: np.ndarray = np.where(self.graded, self.correct.astype(np.float64), np.nan)
        return labels


def rule_options(rule: str, options: Mapping[str, Any]) -> RuleOptions:
    """A rule's options checked by its model, every problem as one `CorrectnessError` line.

    Args:
        rule: a registered rule name (`UnknownNameError`, with the closest names, otherwise).
        options: the options given; the unset ones take the rule's defaults.

    Returns:
        The validated options.
    """
    try:
        return cast(RuleOptions, validate_options(CORRECTNESS_RULES.get(rule).options, options,
                                                  "correctness rule"))
    except ValidationError as exc:
        raise CorrectnessError(one_line("correctness rule", rule, exc)) from None


def _references(pairs: Sequence[tuple[str, References | Sequence[str]]], rule: str, entry: CorrectnessRule
                ) -> tuple[list[str], list[References]]:
    """Answers and references of the pairs, a bare list of aliases read as `GoldAnswers` of them."""
    answers: list[str] = []
    refs: list[References] = []
    for k, pair in enumerate(pairs):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise CorrectnessError(f"{rule}: pair {k} is not an (answer, references) tuple")
        answer, given = pair
        if not isinstance(answer, str):
            raise CorrectnessError(f"{rule}: pair {k}: the answer is a {type(answer).__name__}, not a str")
        if isinstance(given, str):
            raise CorrectnessError(f"{rule}: pair {k}: the references are one str; give a list of aliases")
        ref = cast(References, given) if hasattr(given, "correct") else GoldAnswers(tuple(given))
        if not ref.correct:
            raise CorrectnessError(f"{rule}: pair {k} has no gold answer; correctness is undefined for it")
        if entry.needs_incorrect and not ref.incorrect:
            raise CorrectnessError(f"{rule}: pair {k} has no incorrect reference; this rule compares the "
                                   "best correct with the best incorrect one (a gold-only set takes "
                                   "exact_match, token_f1 or rouge_l)")
        if entry.uses_question and not getattr(ref, "question", ""):
            raise CorrectnessError(f"{rule}: pair {k} has no question text; this rule reads the question "
                                   "(give GoldAnswers(..., question=...) or a QARecord)")
        answers.append(answer)
        refs.append(ref)
    return answers, refs


def score_correctness(rule: str, pairs: Sequence[tuple[str, References | Sequence[str]]], **options: Any
                      ) -> Correctness:
    """Score and label many answers under a registered rule.

    Args:
        rule: `truthfulqa`, `exact_match`, `token_f1`, `rouge_l`, `llm` or a plug-in's name.
        pairs: (answer, references) per answer; the references a list of gold aliases, a `GoldAnswers`
            or a `QARecord` (TruthfulQA's rule needs the false references of the last two, `llm` their
            question).
        **options: the rule's options, e.g. `threshold=0.6`, `similarity="bleu"` for `truthfulqa`, or
            `generator=...` (a `Generator` or a generator config) for `llm`.

    Returns:
        The scores (float64; NaN where a grader's reply was unreadable) and labels (bool) of the answers,
        in order, with the threshold used.
    """
    import numpy as np

    entry = CORRECTNESS_RULES.get(rule)
    settings = rule_options(rule, options)
    answers, refs = _references(pairs, rule, entry)
    scores = np.asarray(entry.score(answers, refs, settings), dtype=np.float64) if answers \
        else np.zeros(0, dtype=np.float64)
    if scores.shape != (len(answers),):
        raise CorrectnessError(f"{rule}: {scores.shape} scores for {len(answers)} answers")
    correct = scores > settings.threshold if entry.strict else scores >= settings.threshold
    return Correctness(rule, settings.threshold, entry.strict, scores, correct)
