import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.common.errors import A2CError
from a2c.metrics import (
    ContrastCounts,
    InvalidCountsError,
    consistency_bounds,
    consistency_distribution,
    contrast_set_scores,
    cumulative_mass,
    relative_consistency,
    relative_consistency_difference,
)


def no_full_row(rows: int, b: int, k: int) -> int:
    """G(m, b, k) of the paper, written out here independently of the library."""
    return sum(
        (-1) ** r * math.comb(rows, r) * math.comb((rows - r) * b, k - r * b)
        for r in range(min(rows, k // b) + 1)
    )


def general_mass(n: int, a: int, c: int, b: int) -> int:
    return math.comb(n, c) * no_full_row(n - c, b, a - c * b)


def exact_rc(n: int, a: int, c: int, b: int = 2) -> Fraction:
    c_min = max(0, a - n * (b - 1))
    return Fraction(sum(general_mass(n, a, ci, b) for ci in range(c_min, c + 1)), math.comb(n * b, a))


@pytest.mark.parametrize(
    ("n", "a", "c", "expected"),
    [(5, 4, 2, 1.0), (5, 7, 2, 2 / 3), (5, 7, 3, 1.0), (5, 8, 3, 8 / 9), (5, 8, 4, 1.0)],
)
def test_worked_values_five_bundles(n, a, c, expected):
    assert relative_consistency(n, a, c) == pytest.approx(expected, abs=1e-12)


def test_worked_values_hundred_bundles():
    # the paper's M1 (65% accuracy, 45% consistency) beats M2 (75%, 55%) on RC
    assert round(relative_consistency(100, 130, 45), 3) == 0.930
    assert round(relative_consistency(100, 150, 55), 3) == 0.371
    gap = relative_consistency_difference(ContrastCounts(100, 130, 45), ContrastCounts(100, 150, 55))
    assert gap == pytest.approx(0.930390 - 0.370670, abs=1e-5)


def test_bounds():
    assert consistency_bounds(5, 7) == (2, 3)
    assert consistency_bounds(5, 3) == (0, 1)
    assert consistency_bounds(4, 10, 3) == (2, 3)
    assert consistency_bounds(4, 0, 3) == (0, 0)


def brute_force_counts(n: int, b: int) -> dict[tuple[int, int], int]:
    counts: dict[tuple[int, int], int] = {}
    for pattern in itertools.product((0, 1), repeat=n * b):
        a = sum(pattern)
        c = sum(all(pattern[i * b : (i + 1) * b]) for i in range(n))
        counts[(a, c)] = counts.get((a, c), 0) + 1
    return counts


@pytest.mark.parametrize(("n", "b"), [(1, 2), (2, 2), (3, 2), (5, 2), (7, 2), (1, 3), (2, 3), (3, 3), (4, 3)])
def test_formula_equals_brute_force_enumeration(n, b):
    counts = brute_force_counts(n, b)
    for a in range(n * b + 1):
        achievable = sorted(c for (aa, c) in counts if aa == a)
        c_min, c_max = consistency_bounds(n, a, b)
        assert achievable == list(range(c_min, c_max + 1))
        dist = consistency_distribution(n, a, b)
        assert list(dist) == achievable
        total = sum(counts[(a, c)] for c in achievable)
        assert total == math.comb(n * b, a)
        running = 0
        for c in achievable:
            running += counts[(a, c)]
            assert dist[c] == Fraction(counts[(a, c)], total)
            assert cumulative_mass(n, a, c, b) == running
            assert relative_consistency(n, a, c, b) == float(Fraction(running, total))


@given(n=st.integers(1, 40), data=st.data())
def test_bundle_of_two_closed_form_equals_general_formula(n, data):
    a = data.draw(st.integers(0, 2 * n))
    c_min, c_max = consistency_bounds(n, a)
    dist = consistency_distribution(n, a, 2)
    total = math.comb(2 * n, a)
    for c in range(c_min, c_max + 1):
        closed = math.comb(n, c) * math.comb(n - c, a - 2 * c) * 2 ** (a - 2 * c)
        assert closed == general_mass(n, a, c, 2)
        assert dist[c] * total == closed


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), b=st.integers(3, 6), data=st.data())
def test_larger_bundles_match_the_papers_inclusion_exclusion(n, b, data):
    a = data.draw(st.integers(0, n * b))
    total = math.comb(n * b, a)
    for c, p in consistency_distribution(n, a, b).items():
        assert p * total == general_mass(n, a, c, b)


@given(n=st.integers(1, 30), b=st.integers(2, 5), data=st.data())
def test_distribution_sums_to_one_and_rc_is_its_cdf(n, b, data):
    a = data.draw(st.integers(0, n * b))
    dist = consistency_distribution(n, a, b)
    assert sum(dist.values()) == 1
    assert all(p > 0 for p in dist.values())
    running = Fraction(0)
    previous = -1.0
    for c, p in dist.items():
        running += p
        rc = relative_consistency(n, a, c, b)
        assert rc == float(running)  # correctly rounded from the exact fraction
        assert rc >= previous
        previous = rc
    assert previous == 1.0


