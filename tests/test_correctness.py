"""Correctness rules (`a2c.qa.correctness`): each rule's score, its threshold, its delegation and its errors.

SQuAD's EM and F1 are checked against the published evaluation in tests/test_correctness_parity.py; here
the rules around them: `truthfulqa` gives the accuracy `a2c.qa.scoring` gives, `rouge_l` the score
rouge-score's own scorer gives, thresholds cut where each rule says, and bad input fails with a message.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from a2c.common.registry import UnknownNameError
from a2c.qa.correctness import (
    CORRECTNESS_RULES,
    CorrectnessError,
    GoldAnswers,
    rule_options,
    score_correctness,
)
from a2c.qa.data import QARecord
from a2c.qa.scoring import score_columns

WORDS = ["the", "a", "Paris", "paris,", "France", "tower", "Eiffel", "1889", "is", "in", "café", "!", "日本",
         "an", "tour", "la", "not", "no", "comment"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 7)))


def test_the_built_in_rules_and_their_default_thresholds():
    assert CORRECTNESS_RULES.names(plugins=False) == ["exact_match", "llm", "rouge_l", "token_f1",
                                                      "truthfulqa"]
    thresholds = {n: (r.default_threshold, r.strict) for n, r in CORRECTNESS_RULES.items(plugins=False)}
    assert thresholds == {"exact_match": (1.0, False), "token_f1": (0.5, False), "rouge_l": (0.3, True),
                          "truthfulqa": (0.0, True), "llm": (0.5, True)}
    assert [n for n, r in CORRECTNESS_RULES.items(plugins=False) if r.needs_incorrect] == ["truthfulqa"]
    assert [n for n, r in CORRECTNESS_RULES.items(plugins=False) if r.takes_run_generator] == ["llm"]


def test_listing_the_rules_loads_no_rule_and_no_numpy():
    import subprocess
    import sys

    code = ("import sys; from a2c.qa.correctness import CORRECTNESS_RULES; CORRECTNESS_RULES.names(); "
            "print(sorted({'numpy', 'a2c.qa.correctness.rules', 'a2c.qa.scoring'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_truthfulqa_is_the_accuracy_scoring_gives():
    rng = random.Random(7)
    records = [QARecord(f"q{k}", f"question {k}", None, tuple(_text(rng) or "x" for _ in range(2)),
                        tuple(_text(rng) or "y" for _ in range(3))) for k in range(20)]
    answers = [_text(rng) for _ in range(200)]
    asked = [records[rng.randrange(len(records))] for _ in answers]
    for similarity, options in [("rouge1", {}), ("rougeL", {"use_stemmer": True}), ("bleu", {})]:
        expected = score_columns([(similarity, options)], answers, asked)[similarity]
        got = score_correctness("truthfulqa", list(zip(answers, asked, strict=True)), similarity=similarity,
                                similarity_options=options)
        assert np.array_equal(got.scores, expected.diff)
        assert np.array_equal(got.correct, expected.acc == 1.0)
        # the same references as GoldAnswers instead of records: the same scores
        golds = [GoldAnswers(r.correct, r.incorrect) for r in asked]
        again = score_correctness("truthfulqa", list(zip(answers, golds, strict=True)), similarity=similarity,
                                  similarity_options=options)
        assert np.array_equal(again.scores, got.scores)


def test_rouge_l_is_rouge_scores_own_best_over_aliases():
    from rouge_score.rouge_scorer import RougeScorer

    scorer = RougeScorer(["rougeL"], use_stemmer=False)
    rng = random.Random(3)
    pairs = [(_text(rng), [_text(rng) for _ in range(rng.randint(1, 4))]) for _ in range(300)]
    pairs += [("yes\nno", ["yes no"]), ("", [""]), ("Running runs", ["run running"])]
    got = score_correctness("rouge_l", pairs)
    expected = [max(scorer.score(alias, answer)["rougeL"].fmeasure for alias in aliases)
                for answer, aliases in pairs]
    assert got.scores.tolist() == expected
    assert got.correct.tolist() == [value > 0.3 for value in expected]


@pytest.mark.parametrize(("rule", "threshold"), [("exact_match", 1.0), ("token_f1", 0.5), ("rouge_l", 0.3)])
def test_each_threshold_cuts_where_its_rule_says(rule, threshold):
    result = score_correctness(rule, [("a b c", ["a b c"]), ("x", ["a b c"])])
    assert result.threshold == threshold
    assert result.scores.tolist() == [1.0, 0.0]
    assert result.correct.tolist() == [True, False]
    # exactly at the threshold: inclusive rules call it correct, strict ones do not
    at = score_correctness(rule, [("a b c", ["a b c"])], threshold=1.0)
    assert at.correct.tolist() == [not CORRECTNESS_RULES.get(rule).strict]


def test_f1_at_exactly_one_half_is_correct_and_rouge_l_at_exactly_its_threshold_is_not():
    # "w" against "w x y": P = 1, R = 1/3, F = 0.5 for both token F1 and ROUGE-L
    f1 = score_correctness("token_f1", [("w", ["w x y"])])
    assert f1.scores.tolist() == [0.5] and f1.correct.tolist() == [True]
    rouge = score_correctness("rouge_l", [("w", ["w x y"])], threshold=0.5)
    assert rouge.scores.tolist() == [0.5] and rouge.correct.tolist() == [False]


def test_references_may_be_aliases_gold_answers_or_records():
    record = QARecord("q", "Where?", "Paris", ("Paris",), ("London",))
    for refs in (["Paris"], ("Paris",), GoldAnswers(("Paris",)), record):
        assert score_correctness("exact_match", [("the Paris!", refs)]).correct.tolist() == [True]


def test_no_pairs_give_empty_columns():
    for rule in CORRECTNESS_RULES.names(plugins=False):
        result = score_correctness(rule, [])
        assert result.scores.shape == (0,) and result.correct.dtype == np.bool_


@pytest.mark.parametrize(("rule", "pairs", "message"), [
    ("exact_match", [("a", [])], "no gold answer"),
    ("exact_match", [("a", "a")], "one str"),
    ("exact_match", [(None, ["a"])], "not a str"),
    ("exact_match", [("a",)], r"not an \(answer, references\) tuple"),
    ("truthfulqa", [("a", ["a"])], "no incorrect reference"),
    ("truthfulqa", [("a", GoldAnswers(("a",)))], "no incorrect reference"),
])
def test_bad_pairs_fail_with_a_message(rule, pairs, message):
    with pytest.raises(CorrectnessError, match=message):
        score_correctness(rule, pairs)


def test_bad_options_fail_with_a_message():
    with pytest.raises(CorrectnessError, match="did you mean 'threshold'"):
        rule_options("token_f1", {"treshold": 0.6})
    with pytest.raises(CorrectnessError, match="threshold: Input should be a valid number"):
        rule_options("token_f1", {"threshold": "0.6"})
    with pytest.raises(CorrectnessError, match="Did you mean 'bleu'"):
        rule_options("truthfulqa", {"similarity": "blue"})
    with pytest.raises(CorrectnessError, match="use_stemmer"):
        rule_options("truthfulqa", {"similarity_options": {"use_stemer": True}})
    with pytest.raises(UnknownNameError, match="Did you mean 'token_f1'"):
        score_correctness("token_f", [("a", ["a"])])


def test_gold_answers_refuse_a_bare_string():
    with pytest.raises(TypeError, match="sequence of str"):
        GoldAnswers("Paris")  # type: ignore[arg-type]
