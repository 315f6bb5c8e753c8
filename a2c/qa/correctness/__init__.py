"""Correctness rules: when an answer counts as correct, chosen by name.

`truthfulqa` is the benchmark's own protocol (SPEC §4: the best correct reference beats the best incorrect
one); `exact_match`, `token_f1` and `rouge_l` score against gold aliases alone (SPEC §12), for sets such as
TriviaQA, Natural Questions and SQuAD that give no false references. `score_correctness(rule, pairs)` scores
many (answer, references) pairs at once and labels them by the rule's threshold; plug-ins add rules through
the entry-point group `a2c.correctness`.
"""

from __future__ import annotations

from a2c.qa.correctness.rule import (
    CORRECTNESS_RULES,
    Correctness,
    CorrectnessError,
    CorrectnessRule,
    GoldAnswers,
    References,
    RuleOptions,
    rule_options,
    score_correctness,
)

__all__ = ["CORRECTNESS_RULES", "Correctness", "CorrectnessError", "CorrectnessRule", "GoldAnswers",
           "References", "RuleOptions", "rule_options", "score_correctness"]
