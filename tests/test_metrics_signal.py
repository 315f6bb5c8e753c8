"""Consistency as a signal of correctness: AUROC and PRR against hand-computed values, scikit-learn, an
LM-Polygraph-style per-answer computation over every order of tied answers, and their properties."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from a2c.metrics.signal import (
    Groups,
    auroc,
    bootstrap,
    oracle_curve,
    prediction_rejection_ratio,
    rejection_curve,
    signal,
)


def _polygraph_prr(confidence: np.ndarray, correct: np.ndarray) -> float:
    """PRR the plain way, one answer at a time in the given order of ties (LM-Polygraph's definition)."""
    n = len(confidence)
    kept = np.arange(1, n + 1)
    area = np.mean(np.cumsum(correct[np.argsort(-confidence, kind="stable")]) / kept)
    oracle = np.mean(np.cumsum(np.sort(correct)[::-1]) / kept)
    random = correct.mean()
    return float((area - random) / (oracle - random))


def test_hand_computed_values_without_ties():
    g = Groups.per_answer([0.9, 0.8, 0.3, 0.1], [1, 0, 1, 0])
    assert auroc(g) == pytest.approx(3 / 4)  # 3 of the 4 (accurate, inaccurate) pairs ranked right
    # kept accuracy 1, 1/2, 2/3, 2/4 → area 2/3; oracle 1, 1, 2/3, 2/4 → 19/24; random 1/2
    assert prediction_rejection_ratio(g) == pytest.approx((2 / 3 - 1 / 2) / (19 / 24 - 1 / 2))  # 4/7


def test_hand_computed_values_with_a_tied_set():
    # a set of two answers (one accurate) scored 0.5, a set of one inaccurate answer scored 0.2
    g = Groups.of([0.5, 0.2], answers=[2, 1], accurate=[1, 0])
    assert auroc(g) == pytest.approx(0.75)  # one tie (½) and one win over two pairs
    # the two orders of the tie give PRR 1 and −0.2: their mean
    assert prediction_rejection_ratio(g) == pytest.approx(0.4)
    shares, kept = rejection_curve(g)
    assert shares == pytest.approx([0, 1 / 3, 2 / 3]) and kept == pytest.approx([1 / 3, 1 / 2, 1 / 2])


@pytest.mark.parametrize(("answers", "accurate", "why"), [
    ([3, 2], [3, 2], "every answer is accurate"),
    ([3, 2], [0, 0], "no answer is accurate"),
    ([], [], "no answers with a defined score"),
])
def test_undefined_cases_are_reported_never_nan(answers, accurate, why):
    g = Groups.of([0.1 * i for i in range(len(answers))], answers, accurate)
    result = signal(g, replicates=50)
    assert result.undefined == why
    assert (result.auroc, result.prr, result.auroc_ci, result.prr_ci) == (None, None, None, None)
    assert auroc(g) is None and prediction_rejection_ratio(g) is None


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="accurate <= answers"):
        Groups.of([0.5], [1], [2])
    with pytest.raises(ValueError, match="finite"):
        Groups.of([math.nan], [1], [1])
    with pytest.raises(ValueError, match="0/1"):
        Groups.per_answer([0.5], [2])


def test_bootstrap_is_seeded_and_its_interval_holds_the_estimate():
    rng = np.random.default_rng(3)
    answers = rng.integers(1, 6, 120)
    scores = rng.random(120)
    accurate = rng.binomial(answers, np.clip(scores, 0.05, 0.95))  # consistent sets are more often right
    g = Groups.of(scores, answers, accurate)
    first, again = signal(g, seed=7), signal(g, seed=7)
    assert first == again and signal(g, seed=8).auroc_ci != first.auroc_ci
    assert first.auroc_ci[0] <= first.auroc <= first.auroc_ci[1]
    assert first.prr_ci[0] <= first.prr <= first.prr_ci[1]
    assert first.auroc > 0.6 and first.prr > 0.2
    aurocs, prrs = bootstrap(g, replicates=300, seed=1)
    assert aurocs.shape == prrs.shape == (300,) and np.isfinite(aurocs).all()


sets = st.lists(st.tuples(st.integers(0, 4), st.integers(1, 4), st.integers(0, 4)), min_size=1, max_size=12)


def _groups(items: list[tuple[int, int, int]]) -> Groups:
    return Groups.of([s / 4 for s, _, _ in items], [n for _, n, _ in items], [min(a, n) for _, n, a in items])


def _per_answer(g: Groups) -> tuple[np.ndarray, np.ndarray]:
    scores = np.repeat(g.scores, g.answers)
    labels = np.concatenate([[1] * a + [0] * (n - a) for n, a in zip(g.answers, g.accurate, strict=True)])
    return scores, labels.astype(float)


