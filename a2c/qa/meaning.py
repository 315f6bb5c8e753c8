"""The meaning check of in-context paraphrases: a judge scores each paraphrase against its question.

The form checks (`a2c.prompting.paraphrase_checks`) see whether a paraphrase is a question of the same
type; they cannot see that "Who is it that creates spider silk?" asks something other than "How many legs
does a spider have?". An answer to another question is not evidence of (in)consistency, so a paraphrase
scoring below the threshold fails as "changed meaning" and is retried. Any registered judge scores: a
symmetric one (the embedding judge, the default) once, a directional one (`entail`) both ways with the
lower score counting, a disagreement judge (`contra`) as 1 − its higher score.
"""

from __future__ import annotations

from collections.abc import Sequence

from a2c.judges import Judge
from a2c.prompting.paraphrase import MeaningCheck


def meaning_scores(judge: Judge, questions: Sequence[str], paraphrases: Sequence[str]) -> list[float]:
    """How much each paraphrase keeps its question's meaning, in [0, 1]; one batched judge pass.

    Args:
        judge: any judge; the question is also the context a question-aware judge reads.
        questions: the original questions.
        paraphrases: one paraphrase per question.

    Returns:
        Per pair, the judge's agreement both ways (1: same meaning).
    """
    matrices = judge.matrices(list(questions), [[q, p] for q, p in zip(questions, paraphrases, strict=True)])
    if judge.higher_is_consistent:
        return [float(min(m[0, 1], m[1, 0])) for m in matrices]
    return [float(1.0 - max(m[0, 1], m[1, 0])) for m in matrices]


def meaning_check(judge: Judge, threshold: float) -> MeaningCheck:
    """The check `a2c.prompting.paraphrase.paraphrase_questions` runs, scored by `judge`.

    Args:
        judge: the judge that scores (question, paraphrase).
        threshold: a paraphrase scoring below it changed the meaning.

    Returns:
        The check.
    """
    return MeaningCheck(lambda questions, texts: meaning_scores(judge, questions, texts), threshold)


__all__ = ["meaning_check", "meaning_scores"]
