"""Token-probability signals (`a2c.metrics.whitebox`): values worked by hand, properties that any batch
must keep (a batch's values are its answers' values one by one, in any order), and bad input refused with
the argument and answer named. LM-Polygraph parity is tests/test_whitebox_parity.py."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.metrics import semantic_entropy
from a2c.metrics import whitebox as wb

wse = wb.weighted_semantic_entropy

logprob = st.floats(min_value=-30.0, max_value=0.0, allow_nan=False)
answers = st.lists(st.lists(logprob, min_size=0, max_size=8).map(np.array), min_size=1, max_size=12)


def test_hand_worked_values() -> None:
    lp = [np.log([0.5, 0.25]), np.log([0.1])]
    np.testing.assert_allclose(wb.sequence_log_likelihood(lp), [math.log(0.125), math.log(0.1)])
    np.testing.assert_allclose(wb.maximum_sequence_probability(lp), [math.log(8), math.log(10)])
    np.testing.assert_allclose(wb.log_perplexity(lp), [1.5 * math.log(2), math.log(10)])
    np.testing.assert_allclose(wb.perplexity(lp), [2 ** 1.5, 10.0])
    # top-2 of 0.5 and 0.25 at one position: H = 0.5 ln 2 + 0.25 ln 4 = ln 2 (the tail left out)
    np.testing.assert_allclose(wb.mean_token_entropy([np.log([[0.5, 0.25]])]), [math.log(2)])
    # renormalised: (2/3, 1/3)
    expected = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    np.testing.assert_allclose(wb.mean_token_entropy([np.log([[0.5, 0.25]])], renormalise=True), [expected])
    # CoCoA: MSP ln 8 times mean dissimilarity (0.5 + 0)/2
    np.testing.assert_allclose(wb.cocoa_msp(lp[:1], [np.array([0.5, 1.0])]), [math.log(8) / 4])


def test_semantic_entropy_by_hand() -> None:
    # samples P = 0.4, 0.2 (class 1) and 0.2 (class 5): masses 0.6 and 0.2, normalised 0.75 and 0.25
    lls, ids = [np.log([0.4, 0.2, 0.2])], [np.array([1, 1, 5])]
    h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    np.testing.assert_allclose(wse(lls, ids), [h])
    np.testing.assert_allclose(wse(lls, ids, normalise=False),
                               [-(0.6 * math.log(0.6) + 0.2 * math.log(0.2))])
    mc = -(2 * math.log(0.75) + math.log(0.25)) / 3
    np.testing.assert_allclose(wse(lls, ids, estimator="monte_carlo"), [mc])
    np.testing.assert_allclose(wse(lls, ids, estimator="monte_carlo", normalise=False),
                               [-(2 * math.log(0.6) + math.log(0.2)) / 3])


@given(st.integers(1, 30), st.integers(1, 40))
def test_zero_logprobs_are_certain(length: int, k: int) -> None:
    zeros = [np.zeros(length)]
    assert wb.maximum_sequence_probability(zeros)[0] == 0.0
    assert wb.log_perplexity(zeros)[0] == 0.0
    assert wb.perplexity(zeros)[0] == 1.0
    uniform = [np.full((length, k), -math.log(k))]
    assert wb.mean_token_entropy(uniform)[0] == pytest.approx(math.log(k), abs=1e-12)
    assert wb.mean_token_entropy(uniform, renormalise=True)[0] == pytest.approx(math.log(k), abs=1e-12)


SEQUENCE_MEASURES: list[Callable[[list[np.ndarray]], np.ndarray]] = [
    wb.sequence_log_likelihood, wb.maximum_sequence_probability, wb.log_perplexity, wb.perplexity]


@settings(max_examples=80, deadline=None)
@given(answers, st.randoms(use_true_random=False))
def test_a_batch_is_its_answers_one_by_one_in_any_order(batch: list[np.ndarray], rnd: object) -> None:
    """Empty answers included: they give 0 for sums and NaN for means, and do not shift their neighbours."""
    order = list(range(len(batch)))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    for measure in SEQUENCE_MEASURES:
        whole = measure(batch)
        alone = np.array([measure([a])[0] for a in batch])
        np.testing.assert_allclose(whole, alone, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(measure([batch[i] for i in order]), whole[order], rtol=1e-12, atol=1e-12)
        empty = np.array([len(a) == 0 for a in batch])
        if measure in (wb.log_perplexity, wb.perplexity):
            assert np.isnan(whole).tolist() == empty.tolist()
        else:
            assert (whole[empty] == 0.0).all() and not np.isnan(whole).any()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 6)), min_size=1, max_size=8),
       st.integers(0, 2**32 - 1))
def test_token_entropy_batch_and_padding(shapes: list[tuple[int, int]], seed: int) -> None:
    """Answers of different k in one batch (padded with −inf inside) equal each answer alone; entropy ≥ 0."""
    rng = np.random.default_rng(seed)
    batch = []
    for length, k in shapes:
        x = rng.normal(size=(length, k + 3))
        x = x - np.logaddexp.reduce(x, axis=1, keepdims=True)
        batch.append(np.sort(x, axis=1)[:, ::-1][:, :k])
    for renormalise in (False, True):
        whole = wb.mean_token_entropy(batch, renormalise)
        alone = np.array([wb.mean_token_entropy([a], renormalise)[0] for a in batch])
        np.testing.assert_allclose(whole, alone, rtol=1e-12, atol=1e-12)
        assert (whole[~np.isnan(whole)] >= 0).all()
        assert np.isnan(whole).tolist() == [length == 0 for length, _ in shapes]
    # without renormalising, the tail is left out: giving one more (unlikely) token never lowers the entropy
    wider = [np.concatenate([a, np.full((len(a), 1), -50.0)], axis=1) for a in batch]
    assert (np.nan_to_num(wb.mean_token_entropy(wider)) >= np.nan_to_num(wb.mean_token_entropy(batch))).all()


clusters = st.lists(st.tuples(st.integers(-12, 0), st.integers(0, 3)), min_size=0, max_size=9)


@settings(max_examples=80, deadline=None)
@given(st.lists(clusters, min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_semantic_entropy_properties(questions: list[list[tuple[int, int]]], rnd: object) -> None:
    lls = [np.array([float(v) for v, _ in q]) for q in questions]
    ids = [np.array([c for _, c in q], dtype=np.int64) for q in questions]
    for estimator in ("exact", "monte_carlo"):
        whole = wse(lls, ids, estimator)
        alone = np.array([wse([a], [b], estimator)[0] for a, b in zip(lls, ids, strict=True)])
        np.testing.assert_allclose(whole, alone, rtol=1e-12, atol=1e-12)
        order = list(range(len(lls)))
        rnd.shuffle(order)  # type: ignore[attr-defined]
        np.testing.assert_allclose(wse([lls[i] for i in order], [ids[i] for i in order],
                                                       estimator), whole[order], rtol=1e-12, atol=1e-12)
        # the labels are names only: renaming the classes and shuffling the samples changes nothing
        renamed = [100 - 7 * b for b in ids]
        np.testing.assert_allclose(wse(lls, renamed, estimator), whole,
                                   rtol=1e-12, atol=1e-12)
    exact = wse(lls, ids)
    for value, q_ids in zip(exact, ids, strict=True):
        if len(q_ids) == 0:
            assert math.isnan(value)
            continue
        assert -1e-12 <= value <= math.log(len(set(q_ids.tolist()))) + 1e-12
        if len(set(q_ids.tolist())) == 1:
            assert value == 0.0


@given(st.lists(st.integers(0, 4), min_size=2, max_size=20))
def test_equal_likelihoods_give_the_discrete_semantic_entropy(labels: list[int]) -> None:
    """All P(s|x) equal: the class sizes decide, as in `a2c.metrics.semantic_entropy` (bits; here nats)."""
    value = wse([np.zeros(len(labels))], [np.array(labels)])[0]
    discrete = semantic_entropy(labels)
    assert discrete is not None
    assert value == pytest.approx(discrete * math.log(2), abs=1e-12)


def test_cocoa_is_zero_when_every_sample_agrees_and_nan_without_samples() -> None:
    lp = [np.log([0.3, 0.2]), np.log([0.9])]
    np.testing.assert_array_equal(wb.cocoa_ppl(lp, [np.ones(4), np.ones(2)]), [0.0, 0.0])
    out = wb.cocoa_msp(lp, [np.array([0.0]), np.array([])])
    assert out[0] == pytest.approx(-math.log(0.06)) and math.isnan(out[1])
    # a main answer without tokens has no log-perplexity: NaN, not an error for the whole batch
    out = wb.cocoa_ppl([np.array([]), np.log([0.5])], [np.array([0.5]), np.array([0.0])])
    assert math.isnan(out[0]) and out[1] == pytest.approx(math.log(2))


@pytest.mark.parametrize(("call", "message"), [
    (lambda: wb.maximum_sequence_probability([np.zeros(2), np.array([-1.0, np.nan])]),
     r"token_logprobs\[1\]: nan is not a log-probability"),
    (lambda: wb.log_perplexity([np.array([-0.1]), np.zeros(3), np.array([0.5])]),
     r"token_logprobs\[2\]: 0.5 is not a log-probability"),
    (lambda: wb.perplexity([np.zeros((2, 2))]),
     r"token_logprobs\[0\]: expected a 1-D array, got shape \(2, 2\)"),
    (lambda: wb.sequence_log_likelihood([["a"]]), r"token_logprobs\[0\]: not an array of numbers"),
    (lambda: wb.mean_token_entropy([np.zeros((1, 2)) - 1, np.array([[2.0, 1.0]])]),
     r"topk_logprobs\[1\]: 2.0 is not a log-probability"),
    (lambda: wb.mean_token_entropy([np.log([[0.6, 0.6]])]),
     r"topk_logprobs\[0\]: a position's top-k probabilities sum to 1.2 > 1"),
    (lambda: wb.mean_token_entropy([np.log([[0.5]]), np.array([[-1.0], [-np.inf]])]),
     r"topk_logprobs\[1\]: position 1 has no finite log-probability"),
    (lambda: wb.mean_token_entropy([np.zeros(3)]), r"topk_logprobs\[0\]: expected an L × k array"),
    (lambda: wse([np.zeros(2)], [np.array([0, 1, 1])]),
     r"cluster_ids\[0\]: expected 2 labels \(one per sample\), got shape \(3,\)"),
    (lambda: wse([np.zeros(2)], [np.array([0.0, 1.0])]),
     r"cluster_ids\[0\]: labels must be integers"),
    (lambda: wse([np.zeros(1), np.array([-np.inf])], [[0], [0]]),
     r"log_likelihoods\[1\]: log-likelihoods must be finite"),
    (lambda: wse([np.zeros(1)], [[0], [0]]),
     r"log_likelihoods has 1 questions, cluster_ids 2"),
    (lambda: wse([np.zeros(1)], [[0]], estimator="direct"),  # type: ignore[arg-type]
     r"estimator must be 'exact' or 'monte_carlo', got 'direct'"),
    (lambda: wb.cocoa(np.array([1.0, 2.0]), [np.array([0.5]), np.array([0.2, 1.5])]),
     r"similarities\[1\]: 1.5 is outside \[0, 1\]"),
    (lambda: wb.cocoa(np.array([1.0]), [np.array([0.5]), np.array([0.2])]),
     r"uncertainty has 1 questions, similarities 2"),
    (lambda: wb.cocoa(np.array([[1.0]]), [np.array([0.5])]), r"uncertainty: expected one value per question"),
    (lambda: wb.cocoa(np.array([1.0, np.inf]), [np.array([0.5]), np.array([0.5])]),
     r"uncertainty\[1\]: infinite"),
])
def test_bad_input_names_the_argument_and_answer(call: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
