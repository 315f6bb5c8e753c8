"""TruthfulQA accuracy by the benchmark's own protocol: the public face of `a2c.qa.scoring`.

`score_answers(similarity, answers, records, **options)` scores answers made anywhere, and
`score_columns([(similarity, options), ...], answers, records)` several similarities in one call, as arrays;
the similarities registry (`SIMILARITIES`) names what it can score with, `load_records(name, path=...)`
reads the records (`DATASETS` names the datasets it reads).
"""

from a2c.metrics.sets import JudgeScores, judge_scores
from a2c.qa.data import DATASETS, DatasetError, QARecord, load_records
from a2c.qa.scoring import (
    SIMILARITIES,
    ScoreColumns,
    Similarity,
    SimilarityError,
    SimilarityOptions,
    checked_options,
    score_answers,
    score_columns,
    similarity_label,
    similarity_options,
)

__all__ = ["DATASETS", "SIMILARITIES", "DatasetError", "JudgeScores", "QARecord", "ScoreColumns",
           "Similarity", "SimilarityError", "SimilarityOptions", "checked_options", "judge_scores",
           "load_records", "score_answers", "score_columns", "similarity_label", "similarity_options"]
