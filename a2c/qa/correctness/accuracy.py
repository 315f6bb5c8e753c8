"""A run's accuracy columns under its correctness rule (`accuracy.rule`), in the shape the stages store.

A run keeps, per accuracy column and answer, `(max_true, diff, acc)` (`a2c.qa.scoring.ScoreColumns`). Under
`truthfulqa` the columns are the run's accuracy similarities, scored by the benchmark's protocol as before,
and `acc` is `diff > threshold` (the protocol's `max_true > max_false` at the default 0). Under a gold-answer
rule there is one column, named by the rule: `max_true` is the rule's score (the best over the gold
aliases, or a grader's P(correct)), `diff` its margin over the threshold and `acc` the rule's label; an
answer a grader left ungraded (an unparsed reply) has NaN in all three.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from a2c.qa.correctness.rule import CORRECTNESS_RULES, CorrectnessError, score_correctness
from a2c.qa.data import QARecord
from a2c.qa.scoring import ScoreColumns, score_columns, similarity_label

if TYPE_CHECKING:
    from a2c.llm.base import Generator

TRUTHFULQA = "truthfulqa"


def column_names(rule: str, similarities: Sequence[str]) -> list[str]:
    """The accuracy columns a run under `rule` keeps: its similarities under TruthfulQA's protocol, else the
    rule's own name.

    Args:
        rule: the run's correctness rule.
        similarities: the run's accuracy similarities (used by `truthfulqa` only).

    Returns:
        The column names, in the order the run lists them.
    """
    return list(similarities) if rule == TRUTHFULQA else [rule]


def check_references(rule: str, records: Iterable[QARecord]) -> None:
    """Refuse questions the rule cannot score: gold answers without incorrect references under a rule that
    compares with them (questions without any reference are left out of accuracy, as always).

    Args:
        rule: the run's correctness rule.
        records: the run's questions.

    Raises:
        CorrectnessError: the first question with gold answers but no incorrect reference, when the rule
            needs incorrect references.
    """
    if not CORRECTNESS_RULES.get(rule).needs_incorrect:
        return
    lacking = next((r.id for r in records if r.correct and not r.incorrect), None)
    if lacking is not None:
        raise CorrectnessError(
            f"question {lacking!r} has gold answers but no incorrect references, and accuracy.rule {rule!r} "
            "compares the best correct with the best incorrect one",
            hint="score a gold-answer set with accuracy.rule: token_f1 (or exact_match, rouge_l)")


def accuracy_label(name: str) -> str:
    """The report's name of an accuracy column: a similarity's label under TruthfulQA's protocol (`R1-A`
    for `rouge1`), or a gold-answer rule's own (`F1-A` for `token_f1`); the name itself if neither knows it.

    Args:
        name: the column's name, as `column_names` gives it.

    Returns:
        Its label.
    """
    if name in CORRECTNESS_RULES and name != TRUTHFULQA:
        return CORRECTNESS_RULES.get(name).column or name
    return similarity_label(name)


def uses_run_generator(rule: str, rule_options: Mapping[str, Any]) -> bool:
    """Whether a rule asks the run's own generator (one that asks a model, its `generator` unset).

    Args:
        rule: the correctness rule's name.
        rule_options: its options.

    Returns:
        True when the run's generator grades the answers.
    """
    return CORRECTNESS_RULES.get(rule).takes_run_generator and rule_options.get("generator") is None


def accuracy_columns(rule: str, rule_options: Mapping[str, Any],
                     similarities: Sequence[tuple[str, Mapping[str, Any]]], answers: Sequence[str],
                     records: Sequence[QARecord], run_generator: Callable[[], Generator] | None = None
                     ) -> dict[str, ScoreColumns]:
    """`(max_true, diff, acc)` of `answers[i]` against `records[i]` per accuracy column of the rule.

    Args:
        rule: the correctness rule (`accuracy.rule`'s name).
        rule_options: its options (`threshold`, ...).
        similarities: (name, options) of the run's accuracy similarities; read by `truthfulqa` only.
        answers: the answers, one per record.
        records: each answer's question; every one with gold answers.
        run_generator: the run's generator, asked for only by a rule that grades with it (its
            `generator` option unset); None: such a rule uses its own default (the embedded model).

    Returns:
        One `ScoreColumns` per column name of `column_names(rule, ...)`.
    """
    if rule == TRUTHFULQA:
        threshold = float(rule_options.get("threshold", 0.0))
        columns = score_columns(similarities, answers, records)
        if threshold == 0.0:  # the protocol's own acc, untouched
            return columns
        return {name: ScoreColumns(c.max_true, c.diff, (c.diff > threshold).astype(np.float64))
                for name, c in columns.items()}
    if len(answers) != len(records):
        raise CorrectnessError(f"{rule}: {len(records)} records for {len(answers)} answers")
    options = dict(rule_options)
    if run_generator is not None and uses_run_generator(rule, options):
        options["generator"] = run_generator()
    found = score_correctness(rule, list(zip(answers, records, strict=True)), **options)
    margin = found.scores - found.threshold
    return {rule: ScoreColumns(found.scores, margin, found.labels)}
