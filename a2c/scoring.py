"""TruthfulQA accuracy by the benchmark's own protocol: the public face of `a2c.qa.scoring`.

`score_answers(similarity, answers, records, **options)` scores answers made anywhere; the similarities
registry (`SIMILARITIES`) names what it can score with.
"""

from a2c.metrics.sets import JudgeScores, judge_scores
from a2c.qa.scoring import (
    SIMILARITIES,
    Similarity,
    SimilarityError,
    SimilarityOptions,
    checked_options,
    score_answers,
    similarity_label,
    similarity_options,
)

__all__ = ["SIMILARITIES", "JudgeScores", "Similarity", "SimilarityError", "SimilarityOptions",
           "checked_options", "judge_scores", "score_answers", "similarity_label", "similarity_options"]