@settings(max_examples=150, deadline=None)
@given(sets)
def test_auroc_equals_scikit_learn_on_every_answer_and_the_bootstrap_statistic_too(items):
    g = _groups(items)
    scores, labels = _per_answer(g)
    if g.undefined:
        assert auroc(g) is None
        return
    assert auroc(g) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    # the vectorised statistic of the bootstrap, on the data itself (one "replicate" of counts 1)
    from a2c.metrics.signal import _auroc, _group_sums

    group, _ = g.ordered()
    pos = _group_sums(g.accurate[None, :].astype(float), group)
    total = _group_sums(g.answers[None, :].astype(float), group)
    assert _auroc(pos, total - pos)[0] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=2, max_size=6))
def test_prr_is_polygraphs_averaged_over_every_order_of_tied_answers(pairs):
    confidence = np.array([c for c, _ in pairs], dtype=float)
    correct = np.array([float(k) for _, k in pairs])
    g = Groups.per_answer(confidence, correct)
    if g.undefined:
        return
    orders = [list(p) for p in itertools.permutations(range(len(pairs)))]
    expected = np.mean([_polygraph_prr(confidence[o], correct[o]) for o in orders])
    assert prediction_rejection_ratio(g) == pytest.approx(expected, abs=1e-12)
    if len(set(confidence)) == len(confidence):  # no ties: exactly LM-Polygraph's number
        assert prediction_rejection_ratio(g) == pytest.approx(_polygraph_prr(confidence, correct), abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(sets)
def test_properties_bounds_monotone_invariance_and_the_oracle(items):
    g = _groups(items)
    if g.undefined:
        return
    a, p = auroc(g), prediction_rejection_ratio(g)
    _, labels = _per_answer(g)
    # between the score that ranks every inaccurate answer first and the oracle (not −1: the worst case
    # can lose more area than the oracle gains)
    worst = prediction_rejection_ratio(Groups.per_answer(1 - labels, labels))
    assert 0.0 <= a <= 1.0 and worst - 1e-12 <= p <= 1.0 + 1e-12
    # any strictly increasing transform of the score changes neither
    squashed = Groups.of(np.tanh(3 * g.scores) + 5, g.answers, g.accurate)
    assert auroc(squashed) == pytest.approx(a) and prediction_rejection_ratio(squashed) == pytest.approx(p)
    # reversing the score mirrors AUROC
    assert auroc(Groups.of(-g.scores, g.answers, g.accurate)) == pytest.approx(1 - a)
    # a score that is the answer's own accuracy is the oracle
    perfect = Groups.per_answer(labels, labels)
    assert prediction_rejection_ratio(perfect) == pytest.approx(1.0) and auroc(perfect) == pytest.approx(1.0)
    assert oracle_curve(g)[1] == pytest.approx(rejection_curve(perfect)[1])


def test_a_score_constant_over_the_answers_is_undefined_not_chance():
    # after A2C every paraphrase set can have Cons_sem 1: one score for all ranks nothing
    constant = Groups.of([1.0, 1.0, 1.0], answers=[2, 2, 1], accurate=[1, 2, 0])
    assert constant.undefined == "constant"
    result = signal(constant, replicates=50)
    assert result.undefined == "constant" and result.auroc is None and result.prr is None
    # a set with no answers does not make a constant score look varied
    assert Groups.of([1.0, 0.3], answers=[3, 0], accurate=[1, 0]).undefined == "constant"
    assert Groups.of([1.0, 0.3], answers=[3, 1], accurate=[1, 0]).undefined is None


def test_clustered_bootstrap_resamples_whole_questions():
    """Answers scored one by one stay with their question: resampling one question that holds them all can
    only redraw the same data, and distinct clusters are the sets the bootstrap draws from."""
    rng = np.random.default_rng(5)
    scores, labels = rng.random(40), rng.random(40) < 0.5
    g = Groups.per_answer(scores, labels)
    one = np.zeros(40, dtype=int)
    aurocs, prrs = bootstrap(g, replicates=50, seed=2, clusters=one)
    assert np.allclose(aurocs, auroc(g)) and np.allclose(prrs, prediction_rejection_ratio(g))
    # each answer its own cluster (ids in any order) is the plain bootstrap over answers
    plain = bootstrap(g, replicates=50, seed=2)
    same = bootstrap(g, replicates=50, seed=2, clusters=np.arange(40) * 3 + 7)
    assert np.array_equal(plain[0], same[0]) and np.array_equal(plain[1], same[1])
    # ten questions of four answers: the signal counts questions as its sets, the estimate is unchanged
    questions = np.repeat(np.arange(10), 4)
    clustered = signal(g, seed=2, clusters=questions)
    assert clustered.sets == 10 and clustered.answers == 40 and clustered.auroc == auroc(g)
    assert clustered.auroc_ci != signal(g, seed=2).auroc_ci
    with pytest.raises(ValueError, match="3 cluster ids for 40 sets"):
        signal(g, clusters=[0, 1, 2])


def test_the_bootstrap_is_the_same_in_passes_of_any_size(monkeypatch):
    """Passes shrink with the answers a pass widens to (a 100,000-question run has millions): the
    replicate values do not depend on how many resamples a pass takes."""
    from a2c.metrics import bootstrap as resampling

    rng = np.random.default_rng(11)
    g = Groups.per_answer(rng.random(60), rng.random(60) < 0.4)
    questions = np.repeat(np.arange(15), 4)
    whole = bootstrap(g, replicates=300, seed=4, clusters=questions)
    resampling._DRAWN.clear()
    monkeypatch.setattr(resampling, "PASS_ELEMENTS", 150)  # 2 resamples of 60 answers a pass
    passes = bootstrap(g, replicates=300, seed=4, clusters=questions)
    resampling._DRAWN.clear()
    assert np.array_equal(whole[0], passes[0], equal_nan=True)
    assert np.array_equal(whole[1], passes[1], equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(sets, st.integers(0, 2**16), st.booleans())
def test_each_bootstrap_replicate_is_the_statistic_of_its_resampled_sets(items, seed, clustered):
    """Replicate r of `bootstrap` equals AUROC and PRR computed afresh on the data resample r draws (each
    set, or each cluster's sets, repeated as often as drawn): the resample's tie-group totals are the
    draw counts through one sparse product, and this checks them against the sets themselves."""
    from a2c.metrics.bootstrap import resample_counts

    g = _groups(items)
    ids = np.arange(len(items)) // 2 if clustered else None  # two sets per question
    units = len(items) if ids is None else int(ids.max()) + 1
    aurocs, prrs = bootstrap(g, replicates=20, seed=seed, clusters=ids)
    counts = np.concatenate(list(resample_counts(units, 20, seed))).astype(int)
    for r in range(20):
        times = counts[r] if ids is None else counts[r][ids]
        drawn = Groups.of(*(np.repeat(column, times) for column in (g.scores, g.answers, g.accurate)))
        positives = int(drawn.accurate.sum())
        if positives == 0 or positives == int(drawn.answers.sum()):
            assert np.isnan(aurocs[r]) and np.isnan(prrs[r])
            continue
        scores, labels = _per_answer(drawn)
        assert aurocs[r] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
        if len(np.unique(drawn.scores[drawn.answers > 0])) > 1:  # one score for all: PRR 0/0 or 0
            assert prrs[r] == pytest.approx(prediction_rejection_ratio(drawn), abs=1e-9)


def test_replicates_are_exact_when_a_resample_holds_more_answers_than_float32_counts_exactly():
    """Sets of some three million answers each, in two tie groups: a group's sums pass 2**24, where float32
    would round them, so the product runs in float64, and each replicate is its resample's AUROC and PRR."""
    from a2c.metrics.bootstrap import resample_counts
    from a2c.metrics.signal import FLOAT32_EXACT, auroc

    rng = np.random.default_rng(5)
    answers = 3_000_001 + 2 * rng.integers(0, 1000, 8)  # odd: float32 spacing above 2**24 is 2
    accurate = (answers * rng.random(8)).astype(np.int64) | 1
    g = Groups.of(np.array([0.2, 0.7] * 4), answers, accurate)
    assert 8 * int(answers.max()) >= FLOAT32_EXACT
    aurocs, prrs = bootstrap(g, replicates=30, seed=2)
    counts = np.concatenate(list(resample_counts(8, 30, 2))).astype(int)
    checked = 0
    for r in range(30):
        drawn = Groups.of(*(np.repeat(column, counts[r]) for column in (g.scores, g.answers, g.accurate)))
        if len(np.unique(drawn.scores)) > 1:
            assert aurocs[r] == pytest.approx(auroc(drawn), rel=1e-13)
            assert prrs[r] == pytest.approx(prediction_rejection_ratio(drawn), rel=1e-13)
            checked += 1
    assert checked > 20


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 5000), min_size=1, max_size=6))
def test_the_kept_harmonic_table_gives_the_floats_a_fresh_one_would(sizes):
    """Every chunk of every interval asks for H[0..n]; the table is kept and extended, so whatever the
    order of sizes asked, each answer is bit for bit the cumulative sum made for that n alone."""
    from a2c.metrics import signal as signal_module

    signal_module._HARMONIC = np.zeros(1)
    for n in sizes:
        fresh = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])
        kept = signal_module._harmonic(n)
        assert kept.shape == (n + 1,) and np.array_equal(kept, fresh)
    assert len(signal_module._HARMONIC) > max(sizes)
