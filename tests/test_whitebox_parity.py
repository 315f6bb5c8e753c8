"""a2c's token-probability signals against LM-Polygraph 0.7.0's own estimators on the same numbers.

Each estimator gets the `stats` dict its `__call__` reads (the keys its source names), filled from one set
of seeded synthetic log-probabilities, similarities and clusters; a2c's batched function gets the same
arrays. Where the definitions match the values agree to 1e-9; where a2c's default differs on purpose
(normalised semantic entropy, KLE's graph scale) the test pins the exact relation instead. Skipped where
lm-polygraph (the `polygraph` extra) is not installed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("lm_polygraph")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # its imports warn about optional packages it does not need here
    from lm_polygraph.estimators import (
        CocoaMSP,
        CocoaMTE,
        CocoaPPL,
        KernelLanguageEntropy,
        MaximumSequenceProbability,
        MeanTokenEntropy,
        Perplexity,
        SemanticEntropy,
    )
    from lm_polygraph.stat_calculators.entropy import EntropyCalculator

from a2c.metrics import whitebox as wb
from a2c.metrics.uncertainty import kernel_language_entropy, nli_weights

TOL = 1e-9
QUESTIONS = 60
VOCAB = 40


@pytest.fixture(scope="module")
def batch() -> dict[str, list[np.ndarray]]:
    """Answers of 1–12 tokens: the chosen token's log-prob is one of its position's top-k."""
    rng = np.random.default_rng(20250)
    lengths = rng.integers(1, 13, size=QUESTIONS)
    full = [rng.normal(scale=2.0, size=(n, VOCAB)) for n in lengths]
    full = [x - np.logaddexp.reduce(x, axis=1, keepdims=True) for x in full]  # log-softmax rows
    topk = []
    for x in full:  # LM-Polygraph's greedy_log_probs with only the top 5 kept: the rest are −inf
        kept = np.sort(x, axis=1)[:, ::-1].copy()
        kept[:, 5:] = -np.inf
        topk.append(kept)
    chosen = [t[np.arange(len(t)), rng.integers(0, 5, size=len(t))] for t in topk]
    similarities = [rng.uniform(size=rng.integers(1, 11)) for _ in range(QUESTIONS)]
    return {"chosen": chosen, "topk": topk, "full": full, "similarities": similarities}


def _close(ours: np.ndarray, theirs: object) -> None:
    theirs = np.asarray(theirs, dtype=np.float64)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=TOL, atol=TOL)


def test_msp_and_perplexity_match(batch: dict[str, list[np.ndarray]]) -> None:
    stats = {"greedy_log_likelihoods": batch["chosen"]}
    _close(wb.maximum_sequence_probability(batch["chosen"]), MaximumSequenceProbability()(stats))
    _close(-wb.sequence_log_likelihood(batch["chosen"]), MaximumSequenceProbability()(stats))
    # LM-Polygraph's Perplexity is the log of the perplexity
    _close(wb.log_perplexity(batch["chosen"]), Perplexity()(stats))
    _close(np.log(wb.perplexity(batch["chosen"])), Perplexity()(stats))


@pytest.mark.parametrize("which", ["topk", "full"])
def test_mean_token_entropy_matches(batch: dict[str, list[np.ndarray]], which: str) -> None:
    """Over the top-k (−inf elsewhere) and over the whole vocabulary, not renormalised, as its calculator."""
    stats = EntropyCalculator()({"greedy_log_probs": batch[which]})
    _close(wb.mean_token_entropy(batch[which]), MeanTokenEntropy()(stats))


def test_renormalised_entropy_is_the_rescaled_top_k_entropy(batch: dict[str, list[np.ndarray]]) -> None:
    """renormalise=True is LM-Polygraph's definition applied to the top-k rescaled to sum to 1."""
    rescaled = [t - np.logaddexp.reduce(t, axis=1, keepdims=True) for t in batch["topk"]]
    stats = EntropyCalculator()({"greedy_log_probs": rescaled})
    _close(wb.mean_token_entropy(batch["topk"], renormalise=True), MeanTokenEntropy()(stats))


def test_cocoa_matches(batch: dict[str, list[np.ndarray]]) -> None:
    stats = {"greedy_log_likelihoods": batch["chosen"],
             "greedy_sentence_similarity": batch["similarities"],
             **EntropyCalculator()({"greedy_log_probs": batch["topk"]})}
    _close(wb.cocoa_msp(batch["chosen"], batch["similarities"]), CocoaMSP()(stats))
    _close(wb.cocoa_ppl(batch["chosen"], batch["similarities"]), CocoaPPL()(stats))
    _close(wb.cocoa_mte(batch["topk"], batch["similarities"]), CocoaMTE()(stats))


