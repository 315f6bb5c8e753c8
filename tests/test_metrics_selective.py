"""Selective prediction, calibration maps and the risk-controlled threshold: hand-computed values, the
invariances they must have, and (slow) a simulation of the Learn-then-Test guarantee."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from a2c.metrics.calibration_maps import FittedMap, fit_map
from a2c.metrics.risk_control import binomial_p_value, learn_then_test, threshold_grid, upper_risk
from a2c.metrics.selective import (
    aurc,
    coverage_at_risk,
    estimate,
    excess_aurc,
    expected_calibration_error,
    oracle_aurc,
    paired_difference,
    risk_coverage,
    selective_accuracy,
)

CONF, CORRECT = [0.9, 0.8, 0.3, 0.1], [1, 0, 1, 0]


def test_risk_coverage_and_aurc_by_hand():
    coverage, risk = risk_coverage(CONF, CORRECT)
    assert coverage == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert risk == pytest.approx([0, 1 / 2, 1 / 3, 1 / 2])  # errors among the k most confident
    assert aurc(CONF, CORRECT) == pytest.approx((0 + 1 / 2 + 1 / 3 + 1 / 2) / 4)  # 1/3
    # the oracle answers both correct ones first: risks 0, 0, 1/3, 1/2
    assert oracle_aurc(CORRECT) == pytest.approx(5 / 24)
    assert excess_aurc(CONF, CORRECT) == pytest.approx(1 / 3 - 5 / 24)
    assert excess_aurc([0.1, 0.2, 0.9, 0.8], [0, 0, 1, 1]) == pytest.approx(0)


def test_a_tie_is_the_expectation_over_its_orders():
    # one confidence for all: every coverage has the overall risk in expectation
    _, risk = risk_coverage([0.5] * 4, [1, 0, 0, 0])
    assert risk == pytest.approx([0.75] * 4) and aurc([0.5] * 4, [1, 0, 0, 0]) == pytest.approx(0.75)
    # a tie of two (one right) above a wrong one: answering one of the tie is wrong half the time
    assert risk_coverage([0.7, 0.7, 0.2], [1, 0, 0])[1] == pytest.approx([1 / 2, 1 / 2, 2 / 3])


def test_selective_accuracy_and_coverage_at_risk_by_hand():
    assert selective_accuracy(CONF, CORRECT, 0.25) == 1.0
    assert selective_accuracy(CONF, CORRECT, 0.5) == 0.5
    assert selective_accuracy(CONF, CORRECT, 0.6) == pytest.approx(2 / 3)  # ⌈0.6·4⌉ = 3 answered
    assert coverage_at_risk(CONF, CORRECT, 0.1) == 0.25
    assert coverage_at_risk(CONF, CORRECT, 0.4) == 0.75  # the largest coverage within, not the first
    assert coverage_at_risk(CONF, CORRECT, 0.5) == 1.0
    assert coverage_at_risk([0.9, 0.1], [0, 1], 0.2) == 0.0  # even the most confident is wrong


def test_ece_of_calibrated_and_miscalibrated_scores():
    # each bin's mean confidence equals its accuracy: ECE 0
    conf = [0.25] * 4 + [0.75] * 4
    correct = [1, 0, 0, 0, 1, 1, 1, 0]  # one of four, three of four
    assert expected_calibration_error(conf, correct, bins=2) == pytest.approx(0)
    # overconfident: 0.9 said, half right, whatever the bins
    for bins in (1, 2, 5):
        assert expected_calibration_error([0.9] * 10, [1, 0] * 5, bins=bins) == pytest.approx(0.4)
    # equal-mass bins of 2 sorted by confidence: |0.4 − 1| and |1.7 − 1| over 4 units
    assert expected_calibration_error([0.1, 0.3, 0.8, 0.9], [0, 1, 0, 1], bins=2) == pytest.approx(1.3 / 4)
    assert expected_calibration_error([0.1, 0.9], [0, 1], bins=10) == pytest.approx(0.1)  # 2 bins at most


@pytest.mark.parametrize(("call", "message"), [
    (lambda: aurc([], []), "no units"),
    (lambda: aurc([0.1, 0.2], [1]), "differ in length"),
    (lambda: aurc([math.nan, 0.2], [1, 0]), "finite"),
    (lambda: aurc([0.1, 0.2], [2, 0]), "0/1"),
    (lambda: expected_calibration_error([1.5], [1]), r"\[0, 1\]"),
    (lambda: expected_calibration_error([0.5], [1], bins=0), "bins"),
    (lambda: selective_accuracy([0.5], [1], 0), "coverage"),
    (lambda: coverage_at_risk([0.5], [1], 1.5), "max_risk"),
])
def test_bad_inputs_are_refused_naming_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()


units = st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.booleans()), min_size=1, max_size=40)


@settings(max_examples=80, deadline=None)
@given(units, st.randoms(use_true_random=False))
def test_invariances(pairs, rnd):
    conf = np.array([c for c, _ in pairs])
    correct = np.array([int(y) for _, y in pairs])
    value = aurc(conf, correct)
    assert 0 <= value <= 1 and excess_aurc(conf, correct) >= -1e-12
    # a strictly increasing transform (one that merges no two floats) keeps the order, so the figures
    assert aurc(np.sqrt(conf), correct) == pytest.approx(value)
    # the units' order is no information
    order = list(range(len(conf)))
    rnd.shuffle(order)
    assert aurc(conf[order], correct[order]) == pytest.approx(value)
    assert expected_calibration_error(conf[order], correct[order], bins=1) == \
        pytest.approx(expected_calibration_error(conf, correct, bins=1))
    ece = expected_calibration_error(conf, correct, bins=3)
    assert 0 <= ece <= 1
    # a looser risk bound never covers less
    assert coverage_at_risk(conf, correct, 0.1) <= coverage_at_risk(conf, correct, 0.3)
    # risk at full coverage is the overall error rate
    assert risk_coverage(conf, correct)[1][-1] == pytest.approx(1 - correct.mean())


def test_bootstrap_intervals_are_seeded_and_paired():
    rng = np.random.default_rng(1)
    conf = rng.random(60)
    correct = (rng.random(60) < conf).astype(int)
    first = estimate(aurc, conf, correct, replicates=200, seed=3)
    assert first == estimate(aurc, conf, correct, replicates=200, seed=3)
    assert first.low is not None and first.high is not None and first.low <= first.value <= first.high
    same = paired_difference(aurc, conf, conf, correct, replicates=200)
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0)  # the same resamples on both sides
    worse = paired_difference(aurc, conf, -conf, correct, replicates=200)
    assert worse.low is not None and worse.low > 0  # reversing a good score raises AURC, clearly


# -- calibration maps --------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5, allow_nan=False), st.booleans()), min_size=2, max_size=40),
       st.sampled_from(["isotonic", "platt"]))
def test_calibration_maps_are_monotone_probabilities(pairs, method):
    scores = np.array([s for s, _ in pairs])
    fitted = fit_map(method, scores, [int(y) for _, y in pairs])
    grid = np.linspace(-10, 10, 201)
    predicted = fitted.predict(grid)
    assert np.all(np.diff(predicted) >= -1e-12) and np.all((predicted >= 0) & (predicted <= 1))
    assert FittedMap.model_validate(fitted.model_dump()).predict(grid) == pytest.approx(predicted)


def test_maps_fit_what_they_are_given():
    isotonic = fit_map("isotonic", [0, 1, 2, 3], [0, 1, 0, 1])
    assert isotonic.predict([0, 1.5, 3, 99]) == pytest.approx([0, 0.5, 1, 1])  # pooled middle, clipped ends
    platt = fit_map("platt", np.r_[np.zeros(50), np.ones(50)], np.r_[np.zeros(40), np.ones(10), np.zeros(10),
                                                                      np.ones(40)])
    assert platt.predict([0, 1]) == pytest.approx([0.2, 0.8], abs=0.01)
    backwards = fit_map("platt", [0, 0, 1, 1], [1, 1, 0, 0])  # a score that ranks the wrong way round
    assert backwards.slope == 0 and backwards.predict([0, 1]) == pytest.approx([0.5, 0.5])


@pytest.mark.parametrize("bad", [
    {"kind": "isotonic", "x": [0, 1], "y": [0.8, 0.2]},
    {"kind": "isotonic", "x": [1, 0], "y": [0.2, 0.8]},
    {"kind": "isotonic", "x": [0], "y": [1.5]},
    {"kind": "isotonic", "x": [], "y": []},
    {"kind": "platt", "slope": -1.0},
    {"kind": "sigmoid"},
])
def test_a_map_that_is_not_a_monotone_probability_is_refused(bad):
    with pytest.raises(ValidationError):
        FittedMap.model_validate(bad)


# -- risk control ------------------------------------------------------------------------------------------

def test_binomial_p_value():
    assert binomial_p_value(0, 10, 0.2) == pytest.approx(0.8**10)
    assert binomial_p_value(1, 10, 0.2) == pytest.approx(0.8**10 + 10 * 0.2 * 0.8**9)
    assert binomial_p_value(0, 0, 0.2) == 1.0


def test_learn_then_test_by_hand():
    # 20 units at confidence 0.9, all right; 20 at 0.5, half right
    conf = [0.9] * 20 + [0.5] * 20
    correct = [1] * 20 + [1, 0] * 10
    passed = learn_then_test(conf, correct, [0.9, 0.5], max_risk=0.3, delta=0.1)
    assert passed.threshold == 0.9 and (passed.answered, passed.errors) == (20, 0)
    assert passed.tested[0].p_value == pytest.approx(0.7**20)
    assert passed.tested[1].p_value > 0.1  # 10 wrong of 40 is no evidence of a risk below 0.3
    # fixed sequence: a failure stops the testing even if a later threshold would pass
    stopped = learn_then_test(conf, correct, [1.0, 0.9], max_risk=0.3, delta=0.1)
    assert stopped.threshold is None and len(stopped.tested) == 1
    with pytest.raises(ValueError, match="decreasing"):
        learn_then_test(conf, correct, [0.5, 0.9], max_risk=0.3, delta=0.1)


def test_the_grid_starts_where_the_fitting_units_bound_the_risk_tightest():
    # one unit at 0.95 (right), 30 at 0.8 (one wrong), 30 at 0.3 (half wrong): a single right answer bounds
    # the risk loosely, 31 with one wrong tightly, adding 30 half-wrong ones loosens it again
    conf = [0.95] + [0.8] * 30 + [0.3] * 30
    correct = [1] + [1] * 29 + [0] + [1, 0] * 15
    assert threshold_grid(conf, correct, delta=0.1) == [0.8, 0.3]
    assert upper_risk(0, 1, 0.1) == pytest.approx(0.9)  # 1 − δ^(1/n) for no error
    assert threshold_grid([0.4, 0.2], [0, 0], delta=0.1) == [0.2]  # every bound 1: the loosest


@pytest.mark.slow
def test_the_risk_bound_fails_in_at_most_delta_of_1000_simulated_calibrations():
    """Scores s ~ U(0, 1) with P(correct | s) = 0.5 + 0.5 s: answering s ≥ t has risk (1 − t) / 4. Each
    trial fits the map on 400 units, tests on 400 others (as `a2c calibrate --max-risk` does), and
    checks the chosen threshold's true risk; the bound may fail in at most a δ share of trials."""
    max_risk, delta, trials = 0.1, 0.1, 1000
    rng = np.random.default_rng(0)
    grid = np.linspace(0, 1, 2001)
    violations = answered = 0
    for _ in range(trials):
        s = rng.random(800)
        correct = (rng.random(800) < 0.5 + 0.5 * s).astype(int)
        fitted = fit_map("isotonic", s[:400], correct[:400])
        thresholds = threshold_grid(fitted.predict(s[:400]), correct[:400], delta=delta)
        result = learn_then_test(fitted.predict(s[400:]), correct[400:], thresholds, max_risk=max_risk,
                                 delta=delta)
        if result.threshold is None:
            continue
        answered += 1
        # the answered scores are s ≥ the first grid point the map lifts to the threshold
        start = grid[np.argmax(fitted.predict(grid) >= result.threshold)]
        violations += (1 - start) / 4 > max_risk
    assert answered > trials / 2  # reachable (s ≥ 0.6 has risk 0.1): mostly something is answered
    assert violations / trials <= delta
