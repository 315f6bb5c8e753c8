"""Per-question scores of one output set: consistency per judge and TruthfulQA accuracy per similarity.

The runner calls these on every (question, variation source, before/after A2C) set. Accuracy
similarities are batched over the whole dataset: the embedding one encodes every distinct answer and
reference once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from a2c.data import QARecord
from a2c.metrics import cons_sem, semantic_clusters, semantic_entropy, truthfulqa_scores
from a2c.metrics.accuracy import rouge1_similarity
from a2c.registry import Registry

# name → scorer of many (answer, record) pairs at once; returns (max_true, diff, acc) per pair
AnswerScorer = Callable[[Sequence[str], Sequence[QARecord]], list[tuple[float, float, float]]]
SIMILARITIES: Registry[AnswerScorer] = Registry("accuracy similarity")

# what the report calls each similarity (BLEURT is not available offline: say what stands in for it)
SIMILARITY_LABELS = {"rouge1": "R1-A", "embedding": "Emb-A (embedding similarity, BLEURT substitute)"}


@SIMILARITIES.register("rouge1")
def _rouge1(answers: Sequence[str], records: Sequence[QARecord]) -> list[tuple[float, float, float]]:
    return [tuple(truthfulqa_scores(a, r.correct, r.incorrect, rouge1_similarity))
            for a, r in zip(answers, records, strict=True)]


@SIMILARITIES.register("embedding")
def _embedding(answers: Sequence[str], records: Sequence[QARecord]) -> list[tuple[float, float, float]]:
    from a2c.judges.embedding import DEFAULT_EMBEDDING_MODEL
    from a2c.judges.hf import sentence_encoder

    texts = list(dict.fromkeys([*answers, *(t for r in records for t in (*r.correct, *r.incorrect))]))
    vectors = sentence_encoder(DEFAULT_EMBEDDING_MODEL).embed(texts, 64) if texts else np.zeros((0, 1))
    row = {t: k for k, t in enumerate(texts)}

    def cosine(answer: str, refs: Sequence[str]) -> list[float]:
        sims = vectors[[row[r] for r in refs]] @ vectors[row[answer]]
        return np.clip(sims, 0.0, 1.0).tolist()

    return [tuple(truthfulqa_scores(a, r.correct, r.incorrect, cosine))
            for a, r in zip(answers, records, strict=True)]


def score_answers(similarity: str, answers: Sequence[str], records: Sequence[QARecord]
                  ) -> list[tuple[float, float, float]]:
    return SIMILARITIES.get(similarity)(answers, records)


@dataclass(frozen=True)
class JudgeScores:
    """One judge on one output set; None where undefined (fewer than two outputs)."""

    cons_sem: float | None
    entropy: float | None
    clusters: int
    cons_sem_accurate: float | None  # the same, restricted to the accurate answers (Table 1/3 of 002)

    def as_dict(self) -> dict[str, float | int | None]:
        return {"cons_sem": self.cons_sem, "entropy": self.entropy, "clusters": self.clusters,
                "cons_sem_accurate": self.cons_sem_accurate}


def judge_scores(matrix: np.ndarray, equivalent: np.ndarray, accurate: Sequence[bool]) -> JudgeScores:
    keep = np.flatnonzero(np.asarray(accurate, dtype=bool))
    clusters = semantic_clusters(equivalent) if matrix.shape[0] else []
    return JudgeScores(
        cons_sem=cons_sem(matrix),
        entropy=semantic_entropy(clusters),
        clusters=len(set(clusters)),
        cons_sem_accurate=cons_sem(matrix[np.ix_(keep, keep)]),
    )
