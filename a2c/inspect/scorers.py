"""Scorers over what `ask_to_choose` left in the sample's metadata: how consistent the candidates are
(`consistency`), and TruthfulQA accuracy of the chosen answer (`truthfulqa_accuracy`), both computed by
a2c's own code (judges, `a2c.metrics`, `a2c.scoring`), so they equal what `a2c run` reports.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import anyio.to_thread
import numpy as np
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from a2c.common.errors import A2CError
from a2c.inspect.metrics import CORRECT, auroc, prr
from a2c.inspect.solver import EVIDENCE
from a2c.judges import Judge, build_judge
from a2c.metrics.sets import judge_scores
from a2c.metrics.uncertainty import degree_uncertainty, eigval_laplacian
from a2c.qa.data import QARecord
from a2c.scoring import score_answers


class MissingEvidenceError(A2CError, ValueError):
    """A consistency score was asked of a sample `ask_to_choose` did not answer."""


def record_of(state: TaskState) -> QARecord | None:
    """The sample's TruthfulQA references (metadata `correct`/`incorrect`), or None where it has none."""
    meta = state.metadata
    if not meta.get("correct") or not meta.get("incorrect"):
        return None
    return QARecord(id=str(state.sample_id), question=state.input_text, correct=tuple(meta["correct"]),
                    incorrect=tuple(meta["incorrect"]))


def _float(value: float | int | None) -> float:
    return math.nan if value is None else float(value)


@scorer(metrics={"cons_sem": [mean(), stderr(), auroc(), prr()],
                 "entropy": [mean(), auroc(uncertainty=True), prr(uncertainty=True)],
                 "eigv": [mean(), auroc(uncertainty=True), prr(uncertainty=True)],
                 "deg": [mean(), auroc(uncertainty=True), prr(uncertainty=True)]})
def consistency(judge: str = "rouge1", accuracy: str = "rouge1") -> Scorer:
    """Agreement among all of a sample's A2C candidates under one a2c judge: Cons_sem, clustering entropy
    (bits), EigV and Deg (Lin et al.'s graph uncertainties; higher = less consistent). Samples with
    TruthfulQA references also get `correct` (the chosen answer's accuracy under `accuracy`), the target
    of the AUROC/PRR metrics. Undefined values (fewer than two candidates) are NaN, left out of metrics.
    """
    built: list[Judge] = []
    building = threading.Lock()

    def measure(question: str, texts: list[str]) -> dict[str, float]:
        with building:
            if not built:
                built.append(build_judge(judge))
        found = built[0]
        matrix = found.matrix(question, texts) if texts else np.zeros((0, 0))
        scores = judge_scores(matrix, found.equivalent(matrix))
        return {"cons_sem": _float(scores.cons_sem), "entropy": _float(scores.entropy),
                "eigv": _float(eigval_laplacian(matrix)), "deg": _float(degree_uncertainty(matrix))}

    async def score(state: TaskState, target: Target) -> Score:
        proof = state.metadata.get(EVIDENCE)
        if proof is None:
            raise MissingEvidenceError(f"sample {state.sample_id}: no `{EVIDENCE}` metadata; the consistency "
                                       "scorer scores the candidates of the ask_to_choose solver")
        texts = [c["answer"] for c in proof["candidates"]]
        value = await anyio.to_thread.run_sync(measure, state.input_text, texts)
        record = record_of(state)
        correct = None
        if record is not None:  # in a worker thread too: a model similarity (embedding, bleurt) may load
            answer = state.output.completion
            found = await anyio.to_thread.run_sync(score_answers, accuracy, [answer], [record])
            correct = found[0].acc == 1.0
        metadata: dict[str, Any] = {CORRECT: correct, "judge": judge, "candidates": len(texts)}
        return Score(value=value, answer=state.output.completion, metadata=metadata,
                     explanation=f"{len(texts)} candidates judged by {judge}")

    return score


@scorer(metrics={"*": [mean(), stderr()]})
def truthfulqa_accuracy(similarities: list[str] | None = None) -> Scorer:
    """TruthfulQA's generation metrics of the output, as `a2c.scoring` computes them (the benchmark's own
    protocol: references closed with a period, "I have no comment." a true one; per similarity the best
    true reference's score `_max`, minus the best false one's `_diff`, and `_acc` = max true > max false).
    Keys follow lm-evaluation-harness's names (`rouge1_acc`, `bleu_max`); ROUGE is in [0, 1], BLEU 0-100.
    """
    names = similarities if similarities is not None else ["rouge1", "bleu"]

    async def score(state: TaskState, target: Target) -> Score:
        record = record_of(state)
        if record is None:
            raise A2CError(f"sample {state.sample_id}: no `correct`/`incorrect` references in its metadata")
        answer = state.output.completion

        def values() -> dict[str, float]:  # in a worker thread: a model similarity may load a model
            out: dict[str, float] = {}
            for name in names:
                found = score_answers(name, [answer], [record])[0]
                out |= {f"{name}_max": found.max_true, f"{name}_diff": found.diff, f"{name}_acc": found.acc}
            return out

        return Score(value=await anyio.to_thread.run_sync(values), answer=answer)

    return score
