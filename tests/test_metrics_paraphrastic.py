import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.metrics import (
    min_paraphrastic_consistency,
    paraphrastic_accuracy,
    paraphrastic_consistency,
    proportion_of_variance_attributable_to_paraphrasing,
    variance_attributable_to_paraphrasing,
)

BUCKETS = [[1, 1], [1, 0], [0, 0, 0, 1]]  # θ = 1, 1/2, 1/4

equal_buckets = st.integers(1, 6).flatmap(
    lambda size: st.lists(st.lists(st.integers(0, 1), min_size=size, max_size=size), min_size=1, max_size=12)
)
any_buckets = st.lists(st.lists(st.booleans(), min_size=1, max_size=8), min_size=1, max_size=12)


def test_hand_worked_values():
    vap = (0 + 0.25 + 0.1875) / 3
    assert variance_attributable_to_paraphrasing(BUCKETS) == pytest.approx(vap)
    assert paraphrastic_consistency(BUCKETS) == pytest.approx(1 - 2 * vap)
    accuracy = (1 + 0.5 + 0.25) / 3
    assert paraphrastic_accuracy(BUCKETS) == pytest.approx(accuracy)
    assert proportion_of_variance_attributable_to_paraphrasing(BUCKETS) == pytest.approx(
        vap / (accuracy * (1 - accuracy))
    )
    assert min_paraphrastic_consistency(0.5) == 0.5
    assert min_paraphrastic_consistency(1.0) == 1.0


@given(any_buckets)
def test_pc_is_the_probability_two_phrasings_agree_on_correctness(buckets):
    # draw a bucket uniformly, then two phrasings of it independently (with replacement)
    per_bucket = [np.mean([a == b for a, b in itertools.product(marks, repeat=2)]) for marks in buckets]
    assert paraphrastic_consistency(buckets) == pytest.approx(np.mean(per_bucket))


@given(equal_buckets)
def test_law_of_total_variance(buckets):
    pooled = np.array(buckets, dtype=float).ravel()
    theta = np.array(buckets, dtype=float).mean(axis=1)
    vap = variance_attributable_to_paraphrasing(buckets)
    assert vap + theta.var() == pytest.approx(pooled.var(), abs=1e-12)
    pvap = proportion_of_variance_attributable_to_paraphrasing(buckets)
    if pooled.var() == 0:
        assert pvap is None
    else:
        assert pvap == pytest.approx(vap / pooled.var())
        assert 0.0 <= pvap <= 1.0 + 1e-12


@given(any_buckets, st.lists(st.floats(0.01, 10.0), min_size=12, max_size=12))
def test_pc_respects_its_lower_bound(buckets, raw_weights):
    weights = raw_weights[: len(buckets)]
    for w in (None, weights):
        accuracy = paraphrastic_accuracy(buckets, w)
        assert paraphrastic_consistency(buckets, w) >= min_paraphrastic_consistency(accuracy) - 1e-12


def test_bound_is_reached_when_all_variance_is_within_buckets():
    buckets = [[1, 0], [0, 1], [1, 0, 1, 0]]  # every bucket at θ = 1/2
    assert paraphrastic_consistency(buckets) == pytest.approx(min_paraphrastic_consistency(0.5))
    assert proportion_of_variance_attributable_to_paraphrasing(buckets) == pytest.approx(1.0)


def test_weights_act_like_repeating_buckets():
    weighted = paraphrastic_consistency(BUCKETS, weights=[2, 1, 1])
    repeated = paraphrastic_consistency([BUCKETS[0], *BUCKETS])
    assert weighted == pytest.approx(repeated)
    assert weighted != pytest.approx(paraphrastic_consistency(BUCKETS))
    assert paraphrastic_accuracy(BUCKETS, [0, 1, 0]) == 0.5
    assert proportion_of_variance_attributable_to_paraphrasing(BUCKETS, [2, 1, 1]) == pytest.approx(
        proportion_of_variance_attributable_to_paraphrasing([BUCKETS[0], *BUCKETS])
    )


@pytest.mark.parametrize(
    ("buckets", "weights", "message"),
    [
        ([], None, "no buckets"),
        ([[1], []], None, "bucket 1 is empty"),
        ([[1, 2]], None, "other than 0/1"),
        ([[1], [0]], [1.0], "one value per bucket"),
        ([[1], [0]], [1.0, -1.0], "non-negative"),
        ([[1], [0]], [0.0, 0.0], "not all zero"),
    ],
)
def test_bad_input(buckets, weights, message):
    with pytest.raises(ValueError, match=message):
        paraphrastic_consistency(buckets, weights)


def test_pvap_undefined_without_variance_and_bound_domain():
    assert proportion_of_variance_attributable_to_paraphrasing([[1, 1], [1]]) is None
    with pytest.raises(ValueError, match="outside"):
        min_paraphrastic_consistency(1.5)