def _semantic_stats(log_likelihoods: list[np.ndarray], clusters: list[np.ndarray]) -> dict[str, object]:
    """SemanticEntropy's stats: its classes as class → samples and sample → class lists (classes 0..C−1)."""
    class_to_sample, sample_to_class = [], []
    for labels in clusters:
        _, inverse = np.unique(labels, return_inverse=True)
        sample_to_class.append([int(c) for c in inverse])
        class_to_sample.append([list(np.flatnonzero(inverse == c)) for c in range(int(inverse.max()) + 1)])
    return {"sample_log_probs": [list(x) for x in log_likelihoods],
            "sample_texts": [[f"s{j}" for j in range(len(x))] for x in log_likelihoods],
            "semantic_classes_entail": {"class_to_sample": class_to_sample,
                                        "sample_to_class": sample_to_class}}


@pytest.fixture(scope="module")
def samples() -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 11, size=QUESTIONS)
    log_likelihoods = [rng.normal(-8.0, 4.0, size=m) for m in sizes]
    clusters = [rng.choice([3, 11, 42, 7], size=m) for m in sizes]  # arbitrary labels, not 0..C−1
    return log_likelihoods, clusters


def test_semantic_entropy_monte_carlo_unnormalised_matches(
        samples: tuple[list[np.ndarray], list[np.ndarray]]) -> None:
    """LM-Polygraph's default SemanticEntropy: −(1/M)·Σ_j log P(C_j), class masses not normalised."""
    log_likelihoods, clusters = samples
    ours = wb.weighted_semantic_entropy(log_likelihoods, clusters, estimator="monte_carlo", normalise=False)
    _close(ours, SemanticEntropy()(_semantic_stats(log_likelihoods, clusters)))


def test_semantic_entropy_exact_matches_direct_estimation_on_singletons(
        samples: tuple[list[np.ndarray], list[np.ndarray]]) -> None:
    """LM-Polygraph's "direct" estimation sums −P(C_j)·log P(C_j) over samples, so a class of m members
    counts m times; with one sample per class and the likelihoods normalised, that is the exact entropy."""
    log_likelihoods = [x - np.logaddexp.reduce(x) for x in samples[0]]
    singletons = [np.arange(len(x)) for x in log_likelihoods]
    theirs = SemanticEntropy(entropy_estimation="direct")(_semantic_stats(log_likelihoods, singletons))
    _close(wb.weighted_semantic_entropy(log_likelihoods, singletons), theirs)


def test_semantic_entropy_normalised_differs_from_polygraph_by_the_class_total(
        samples: tuple[list[np.ndarray], list[np.ndarray]]) -> None:
    """Normalising over classes shifts every log P(C) by −log Σ_C P(C): the Monte-Carlo value moves by
    exactly that total, which LM-Polygraph's default leaves in (the samples' mass is far below 1)."""
    log_likelihoods, clusters = samples
    theirs = np.asarray(SemanticEntropy()(_semantic_stats(log_likelihoods, clusters)))
    total = np.array([np.logaddexp.reduce(x) for x in log_likelihoods])
    ours = wb.weighted_semantic_entropy(log_likelihoods, clusters, estimator="monte_carlo")
    _close(ours, theirs + total)
    assert (np.abs(ours - theirs) > 1.0).any()  # the difference is real on these inputs


def test_kle_equals_polygraph_at_twice_the_time() -> None:
    """LM-Polygraph 0.7.0 builds its graph from E + Eᵀ (twice a2c's symmetrised `nli_weights`) and takes
    L = D − W, as a2c does: its KLE at time t is a2c's at 2t on the same NLI probabilities."""
    rng = np.random.default_rng(3)
    entail, contra = [], []
    for n in rng.integers(2, 9, size=25):
        p = rng.dirichlet([1.0, 1.0, 1.0], size=(n, n))  # entailment, neutral, contradiction per pair
        entail.append(p[..., 0])
        contra.append(p[..., 2])
    stats = {"semantic_matrix_entail": entail, "semantic_matrix_contra": contra}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it casts np.linalg.eig's complex eigenvalues to float
        theirs = np.asarray(KernelLanguageEntropy(t=0.3)(stats))
    pairs = list(zip(entail, contra, strict=True))
    ours = np.array([kernel_language_entropy(nli_weights(e, c), t=0.6) for e, c in pairs])
    _close(ours, theirs)
    same_t = np.array([kernel_language_entropy(nli_weights(e, c), t=0.3) for e, c in pairs])
    assert np.abs(same_t - theirs).max() > 1e-3  # at the same t the two differ
