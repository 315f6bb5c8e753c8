"""Consistency metrics of the five papers: pure functions on texts, matrices, labels and counts (no models).

Set-level metrics return `None` when undefined (fewer than two outputs); aggregate with `mean_defined`.

Each name loads its module on first use (PEP 562): a config check imports `a2c.metrics.sets` and the
command line `a2c.metrics.contrast`, and neither should pay for rouge-score (nltk), scipy and scikit-learn,
which other metric modules import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2c.common.registry import lazy_attributes

if TYPE_CHECKING:
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
    from a2c.metrics.bootstrap import PairedDifference, paired_difference_ci
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
    from a2c.metrics.consistency import cons_lex, cons_sem, semantic_clusters, semantic_entropy
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
    from a2c.metrics.selection import expected_random_accuracy, majority_cluster_index, medoid_index
    from a2c.metrics.set_metrics import SET_METRICS, SetMetric, mean_defined
    from a2c.metrics.sets import JudgeScores, judge_scores
    from a2c.metrics.uncertainty import (
        UNCERTAINTY_MEASURES,
        Measure,
        degree_confidence,
        degree_uncertainty,
        eccentricity,
        eccentricity_confidence,
        eigval_laplacian,
        kernel_language_entropy,
        nli_weights,
        num_semantic_sets,
    )

# module under a2c.metrics → the public names it defines
_MODULES: dict[str, tuple[str, ...]] = {
    "accuracy": ("TruthfulQAScores", "rouge1_similarity", "truthfulqa_scores"),
    "agreement": ("fleiss_kappa", "rating_counts", "spearman_rho"),
    "becel": ("additive_inconsistency", "conditional_inconsistency", "negational_inconsistency",
        "semantic_inconsistency", "symmetric_inconsistency", "transitive_inconsistency"),
    "bootstrap": ("PairedDifference", "paired_difference_ci"),
    "calm": ("DEFAULT_INDICATORS", "DEFAULT_SIGNAL_SYMBOLS", "IndicatorPair", "parse_indicator_pair",
        "reverse_consistency", "reverse_input", "signal_consistency", "signal_inputs"),
    "consistency": ("cons_lex", "cons_sem", "semantic_clusters", "semantic_entropy"),
    "contrast": ("ContrastCounts", "ContrastSetScores", "InvalidCountsError", "consistency_bounds",
        "consistency_distribution", "contrast_set_scores", "cumulative_mass", "relative_consistency",
        "relative_consistency_difference"),
    "paired": ("same_prediction_rate",),
    "paraphrastic": ("min_paraphrastic_consistency", "paraphrastic_accuracy", "paraphrastic_consistency",
        "proportion_of_variance_attributable_to_paraphrasing", "variance_attributable_to_paraphrasing"),
    "selection": ("expected_random_accuracy", "majority_cluster_index", "medoid_index"),
    "set_metrics": ("SET_METRICS", "SetMetric", "mean_defined"),
    "sets": ("JudgeScores", "judge_scores"),
    "uncertainty": ("UNCERTAINTY_MEASURES", "Measure", "degree_confidence", "degree_uncertainty",
        "eccentricity", "eccentricity_confidence", "eigval_laplacian", "kernel_language_entropy",
        "nli_weights", "num_semantic_sets"),
}
__getattr__ = lazy_attributes(__name__, {f"{__name__}.{module}": names for module, names in _MODULES.items()})


__all__ = [
    "DEFAULT_INDICATORS",
    "DEFAULT_SIGNAL_SYMBOLS",
    "SET_METRICS",
    "UNCERTAINTY_MEASURES",
    "ContrastCounts",
    "ContrastSetScores",
    "IndicatorPair",
    "InvalidCountsError",
    "JudgeScores",
    "Measure",
    "PairedDifference",
    "SetMetric",
    "TruthfulQAScores",
    "additive_inconsistency",
    "conditional_inconsistency",
    "cons_lex",
    "cons_sem",
    "consistency_bounds",
    "consistency_distribution",
    "contrast_set_scores",
    "cumulative_mass",
    "degree_confidence",
    "degree_uncertainty",
    "eccentricity",
    "eccentricity_confidence",
    "eigval_laplacian",
    "expected_random_accuracy",
    "fleiss_kappa",
    "judge_scores",
    "kernel_language_entropy",
    "majority_cluster_index",
    "mean_defined",
    "medoid_index",
    "min_paraphrastic_consistency",
    "negational_inconsistency",
    "nli_weights",
    "num_semantic_sets",
    "paired_difference_ci",
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
