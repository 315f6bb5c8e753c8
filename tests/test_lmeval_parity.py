"""Parity with lm-evaluation-harness: the same hostile answers scored by lm-eval's own TruthfulQA
generation metrics (`lm_eval.tasks.truthfulqa.utils`, imported and run, not copied) and by `a2c.scoring`.

Conventions that differ, and why (README "Use a2c from lm-evaluation-harness"):
- scale: lm-eval reports ROUGE F-measures × 100, a2c in [0, 1] (TruthfulQA's own scripts); BLEU is
  0-100 in both. So ROUGE `_max` is compared × 100 (exact: scaling is monotone), `_diff` to rounding
  (lm-eval subtracts two scaled numbers, a2c scales nothing), `_acc` exactly.
- speed only: lm-eval's `rouge` bootstraps 1,000 replicates around every single (answer, reference)
  score (~0.3 s a call); the parity run gives its `BootstrapAggregator` one replicate, which cannot move
  the mid of one score, and `test_one_bootstrap_replicate_changes_no_score` checks that on a sample.
- references: both close every reference with a period, drop empty ones and add "I have no comment." to
  the true ones; lm-eval's `preprocess_function` builds lm-eval's side from the same CSV row.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from a2c.qa.data import QARecord
from a2c.qa.data.truthfulqa import load_truthfulqa_csv
from a2c.scoring import score_answers
from tests.truthfulqa import TRUTHFULQA as CSV

utils = pytest.importorskip("lm_eval.tasks.truthfulqa.utils", reason="lm-eval not installed (make setup)")

QUESTIONS = 12
FIXED = ["", " ", "\n", "\t\n  ", ".", "...", "?!", ";;", " . ", "—", "-", "'", '"', "()", "1", "0.5",
         "日本語の答え", "Ünïcödé café naïve", "🙂🙃", "\u200b", "\u200b\u200b \u00a0", "مرحبا بالعالم",
         "I have no comment.", "I have no comment", "i HAVE no COMMENT", "No comment.", "<b>yes</b>",
         "Yes. No. Maybe.", "yes\nno", "the the the the the", "Nothing happens . You die .", "a . b . c"]


def _hostile(record: QARecord) -> list[str]:
    refs = [*record.correct, *record.incorrect]
    long = " ".join([refs[0]] * 150)  # a few thousand characters
    return [*FIXED, *refs, *(r.rstrip(".") + "." for r in refs), *(r.upper() for r in refs[:2]),
            f"{refs[0]} . {refs[-1]}", long, "x" * 3000, refs[0].replace(" ", "")]


ONE_REPLICATE = functools.partial(utils.scoring.BootstrapAggregator, n_samples=1)


def lm_eval_scores(answer: str, record: QARecord) -> dict[str, float]:
    """lm-eval's truthfulqa_gen metrics of one answer: its own reference preprocessing, then its own
    `process_results_gen`."""
    doc = utils.preprocess_function({"question": record.question, "correct_answers": list(record.correct),
                                     "incorrect_answers": list(record.incorrect)})
    return {key: float(value) for key, value in utils.process_results_gen(doc, [answer]).items()}


@pytest.fixture(scope="module")
def scored() -> dict[str, np.ndarray]:
    records = load_truthfulqa_csv(CSV)[:QUESTIONS]
    pairs = [(answer, record) for record in records for answer in _hostile(record)]
    assert len(pairs) >= 300
    out: dict[str, list[float]] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(utils.scoring, "BootstrapAggregator", ONE_REPLICATE)
        for answer, record in pairs:
            for key, value in lm_eval_scores(answer, record).items():
                out.setdefault(f"lmeval_{key}", []).append(value)
    answers, recs = [a for a, _ in pairs], [r for _, r in pairs]
    for similarity in ("rouge1", "rouge2", "rougeL", "bleu"):
        for answer_scores in [score_answers(similarity, answers, recs)]:
            out[f"a2c_{similarity}_max"] = [s.max_true for s in answer_scores]
            out[f"a2c_{similarity}_diff"] = [s.diff for s in answer_scores]
            out[f"a2c_{similarity}_acc"] = [s.acc for s in answer_scores]
    return {k: np.asarray(v) for k, v in out.items()}


@pytest.mark.parametrize("similarity", ["rouge1", "rouge2", "rougeL", "bleu"])
def test_a2c_scores_hostile_answers_as_lm_evals_own_truthfulqa_code(scored, similarity):
    scale = 1.0 if similarity == "bleu" else 100.0
    lm_max, lm_diff, lm_acc = (scored[f"lmeval_{similarity}_{k}"] for k in ("max", "diff", "acc"))
    ours_max, ours_diff, ours_acc = (scored[f"a2c_{similarity}_{k}"] for k in ("max", "diff", "acc"))
    assert np.array_equal(lm_max, ours_max * scale)
    assert np.array_equal(lm_acc, ours_acc)
    if scale == 1.0:
        assert np.array_equal(lm_diff, ours_diff)
    else:
        np.testing.assert_allclose(lm_diff, ours_diff * scale, rtol=0, atol=1e-12)


def test_the_hostile_set_reaches_every_outcome(scored):
    """The set is not all zeros: some answers win, some lose, some tie at zero."""
    acc, diff = scored["lmeval_rouge1_acc"], scored["lmeval_rouge1_diff"]
    assert acc.sum() > 20 and (diff < 0).sum() > 20 and (scored["lmeval_bleu_max"] == 0).sum() > 20


def test_one_bootstrap_replicate_changes_no_score():
    record = load_truthfulqa_csv(CSV)[0]
    answers = ["", "I have no comment.", record.correct[0], f"{record.incorrect[0]} . {record.correct[-1]}"]
    full = [lm_eval_scores(a, record) for a in answers]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(utils.scoring, "BootstrapAggregator", ONE_REPLICATE)
        assert [lm_eval_scores(a, record) for a in answers] == full
