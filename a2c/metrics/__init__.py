"""Consistency metrics of the five papers: pure functions on texts, matrices, labels and counts (no models).

Set-level metrics return `None` when undefined (fewer than two outputs); aggregate with `mean_defined`.
"""

from a2c.metrics.accuracy import TruthfulQAScores, rouge1_similarity, truthfulqa_scores
from a2c.metrics.agreement import fleiss_kappa, rating_counts, spearman_rho
from a2c.metrics.becel import (
    additive_inconsistency,
    conditional_inconsistency,
    negational_inconsistency,
    semantic_inconsistency,
    symmetric_inconsistency,
    transitive_inconsistency,
)
from a2c.metrics.calm import (
    DEFAULT_INDICATORS,
    DEFAULT_SIGNAL_SYMBOLS,
    IndicatorPair,
    parse_indicator_pair,
    reverse_consistency,
    reverse_input,
    signal_consistency,
    signal_inputs,
)
from a2c.metrics.consistency import cons_lex, cons_sem, mean_defined, semantic_clusters, semantic_entropy
from a2c.metrics.contrast import (
    ContrastCounts,
    ContrastSetScores,
    InvalidCountsError,
    consistency_bounds,
    consistency_distribution,
    contrast_set_scores,
    cumulative_mass,
    relative_consistency,
    relative_consistency_difference,
)
from a2c.metrics.paired import same_prediction_rate
from a2c.metrics.paraphrastic import (
    min_paraphrastic_consistency,
    paraphrastic_accuracy,
    paraphrastic_consistency,
    proportion_of_variance_attributable_to_paraphrasing,
    variance_attributable_to_paraphrasing,
)
from a2c.metrics.sets import JudgeScores, judge_scores

__all__ = [
    "DEFAULT_INDICATORS",
    "DEFAULT_SIGNAL_SYMBOLS",
    "ContrastCounts",
    "ContrastSetScores",
    "IndicatorPair",
    "InvalidCountsError",
    "JudgeScores",
    "TruthfulQAScores",
    "additive_inconsistency",
    "conditional_inconsistency",
    "cons_lex",
    "cons_sem",
    "consistency_bounds",
    "consistency_distribution",
    "contrast_set_scores",
    "cumulative_mass",
    "fleiss_kappa",
    "judge_scores",
    "mean_defined",
    "min_paraphrastic_consistency",
    "negational_inconsistency",
    "paraphrastic_accuracy",
    "paraphrastic_consistency",
    "parse_indicator_pair",
    "proportion_of_variance_attributable_to_paraphrasing",
    "rating_counts",
    "relative_consistency",
    "relative_consistency_difference",
    "reverse_consistency",
    "reverse_input",
    "rouge1_similarity",
    "same_prediction_rate",
    "semantic_clusters",
    "semantic_entropy",
    "semantic_inconsistency",
    "signal_consistency",
    "signal_inputs",
    "spearman_rho",
    "symmetric_inconsistency",
    "transitive_inconsistency",
    "truthfulqa_scores",
    "variance_attributable_to_paraphrasing",
]
