"""Paired bootstrap interval of a mean difference: hand-checkable cases, dropping of undefined pairs,
coverage on synthetic data with a known effect, and the resampling helper shared with `signal`."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.metrics import PairedDifference, bootstrap, paired_difference_ci
from a2c.metrics.bootstrap import percentile_interval, resample_columns, resample_counts


def test_resample_counts_are_seeded_draws_with_replacement():
    chunks = list(resample_counts(5, 600, seed=7, chunk=256))
    assert [c.shape for c in chunks] == [(256, 5), (256, 5), (88, 5)]
    counts = np.concatenate(chunks)
    assert (counts.sum(axis=1) == 5).all() and (counts >= 0).all()
    assert np.array_equal(counts, np.concatenate(list(resample_counts(5, 600, seed=7))))
    assert not np.array_equal(counts, np.concatenate(list(resample_counts(5, 600, seed=8))))
    # each unit is drawn once per resample on average
    assert counts.mean(axis=0) == pytest.approx(np.ones(5), abs=0.1)


def _fresh_draws(n: int, replicates: int, seed: int) -> np.ndarray:
    """What numpy's seeded multinomial gives when nothing is kept between calls."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=replicates).astype(np.float64)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(1, 700), st.integers(0, 3)), min_size=1,
                max_size=6), st.sampled_from([200, 10**9]), st.sampled_from([64, 2**21]))
def test_kept_draws_are_the_fresh_draws_in_any_call_order(calls, budget, per_pass):
    """Shorter, longer, repeated and interleaved (n, seed) calls, with a budget that evicts and one that
    keeps everything, drawn a few rows at a time or 256: each gives exactly the rows of a fresh seeded
    draw."""
    bootstrap._DRAWN.clear()
    old, bootstrap.CACHE_BYTES = bootstrap.CACHE_BYTES, budget
    old_pass, bootstrap.PASS_ELEMENTS = bootstrap.PASS_ELEMENTS, per_pass
    try:
        for n, replicates, seed in calls:
            kept = np.concatenate(list(resample_counts(n, replicates, seed)))
            assert np.array_equal(kept, _fresh_draws(n, replicates, seed))
        assert sum(d.rows.nbytes for d in bootstrap._DRAWN.values()) <= budget
    finally:
        bootstrap.CACHE_BYTES, bootstrap.PASS_ELEMENTS = old, old_pass
        bootstrap._DRAWN.clear()


def test_wide_units_get_fewer_rows_per_pass():
    """A pass's arrays stay near `PASS_ELEMENTS` numbers: 100,000 units at 2**21 are 20 rows, not 256."""
    assert [len(c) for c in resample_counts(100_000, 45, seed=3)] == [20, 20, 5]
    assert [len(c) for c in resample_counts(10, 300, seed=3, width=2**20)] == [2] * 150
    bootstrap._DRAWN.clear()


def test_draws_are_kept_in_one_byte_per_count():
    """Each resample's counts sum to n, so at n ≤ 255 they fit a byte; larger n widen only if a count does."""
    bootstrap._DRAWN.clear()
    list(resample_counts(1000, 300, seed=1))
    assert bootstrap._DRAWN[(1000, 1)].rows.dtype == np.uint8
    bootstrap._DRAWN.clear()


def test_percentile_interval_ignores_undefined_replicates():
    values = np.array([math.nan, *range(101)], dtype=float)
    assert percentile_interval(values, 0.9) == pytest.approx((5.0, 95.0))
    assert percentile_interval(np.array([1.0, math.nan]), 0.95) is None


def test_constant_difference_gives_a_point_interval():
    result = paired_difference_ci([0.1, 0.2, 0.3, 0.4], [0.3, 0.4, 0.5, 0.6])
    assert result.mean_difference == pytest.approx(0.2)
    assert result.low == pytest.approx(0.2) and result.high == pytest.approx(0.2)
    assert result.excludes_zero and result.defined
    assert (result.n, result.dropped, result.resamples, result.seed, result.level) == (4, 0, 2000, 0, 0.95)


