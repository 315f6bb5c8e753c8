"""The paraphrases' meaning check: a paraphrase that asks another question fails as "changed meaning" and
is retried; its threshold comes from the labelled pairs in tests/fixtures/paraphrase_pairs.jsonl."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from a2c.judges import build_judge
from a2c.prompting.paraphrase import (
    CHANGED_MEANING,
    DEFAULT_TECHNIQUES,
    MeaningCheck,
    paraphrase_questions,
)
from a2c.qa.config import DEFAULT_MEANING_THRESHOLD, ExperimentConfig
from a2c.qa.meaning import meaning_scores
from a2c.qa.rows import PARAPHRASES
from a2c.qa.summary import read_summary
from a2c.run.config_file import load_config
from a2c.run.pipeline import run_experiment
from a2c.run.store import RunFolder
from tests.test_paraphrase_checks import Replies  # a generator replying from lists

PAIRS = Path(__file__).parent / "fixtures" / "paraphrase_pairs.jsonl"
ROOT = Path(__file__).resolve().parents[1]
SPIDER = "How many legs does a spider have?"


def _table(scores: dict[tuple[str, str], float]) -> MeaningCheck:
    """A check scoring pairs from a table (the retry logic under test, not a judge)."""
    return MeaningCheck(lambda qs, ps: [scores[(q, p)] for q, p in zip(qs, ps, strict=True)], 0.5)


def test_a_changed_meaning_is_retried_and_kept_when_the_retry_keeps_it():
    silk, legs, eyes = "Who is it that creates spider silk?", "How many legs do spiders have?", \
        "How many eyes does a spider have?"
    check = _table({(SPIDER, silk): 0.2, (SPIDER, legs): 0.9, (SPIDER, eyes): 0.3,
                    (SPIDER, "How many legs has a spider?"): 0.95})
    aux = Replies([[silk, "How many legs has a spider?"], [legs]])
    [row] = paraphrase_questions(aux, [SPIDER], DEFAULT_TECHNIQUES[:2], meaning=check)
    assert aux.asked == [2, 1]  # the changed one alone is retried, in one batch
    assert [(p.ok, p.problem, p.first_problem, p.text, p.meaning) for p in row] == [
        (True, None, CHANGED_MEANING, legs, 0.9), (True, None, None, "How many legs has a spider?", 0.95)]

    # a retry that changes the meaning too: flagged, keeping the first draw and its score
    aux = Replies([[silk, "How many legs has a spider?"], [eyes]])
    [row] = paraphrase_questions(aux, [SPIDER], DEFAULT_TECHNIQUES[:2], meaning=check)
    assert (row[0].ok, row[0].problem, row[0].text, row[0].meaning) == (False, CHANGED_MEANING, silk, 0.2)


def test_the_meaning_check_scores_only_what_passes_the_form_checks():
    asked: list[list[str]] = []

    def score(questions, texts):
        asked.append(list(texts))
        return [0.9] * len(texts)

    aux = Replies([["A spider has 8 legs.", "How many legs has a spider?"],
                   ["How many legs do spiders have?"]])
    [row] = paraphrase_questions(aux, [SPIDER], DEFAULT_TECHNIQUES[:2], meaning=MeaningCheck(score, 0.5),
                                 references=[("8", "eight")])
    # the statement fails "not a question" and is never scored; its retry is, in a batch of its own
    assert asked == [["How many legs has a spider?"], ["How many legs do spiders have?"]]
    assert row[0].first_problem == "not a question" and row[0].ok and row[0].meaning == 0.9


def test_a_scorer_that_loses_pairs_is_an_error():
    check = MeaningCheck(lambda qs, ps: [], 0.5)
    with pytest.raises(ValueError, match="scored 0 of 2 paraphrases"):
        paraphrase_questions(Replies([["How many legs has a spider?", "What number of legs has a spider?"]]),
                             [SPIDER], DEFAULT_TECHNIQUES[:2], meaning=check)


@dataclass
class Fixed:
    """A judge returning one fixed 2×2 matrix per question (directions differ)."""

    matrix: np.ndarray
    higher_is_consistent: bool = True

    def matrices(self, questions, outputs):
        assert all(len(o) == 2 for o in outputs)
        return [self.matrix for _ in questions]


def test_a_directional_judge_counts_both_ways_and_a_disagreement_judge_is_flipped():
    m = np.array([[1.0, 0.8], [0.3, 1.0]])
    assert meaning_scores(Fixed(m), ["q"], ["p"]) == [0.3]  # the lower direction
    contra = np.array([[0.0, 0.1], [0.6, 0.0]])
    assert meaning_scores(Fixed(contra, higher_is_consistent=False), ["q"], ["p"]) == [pytest.approx(0.4)]


def _labelled() -> list[dict]:
    return [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def embedding_scores() -> tuple[np.ndarray, np.ndarray]:
    rows = _labelled()
    judge = build_judge("embedding", cache=None)
    scores = np.array(meaning_scores(judge, [r["question"] for r in rows], [r["paraphrase"] for r in rows]))
    return scores, np.array([r["same_meaning"] for r in rows])


def test_the_labelled_pairs_are_balanced_and_each_question_has_both_kinds():
    rows = _labelled()
    same = {r["question"] for r in rows if r["same_meaning"]}
    changed = {r["question"] for r in rows if not r["same_meaning"]}
    assert len(rows) == 48 and sum(r["same_meaning"] for r in rows) == 24 and same == changed


def test_the_default_threshold_is_the_one_that_separates_the_labelled_pairs_best(embedding_scores):
    scores, same = embedding_scores
    cuts = np.unique(scores)  # a threshold in (cuts[i - 1], cuts[i]] labels the pairs as cuts[i] does
    accuracy = np.array([((scores >= t) == same).mean() for t in cuts])
    # of the equally best intervals the widest (the largest margin on both sides), and its midpoint
    best = max((cuts[i] - cuts[i - 1], i) for i in range(1, len(cuts)) if accuracy[i] == accuracy.max())[1]
    assert pytest.approx((cuts[best - 1] + cuts[best]) / 2, abs=0.01) == DEFAULT_MEANING_THRESHOLD
    assert ((scores >= DEFAULT_MEANING_THRESHOLD) == same).mean() >= 0.85
    rows = _labelled()
    silk = next(k for k, r in enumerate(rows) if "spider silk" in r["paraphrase"])
    assert scores[silk] < DEFAULT_MEANING_THRESHOLD  # the quickstart's changed paraphrase is caught


def test_the_config_checks_the_meaning_check():
    base = {"name": "x", "dataset": {"name": "quickstart"}, "judges": ["exact"]}
    config = ExperimentConfig.model_validate({**base, "variation": {"meaning_check": {}}})
    assert config.variation.meaning_check is not None
    assert config.variation.meaning_check.judge.name == "embedding"
    assert config.variation.meaning_check.threshold == DEFAULT_MEANING_THRESHOLD
    assert "meaning_check" not in ExperimentConfig.model_validate(base).variation.model_dump()
    with pytest.raises(ValidationError, match=r"variation\.meaning_check\.threshold"):
        ExperimentConfig.model_validate({**base, "variation": {"meaning_check": {"threshold": 1.5}}})
    with pytest.raises(ValidationError, match="unknown judge 'embeding'"):
        ExperimentConfig.model_validate({**base, "variation": {"meaning_check": {"judge": "embeding"}}})


def _run(tmp: Path, *settings: str) -> RunFolder:
    config = load_config(ROOT / "experiments" / "quickstart.yaml", overrides=[
        f"output={tmp / 'run'}", "limit=3", "judges=[exact, rouge1]", "accuracy.similarities=[rouge1]",
        f"generator={{backend: scripted, model: 'scripted:How many legs do spiders have?|Why?|1', "
        f"cache: {tmp / 'cache.sqlite'}}}", *settings])
    return RunFolder(run_experiment(config, progress=False).folder)


def test_a_run_counts_and_reports_the_changed_meanings(tmp_path):
    store = _run(tmp_path)  # the quickstart checks the meaning
    items = [p for row in store.iter_rows(PARAPHRASES) for p in row.paraphrases]
    summary = read_summary(store, "summary.json", hint="")
    counts = summary.counts
    firsts = sum(p.first_problem == CHANGED_MEANING for p in items)
    assert firsts > 0  # a scripted reply asks about spiders' legs whatever the question
    assert counts.paraphrases_first_changed_meaning == firsts
    assert counts.paraphrases_changed_meaning == sum(p.problem == CHANGED_MEANING for p in items)
    assert counts.paraphrases_retried_into_passing == sum(
        p.first_problem == CHANGED_MEANING and p.ok for p in items)
    assert all(p.meaning is not None for p in items if p.ok)
    report = store.read_text("report.md")
    assert f"| paraphrases failed as changed meaning | {counts.paraphrases_changed_meaning} |" in report
    assert counts.paraphrases_changed_meaning > 0 and "## Paraphrases that changed the meaning" in report
    failed = next(p for p in items if p.problem == CHANGED_MEANING)
    assert f"| {failed.text} |" in report  # the texts themselves, with their scores


def test_a_run_without_the_check_writes_what_it_wrote_before(tmp_path):
    store = _run(tmp_path, "variation.meaning_check=null")
    text = store.read_text(PARAPHRASES.name)
    assert "meaning" not in text and "first_problem" not in text
    summary = json.loads(store.read_text("summary.json"))
    assert not any(k.startswith("paraphrases_") and "meaning" in k for k in summary["counts"])
    assert "changed meaning" not in store.read_text("report.md")


def test_the_viewer_shows_the_score_and_a_retried_first_draw():
    from a2c.qa.rows import ParaphraseItem
    from a2c.qa.view import _check

    retried = ParaphraseItem(technique="synonyms", text="How many legs do spiders have?", ok=True,
                             problem=None, first_problem=CHANGED_MEANING, meaning=0.93)
    assert _check(retried) == "ok (meaning 0.93); first draw: changed meaning"
    failed = ParaphraseItem(technique="synonyms", text="Why?", ok=False, problem=CHANGED_MEANING, meaning=0.4)
    assert _check(failed) == "failed: changed meaning (meaning 0.40)"
    plain = ParaphraseItem(technique="synonyms", text="Why?", ok=False, problem="not a question")
    assert _check(plain) == "failed: not a question"
