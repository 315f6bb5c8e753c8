import csv
from pathlib import Path

import pytest

from a2c.metrics import rouge1_similarity, truthfulqa_scores
from a2c.metrics.accuracy import _rouge1_scorer

TRUTHFULQA = Path(__file__).resolve().parents[1] / "../shared/data/truthfulqa/TruthfulQA.csv"


def word_overlap(answer: str, refs: list[str]) -> list[float]:
    words = set(answer.lower().split())
    return [len(words & set(r.lower().split())) / len(words | set(r.lower().split())) for r in refs]


def test_scores_from_a_hand_worked_similarity():
    scores = truthfulqa_scores(
        "the gum passes through",
        correct_refs=["gum passes through you", "nothing happens"],
        incorrect_refs=["the gum stays in you", "it stays for years"],
        similarity=word_overlap,
    )
    # Jaccard: {gum, passes, through} over 5 words = 0.6 ; {the, gum} over 7 words = 2/7
    assert scores.max_true == pytest.approx(0.6)
    assert scores.diff == pytest.approx(0.6 - 2 / 7)
    assert scores.acc == 1.0
    max_true, diff, acc = truthfulqa_scores("it stays", ["nothing"], ["it stays"], word_overlap)
    assert (max_true, diff, acc) == (0.0, -1.0, 0.0)


def test_ties_are_not_accurate():
    assert truthfulqa_scores("x", ["y"], ["z"], word_overlap).acc == 0.0


def test_bad_references_and_similarity():
    with pytest.raises(ValueError, match="correct reference"):
        truthfulqa_scores("a", [], ["b"], word_overlap)
    with pytest.raises(ValueError, match="incorrect reference"):
        truthfulqa_scores("a", ["b"], [], word_overlap)
    with pytest.raises(ValueError, match="one score per reference"):
        truthfulqa_scores("a", ["b", "c"], ["d"], lambda a, refs: [0.5])


def test_rouge1_f_measure():
    assert rouge1_similarity("the cat sat", ["the cat sat", "the cat", "dogs bark"]) == pytest.approx(
        [1.0, 0.8, 0.0]  # "the cat": precision 2/3, recall 1 → F = 0.8
    )
    assert rouge1_similarity("Cats!", ["cat"]) == [1.0]  # stemmed, punctuation-insensitive
    assert rouge1_similarity("anything", []) == []
    assert _rouge1_scorer() is _rouge1_scorer()  # one scorer for the process


@pytest.mark.skipif(not TRUTHFULQA.exists(), reason="TruthfulQA CSV not next to the repository")
def test_rouge1_on_a_truthfulqa_row_prefers_its_best_answer():
    with TRUTHFULQA.open(newline="", encoding="utf-8") as handle:
        row = next(csv.DictReader(handle))
    correct = [row["Best Answer"], *[r.strip() for r in row["Correct Answers"].split(";") if r.strip()]]
    incorrect = [r.strip() for r in row["Incorrect Answers"].split(";") if r.strip()]
    best = truthfulqa_scores(row["Best Answer"], correct, incorrect, rouge1_similarity)
    assert best.max_true == 1.0 and best.acc == 1.0
    wrong = truthfulqa_scores(incorrect[0], correct, incorrect, rouge1_similarity)
    assert wrong.diff < 0 and wrong.acc == 0.0