def test_interval_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(1)
    before = rng.random(40)
    after = before + rng.normal(0.05, 0.2, 40)
    first = paired_difference_ci(before, after, seed=3)
    assert first == paired_difference_ci(before, after, seed=3)
    assert first != paired_difference_ci(before, after, seed=4)
    assert first.mean_difference == pytest.approx(float(np.mean(after - before)))
    assert first.low < first.mean_difference < first.high
    # the resampled means spread like the standard error: the 95% interval is about ±1.96 SE wide
    se = np.std(after - before) / math.sqrt(40)
    assert (first.high - first.low) / (2 * 1.96 * se) == pytest.approx(1.0, abs=0.15)
    narrow = paired_difference_ci(before, after, seed=3, level=0.5)
    assert first.low < narrow.low < narrow.high < first.high


def test_undefined_pairs_are_dropped_and_counted():
    before = [0.1, None, 0.3, math.nan, 0.5, 0.6]
    after = [0.2, 0.4, None, 0.5, 0.7, 0.9]
    result = paired_difference_ci(before, after)
    assert (result.n, result.dropped) == (3, 3)
    assert result.mean_difference == pytest.approx((0.1 + 0.2 + 0.3) / 3)


@pytest.mark.parametrize(("before", "after"), [([], []), ([0.3], [0.5]), ([0.3, None], [0.5, 0.1])])
def test_fewer_than_two_pairs_are_undefined_never_nan(before, after):
    result = paired_difference_ci(before, after)
    assert (result.mean_difference, result.low, result.high) == (None, None, None)
    assert not result.defined and not result.excludes_zero
    assert isinstance(result, PairedDifference)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference_ci([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        paired_difference_ci([1.0, math.inf], [1.0, 2.0])
    with pytest.raises(ValueError, match="level"):
        paired_difference_ci([1.0, 2.0], [1.0, 2.0], level=1.0)
    with pytest.raises(ValueError, match="resamples"):
        paired_difference_ci([1.0, 2.0], [1.0, 2.0], resamples=1)


def test_coverage_with_a_known_effect_and_false_alarms_without_one():
    # 200 synthetic studies of 60 paired questions. With a true mean difference of 0.3 the 95% interval
    # should cover 0.3 about 95% of the time (the percentile bootstrap runs a little short at n = 60);
    # with no effect it should exclude 0 about 5% of the time. 500 resamples per interval instead of the
    # default 2000 keep this under ~2 s; the coverage hardly depends on it (the interval ends move by
    # Monte Carlo noise of a few per cent of their width).
    rng = np.random.default_rng(0)
    studies, n = 200, 60
    before = rng.normal(0.0, 1.0, (studies, n))
    effect = before + 0.3 + rng.normal(0.0, 1.0, (studies, n))
    null = before + rng.normal(0.0, 1.0, (studies, n))
    with_effect = [paired_difference_ci(before[k], effect[k], resamples=500, seed=k) for k in range(studies)]
    without = [paired_difference_ci(before[k], null[k], resamples=500, seed=k) for k in range(studies)]
    covered = sum(r.low <= 0.3 <= r.high for r in with_effect)
    alarms = sum(r.excludes_zero for r in without)
    assert 0.88 <= covered / studies <= 0.99
    assert alarms / studies <= 0.12


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_resample_columns_are_the_same_resamples_transposed(dtype):
    rows = np.concatenate(list(resample_counts(700, 300, seed=9)))
    parts = list(resample_columns(700, 300, seed=9, dtype=dtype, width=2**14))
    assert [p.shape for p in parts] == [(700, 128), (700, 128), (700, 44)]  # 2**21 // 2**14 resamples a pass
    assert all(p.dtype == dtype and p.flags.c_contiguous for p in parts)
    assert np.array_equal(np.concatenate(parts, axis=1), rows.T)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.just(math.nan), st.floats(-5, 5)),
                          st.one_of(st.none(), st.just(math.nan), st.floats(-5, 5))), max_size=30),
       st.booleans())
def test_defined_pairs_counts_the_pairs_the_paired_interval_keeps(pairs, as_arrays):
    from a2c.metrics.bootstrap import defined_pairs

    before, after = [b for b, _ in pairs], [a for _, a in pairs]
    if as_arrays:  # the summary's columns: NaN where undefined
        count = defined_pairs(np.array([math.nan if b is None else b for b in before], dtype=float),
                              np.array([math.nan if a is None else a for a in after], dtype=float))
    else:
        count = defined_pairs(before, after)
    assert count == paired_difference_ci(before, after, resamples=2).n