@settings(max_examples=25, deadline=None)
@given(n=st.integers(200, 1500), alpha=st.floats(0.05, 0.95), gamma=st.floats(0.0, 1.0))
def test_large_sets_match_the_exact_fraction_on_both_summation_sides(n, alpha, gamma):
    a = round(2 * n * alpha)
    c_min, c_max = consistency_bounds(n, a)
    c = c_min + round(gamma * (c_max - c_min))
    mu = sum(math.comb(n, ci) * math.comb(n - ci, a - 2 * ci) << (a - 2 * ci) for ci in range(c_min, c + 1))
    assert cumulative_mass(n, a, c) == mu
    assert relative_consistency(n, a, c) == float(Fraction(mu, math.comb(2 * n, a)))


def test_bundle_size_three_uses_inclusion_exclusion():
    assert relative_consistency(10, 17, 5, 3) == 1.0
    for c in range(0, 6):
        assert relative_consistency(10, 17, c, 3) == float(exact_rc(10, 17, c, 3))


def test_difference_keeps_gaps_that_float_subtraction_loses():
    first, second = ContrastCounts(100, 100, 49), ContrastCounts(100, 100, 48)
    naive = relative_consistency(100, 100, 49) - relative_consistency(100, 100, 48)
    exact = exact_rc(100, 100, 49) - exact_rc(100, 100, 48)
    assert naive == 0.0  # both RCs round to 1.0
    assert exact > 0
    assert relative_consistency_difference(first, second) == float(exact)
    assert relative_consistency_difference(second, first) == -float(exact)


def test_difference_across_bundle_sizes_and_set_sizes():
    first, second = ContrastCounts(10, 17, 4, 3), ContrastCounts(40, 50, 12)
    expected = exact_rc(10, 17, 4, 3) - exact_rc(40, 50, 12)
    assert relative_consistency_difference(first, second) == float(expected)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((5, 7, 1), r"n_consistent=1 is below c_min=2"),
        ((5, 7, 4), r"n_consistent=4 exceeds c_max=3"),
        ((5, 11, 5), r"n_correct=11 exceeds n_bundles\*bundle_size=10"),
        ((5, -1, 0), r"n_correct=-1 is negative"),
        ((5, 4, -1), r"n_consistent=-1 is negative"),
        ((-2, 4, 1), r"n_bundles=-2 is negative"),
        ((0, 0, 0), r"n_bundles=0"),
        ((5, 4, 1, 1), r"bundle_size=1 is below 2"),
        ((5, 4.0, 1), r"n_correct must be an integer count"),
        ((5, True, 0), r"n_correct must be an integer count"),
    ],
)
def test_invalid_counts_name_the_bound(args, message):
    with pytest.raises(ValueError, match=message) as info:
        relative_consistency(*args)
    assert isinstance(info.value, InvalidCountsError)
    assert isinstance(info.value, A2CError)


def test_invalid_counts_in_difference_and_distribution():
    with pytest.raises(ValueError, match="c_max"):
        relative_consistency_difference(ContrastCounts(5, 7, 4), ContrastCounts(5, 7, 2))
    with pytest.raises(ValueError, match="exceeds"):
        consistency_distribution(3, 7)


def test_contrast_set_scores_from_raw_predictions():
    bundle_ids = ["q1", "q1", "q2", "q2", "q3", "q3"]
    labels = ["yes", "no", "yes", "no", "yes", "no"]
    predictions = ["yes", "no", "yes", "yes", "no", "yes"]
    scores = contrast_set_scores(predictions, labels, bundle_ids)
    assert (scores.n_bundles, scores.n_instances, scores.n_correct, scores.n_consistent) == (3, 6, 3, 1)
    assert scores.accuracy == 0.5
    assert scores.consistency == pytest.approx(1 / 3)
    assert scores.bundle_size == 2
    assert scores.relative_consistency == float(exact_rc(3, 3, 1))


def test_contrast_set_scores_mixed_bundle_sizes_report_no_rc():
    scores = contrast_set_scores([1, 1, 1, 0, 1], [1, 1, 1, 1, 1], ["a", "a", "a", "b", "b"])
    assert (scores.n_correct, scores.n_consistent) == (4, 1)
    assert scores.accuracy == 0.8 and scores.consistency == 0.5
    assert scores.relative_consistency is None and scores.bundle_size is None


def test_contrast_set_scores_bad_input():
    with pytest.raises(ValueError, match="same length"):
        contrast_set_scores([1, 0], [1], ["a", "a"])
    with pytest.raises(ValueError, match="at least one instance"):
        contrast_set_scores([], [], [])
    singles = contrast_set_scores([1, 0], [1, 1], ["a", "b"])
    assert singles.relative_consistency is None and singles.consistency == 0.5
