"""Graph uncertainty measures (Lin et al. 2023) and Kernel Language Entropy against hand-worked spectra of
small graphs, and their properties: permutation invariance, bounds at full and no agreement, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.judges.presets import build_judge
from a2c.metrics import (
    UNCERTAINTY_MEASURES,
    degree_confidence,
    degree_uncertainty,
    eccentricity,
    eccentricity_confidence,
    eigval_laplacian,
    kernel_language_entropy,
    nli_weights,
    num_semantic_sets,
)
from a2c.metrics.uncertainty import MatrixStack
from a2c.qa.measures import chunk_measures, set_measures

T = 0.3  # KLE's default heat-kernel time


def _entropy(*mu: float) -> float:
    return -sum(m * math.log(m) for m in mu)


# -- 2×2: W = [[1, w], [w, 1]] -----------------------------------------------------------------------
# D = (1 + w)·I, so D^{-1/2} W D^{-1/2} = W/(1 + w) has eigenvalues 1 and (1 − w)/(1 + w):
# the normalised Laplacian has 0 and 2w/(1 + w).

def test_two_answers_half_similar():
    s = np.array([[1.0, 0.7], [0.3, 1.0]])  # symmetrised to w = 0.5
    assert eigval_laplacian(s) == pytest.approx(1 + (1 - 2 * 0.5 / 1.5))  # 4/3
    assert degree_uncertainty(s) == pytest.approx(1 - (1.5 + 1.5) / 4)  # (1 − w)/2 = 1/4
    assert degree_confidence(s) == pytest.approx([1.5 / 2, 1.5 / 2])
    # λ = 2/3 < 0.9: both eigenvectors kept, a full orthonormal basis Q; centred rows of Q have
    # ‖q_j − q̄‖² = 1 − 2/n + 1/n = 1/2 each, so U_Ecc = √(n − 1) = 1
    assert eccentricity(s) == pytest.approx(1.0)
    assert eccentricity_confidence(s) == pytest.approx([-math.sqrt(0.5), -math.sqrt(0.5)])
    # L = D − W = [[w, −w], [−w, w]]: eigenvalues 0 and 2w; the heat kernel has the constant diagonal
    # (1 + e)/2 with e = exp(−2tw), so ρ = K/trace has eigenvalues 1/(1 + e) and e/(1 + e)
    e = math.exp(-2 * T * 0.5)
    assert kernel_language_entropy(s) == pytest.approx(_entropy(1 / (1 + e), e / (1 + e)) / math.log(2))


def test_two_very_similar_answers_drop_the_second_eigenvector():
    s = np.array([[1.0, 0.9], [0.9, 1.0]])
    # λ = 1.8/1.9 ≈ 0.947 ≥ 0.9: only the eigenvector of 0, ∝ √d = constant, is kept → both at one point
    assert eccentricity(s) == pytest.approx(0.0, abs=1e-12)
    assert eccentricity_confidence(s) == pytest.approx([0.0, 0.0], abs=1e-12)
    assert eccentricity(s, threshold=0.95) == pytest.approx(1.0)  # a higher cut keeps it again
    assert eigval_laplacian(s) == pytest.approx(2 / 1.9)
    assert num_semantic_sets(s >= 0.5) == 1


# -- 3×3 with a block: answers 0 and 1 identical in meaning, answer 2 alone ----------------------------

BLOCK = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def test_block():
    # D = (2, 2, 1); D^{-1/2} W D^{-1/2} = [[½, ½], [½, ½]] ⊕ [1], eigenvalues 1, 0, 1 → L: 0, 1, 0
    assert eigval_laplacian(BLOCK) == pytest.approx(2.0)  # two meanings
    assert degree_uncertainty(BLOCK) == pytest.approx(1 - 5 / 9)
    assert degree_confidence(BLOCK) == pytest.approx([2 / 3, 2 / 3, 1 / 3])
    # kept: the eigenspace of 0, P = [[½, ½], [½, ½]] ⊕ [1]; it holds the constant vector, so the centred
    # embedding's Gram matrix is (I − J/3) P (I − J/3) = P − J/3: squared row norms 1/6, 1/6, 2/3
    assert eccentricity(BLOCK) == pytest.approx(math.sqrt(1 / 6 + 1 / 6 + 2 / 3))
    assert eccentricity_confidence(BLOCK) == pytest.approx([-math.sqrt(1 / 6), -math.sqrt(1 / 6),
                                                            -math.sqrt(2 / 3)])
    assert num_semantic_sets(BLOCK >= 0.5) == 2
    # L = D − W = [[1, −1], [−1, 1]] ⊕ [0]; K = ½[[1 + e, 1 − e], [1 − e, 1 + e]] ⊕ [1], e = exp(−2t).
    # Unit diagonal: [[1, r], [r, 1]] ⊕ [1] with r = (1 − e)/(1 + e); ρ = that/3: (1 ± r)/3 and 1/3
    e = math.exp(-2 * T)
    r = (1 - e) / (1 + e)
    expected = _entropy((1 + r) / 3, (1 - r) / 3, 1 / 3) / math.log(3)
    assert kernel_language_entropy(BLOCK) == pytest.approx(expected)


# -- 3×3 graded: answers 0 and 1 close (0.8), both loosely like answer 2 (0.4) ---------------------------

GRADED = np.array([[1.0, 0.8, 0.4], [0.8, 1.0, 0.4], [0.4, 0.4, 1.0]])


def test_graded():
    # degrees 2.2, 2.2, 1.8. w = (1, −1, 0)/√2 is an eigenvector of N = D^{-1/2} W D^{-1/2} with eigenvalue
    # (1 − 0.8)/2.2, so L has λ = 1 − 0.2/2.2 = 2/2.2; another is 0; the third from the trace:
    # trace L = 3 − (1/2.2 + 1/2.2 + 1/1.8).
    lam_w = 2 / 2.2
    lam_3 = 3 - (2 / 2.2 + 1 / 1.8) - lam_w  # 0.6263
    assert eigval_laplacian(GRADED) == pytest.approx(1 + (1 - lam_3) + (1 - lam_w))
    assert degree_uncertainty(GRADED) == pytest.approx(1 - 6.2 / 9)
    assert degree_confidence(GRADED) == pytest.approx([2.2 / 3, 2.2 / 3, 1.8 / 3])
    # λ_w = 0.909 ≥ 0.9 is dropped; the kept span is w's orthogonal complement, which holds the constant
    # vector, so as for BLOCK the centred Gram matrix is P − J/3 = I − wwᵀ − J/3: 1/6, 1/6, 2/3
    assert eccentricity(GRADED) == pytest.approx(1.0)
    assert eccentricity_confidence(GRADED) == pytest.approx([-math.sqrt(1 / 6), -math.sqrt(1 / 6),
                                                             -math.sqrt(2 / 3)])
    # with the cut above λ_w every eigenvector is kept: √(n − 1)
    assert eccentricity(GRADED, threshold=0.95) == pytest.approx(math.sqrt(2))
    assert num_semantic_sets(GRADED >= 0.5) == 2


def test_kle_of_a_complete_graph_with_weight_a():
    # L = a(3I − J): eigenvalues 0, 3a, 3a; constant kernel diagonal, so ρ ∝ 1, e, e with e = exp(−3ta)
    a = 0.6
    e = math.exp(-3 * T * a)
    w = np.full((3, 3), a)
    np.fill_diagonal(w, 1.0)
    expected = _entropy(1 / (1 + 2 * e), e / (1 + 2 * e), e / (1 + 2 * e)) / math.log(3)
    assert kernel_language_entropy(w) == pytest.approx(expected)
    assert kernel_language_entropy(w, t=1.0) < kernel_language_entropy(w)  # longer diffusion, lower entropy


def test_nli_weights_score_entailment_1_neutral_half_contradiction_0():
    entail = np.array([[1.0, 0.6], [0.2, 1.0]])
    contra = np.array([[0.0, 0.1], [0.7, 0.0]])
    # one way: 0.6 + ½·0.3 = 0.75; other way: 0.2 + ½·0.1 = 0.25; symmetrised: 0.5
    assert nli_weights(entail, contra) == pytest.approx(np.array([[1.0, 0.5], [0.5, 1.0]]))
    with pytest.raises(ValueError, match="exceed 1"):
        nli_weights(entail, np.array([[0.0, 0.5], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="differ in shape"):
        nli_weights(entail, np.zeros((3, 3)))


def test_num_semantic_sets_takes_components_of_both_way_equivalence():
    eq = np.array([[1, 1, 0, 0],
                   [0, 1, 1, 0],   # 0→1 holds one way only: no edge
                   [0, 1, 1, 0],
                   [0, 0, 0, 1]], dtype=bool)
    assert num_semantic_sets(eq) == 3  # {0}, {1, 2}, {3}
    chain = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=bool)
    assert num_semantic_sets(chain) == 1  # a ~ b ~ c is one component although a ≁ c


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 24).flatmap(lambda n: st.lists(st.booleans(), min_size=n * n, max_size=n * n)),
       st.booleans())
def test_num_semantic_sets_counts_what_scipy_counts(cells, zero_diagonal):
    """The reachability squaring gives scipy's connected components on any graph, diagonal or not."""
    from scipy.sparse.csgraph import connected_components

    n = math.isqrt(len(cells))
    eq = np.array(cells, dtype=bool).reshape(n, n)
    if zero_diagonal:
        np.fill_diagonal(eq, False)
    assert num_semantic_sets(eq) == connected_components(eq & eq.T, directed=False)[0]


# -- properties --------------------------------------------------------------------------------------

PER_SET = [eigval_laplacian, degree_uncertainty, eccentricity, kernel_language_entropy]
PER_ANSWER = [degree_confidence, eccentricity_confidence]


@st.composite
def similarity_matrices(draw, min_n: int = 2, max_n: int = 8) -> np.ndarray:
    """Judge-like matrices: entries in [0, 1] on a 0.05 grid (keeps eigenvalues off the 0.9 cut), 1 on the
    diagonal, not necessarily symmetric."""
    n = draw(st.integers(min_n, max_n))
    grid = draw(st.lists(st.integers(0, 20), min_size=n * n, max_size=n * n))
    s = np.array(grid, dtype=float).reshape(n, n) / 20
    np.fill_diagonal(s, 1.0)
    return s


@settings(max_examples=60, deadline=None)
@given(similarity_matrices(), st.randoms(use_true_random=False))
def test_permuting_answers_permutes_per_answer_values_and_keeps_per_set_ones(s, random):
    order = list(range(len(s)))
    random.shuffle(order)
    p = s[np.ix_(order, order)]
    for f in PER_SET:
        assert f(p) == pytest.approx(f(s), abs=1e-9)
    for f in PER_ANSWER:
        assert f(p) == pytest.approx(f(s)[order], abs=1e-9)
    assert num_semantic_sets(p >= 0.5) == num_semantic_sets(s >= 0.5)


@settings(max_examples=60, deadline=None)
@given(similarity_matrices())
def test_full_agreement_is_least_and_none_is_most_uncertain(s):
    n = len(s)
    ones, identity = np.ones((n, n)), np.eye(n)
    # all answers alike: one set, EigV = 1, Deg = 0, all answers at one point, KLE at its minimum
    assert num_semantic_sets(ones.astype(bool)) == 1
    assert eigval_laplacian(ones) == pytest.approx(1.0)
    assert degree_uncertainty(ones) == pytest.approx(0.0)
    assert eccentricity(ones) == pytest.approx(0.0, abs=1e-9)
    assert degree_confidence(ones) == pytest.approx(np.ones(n))
    # no two alike: n sets, EigV = n, Deg = (n − 1)/n, U_Ecc = √(n − 1), KLE = 1 (ρ = I/n)
    assert num_semantic_sets(identity.astype(bool)) == n
    assert eigval_laplacian(identity) == pytest.approx(n)
    assert degree_uncertainty(identity) == pytest.approx((n - 1) / n)
    assert eccentricity(identity) == pytest.approx(math.sqrt(n - 1))
    assert eccentricity_confidence(identity) == pytest.approx(np.full(n, -math.sqrt(1 - 1 / n)))
    assert kernel_language_entropy(identity) == pytest.approx(1.0)
    # every other matrix lies in between
    tol = 1e-9
    assert 1 <= num_semantic_sets(s >= 0.5) <= n
    assert 1 - tol <= eigval_laplacian(s) <= n + tol
    assert -tol <= degree_uncertainty(s) <= (n - 1) / n + tol
    assert -tol <= eccentricity(s) <= math.sqrt(n - 1) + tol
    assert kernel_language_entropy(ones) - tol <= kernel_language_entropy(s) <= 1 + tol
    assert ((1 / n - tol <= degree_confidence(s)) & (degree_confidence(s) <= 1 + tol)).all()


@pytest.mark.parametrize("f", [*PER_SET, *PER_ANSWER, num_semantic_sets])
def test_fewer_than_two_answers_are_undefined(f):
    assert f(np.ones((1, 1), dtype=bool if f is num_semantic_sets else float)) is None
    assert f(np.zeros((0, 0), dtype=bool if f is num_semantic_sets else float)) is None


@pytest.mark.parametrize("f", [*PER_SET, *PER_ANSWER])
@pytest.mark.parametrize(("bad", "message"), [
    (np.ones((2, 3)), "square"),
    (np.ones(4), "square"),
    (np.array([[1.0, math.nan], [0.5, 1.0]]), "NaN"),
    (np.array([[1.0, math.inf], [0.5, 1.0]]), "NaN or infinite"),
    (np.array([[1.0, 1.5], [0.5, 1.0]]), r"\[0, 1\]"),
    (np.array([[1.0, -0.1], [0.5, 1.0]]), r"\[0, 1\]"),
    (np.array([["a", "b"], ["c", "d"]]), "numbers"),
])
def test_bad_matrices_are_refused(f, bad, message):
    with pytest.raises(ValueError, match=message):
        f(bad)


def test_bad_options_and_degenerate_inputs_are_refused():
    with pytest.raises(ValueError, match="threshold"):
        eccentricity(GRADED, threshold=0.0)
    with pytest.raises(ValueError, match="threshold"):
        eccentricity_confidence(GRADED, threshold=3.0)
    with pytest.raises(ValueError, match="positive"):
        kernel_language_entropy(GRADED, t=0.0)
    with pytest.raises(ValueError, match="positive degree"):
        eigval_laplacian(np.array([[1.0, 0.0], [0.0, 0.0]]))  # answer 1 is unlike even itself
    with pytest.raises(ValueError, match="boolean"):
        num_semantic_sets(GRADED)
    with pytest.raises(ValueError, match="square"):
        num_semantic_sets(np.ones((2, 3), dtype=bool))


def test_registry_declares_statistic_kind_and_orientation():
    assert set(UNCERTAINTY_MEASURES) == {
        "num_semantic_sets", "eigval_laplacian", "degree_uncertainty", "eccentricity", "degree_confidence",
        "eccentricity_confidence", "kernel_language_entropy", "maximum_sequence_probability", "perplexity"}
    tokens = [np.log([0.5, 0.25]), np.log([0.9])]  # a set's answers' chosen-token log-probabilities
    inputs = {"similarity": GRADED, "equivalence": GRADED >= 0.5,
              "nli": nli_weights(GRADED, np.zeros((3, 3))), "tokens": tokens}
    for name, measure in UNCERTAINTY_MEASURES.items():
        value = measure.function(inputs[measure.statistic])
        assert measure.per_answer == isinstance(value, np.ndarray), name
        assert measure.as_confidence(None) is None
    # "higher = more confident" after orientation: the likelier answer is the more confident one
    for name in ("maximum_sequence_probability", "perplexity"):
        measure = UNCERTAINTY_MEASURES.get(name)
        low, high = measure.as_confidence(measure.function(tokens))
        assert high > low, name
    # "higher = more confident" after orientation: full agreement beats the graded matrix for every measure
    for name, measure in UNCERTAINTY_MEASURES.items():
        if measure.statistic == "tokens":
            continue
        if measure.statistic == "equivalence":
            calm, torn = np.ones((3, 3), dtype=bool), np.eye(3, dtype=bool)
        else:
            calm, torn = np.ones((3, 3)), GRADED
        high = measure.as_confidence(measure.function(calm))
        low = measure.as_confidence(measure.function(torn))
        assert np.all(np.asarray(high) >= np.asarray(low) - 1e-12), name
    assert UNCERTAINTY_MEASURES.get("eigval_laplacian").as_confidence(2.5) == -2.5
    assert UNCERTAINTY_MEASURES.get("degree_confidence").as_confidence(0.7) == 0.7


def test_the_kept_embedding_follows_the_matrix_not_the_object():
    """A matrix changed in place between calls, or another threshold, gets its own values (nothing is kept
    from one call to the next that could go stale), equal to those of a fresh copy."""
    rng = np.random.default_rng(3)
    s = rng.random((6, 6))
    np.fill_diagonal(s, 1.0)
    first = eccentricity(s)
    assert eccentricity_confidence(s) == pytest.approx(eccentricity_confidence(s.copy()))
    s[0, 1] = s[1, 0] = 0.0
    assert eccentricity(s) == eccentricity(s.copy()) != first
    assert eccentricity(s, threshold=0.5) == eccentricity(s.copy(), threshold=0.5)
    with pytest.raises(ValueError):
        eccentricity_confidence(np.full((3, 3), 2.0))


@st.composite
def answer_sets(draw) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One set as the metrics stage holds it: a rouge1-like similarity matrix, an exact-like 0/1 one, of
    0 to 9 answers (sizes repeat across sets, so stacks hold several)."""
    n = draw(st.integers(0, 9))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    similarity = np.round(rng.random((n, n)), draw(st.sampled_from([1, 2, 17])))
    np.fill_diagonal(similarity, 1.0)
    same = (rng.random((n, n)) < draw(st.sampled_from([0.1, 0.5, 0.9]))).astype(np.float64)
    np.fill_diagonal(same, 1.0)
    return {"rouge1": similarity, "exact": same}, {}


@settings(max_examples=60, deadline=None)
@given(st.lists(answer_sets(), min_size=1, max_size=12))
def test_a_chunk_of_sets_measures_each_set_to_the_bit_as_it_alone_would(sets):
    """The metrics stage measures a chunk's sets in stacks of one size: every value equals, bit for bit,
    what each measure's own per-matrix function gives the set alone, so a set's results do not depend
    on what it was stacked with (and a run's pinned results stand)."""
    judges = {"rouge1": build_judge("rouge1"), "exact": build_judge("exact")}
    given_sets = [(matrices, {name: judges[name].equivalent(m) for name, m in matrices.items()})
                  for matrices, _ in sets]
    together = chunk_measures(given_sets, judges)
    for (matrices, decisions), (per_set, per_answer) in zip(given_sets, together, strict=True):
        assert (per_set, per_answer) == set_measures(matrices, judges, decisions)
        for name, measure in UNCERTAINTY_MEASURES.items():
            if measure.statistic in ("nli", "tokens"):  # no NLI judges, no log-probabilities given
                assert name not in per_set and name not in per_answer
                continue
            for judge in matrices:
                statistic = decisions[judge] if measure.statistic == "equivalence" else matrices[judge]
                alone = measure.function(statistic)
                got = (per_answer if measure.per_answer else per_set)[name][judge]
                if alone is None:
                    assert got is None
                elif measure.per_answer:
                    assert got == [float(v) for v in alone]  # exact equality: the same bits
                else:
                    assert got == float(alone)


def test_a_stack_computes_each_decomposition_once_for_all_its_measures(monkeypatch):
    """U_EigV, U_Ecc and C_Ecc of a stack read its eigendecompositions, made once for the whole stack, and
    give each matrix what the per-matrix formulas give it alone, to the bit; a bad matrix anywhere in a
    stack is refused with the matrix's name."""
    calls = {"eigh": 0, "eigvalsh": 0}
    for name in calls:
        original = getattr(np.linalg, name)

        def counted(a, _original=original, _name=name):
            calls[_name] += 1
            return _original(a)

        monkeypatch.setattr(np.linalg, name, counted)
    rng = np.random.default_rng(5)
    similarity = rng.random((6, 9, 9))
    stack = MatrixStack(similarity, "similarity matrix")
    got = {measure: UNCERTAINTY_MEASURES.get(measure).over(stack) for measure in
           ("eigval_laplacian", "degree_uncertainty", "eccentricity", "eccentricity_confidence")}
    assert calls == {"eigh": 1, "eigvalsh": 1}
    for k, s in enumerate(similarity):  # the formulas matrix by matrix, as a per-set implementation has them
        w = (s + s.T) / 2
        scale = 1.0 / np.sqrt(w.sum(axis=1))
        laplacian = np.eye(9) - scale[:, None] * w * scale[None, :]
        eigv = float(np.clip(1.0 - np.linalg.eigvalsh(laplacian), 0.0, None).sum())
        assert got["eigval_laplacian"][k] == eigv
        assert got["degree_uncertainty"][k] == float((81 - w.sum()) / 81)
        values, vectors = np.linalg.eigh(laplacian)
        kept = vectors[:, values < 0.9]
        centred = kept - kept.mean(axis=0)
        assert got["eccentricity"][k] == float(np.linalg.norm(centred))
        np.testing.assert_array_equal(got["eccentricity_confidence"][k], -np.linalg.norm(centred, axis=1))
    bad = rng.random((3, 4, 4))
    bad[2, 0, 1] = 1.5
    with pytest.raises(ValueError, match=r"similarity matrix entries must lie in \[0, 1\]"):
        UNCERTAINTY_MEASURES.get("degree_uncertainty").over(MatrixStack(bad, "similarity matrix"))
    with pytest.raises(ValueError, match="square"):
        MatrixStack(np.ones((2, 3, 4)), "similarity matrix")


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 8), st.integers(0, 2**32 - 1))
def test_set_measures_use_the_decisions_they_are_given_and_make_the_same_ones_themselves(n, seed):
    """The metrics stage hands `set_measures` the decisions it made for the set's scores: the values are
    those `set_measures` gets by asking the judges, and the decisions given are the ones used."""
    judges = {"rouge1": build_judge("rouge1"), "exact": build_judge("exact")}
    rng = np.random.default_rng(seed)
    similarity = rng.random((n, n))
    np.fill_diagonal(similarity, 1.0)
    same = (rng.random((n, n)) < 0.5).astype(np.float64)
    np.fill_diagonal(same, 1.0)  # as every judge's matrix
    matrices = {"rouge1": similarity, "exact": same}
    decisions = {name: judges[name].equivalent(m) for name, m in matrices.items()}
    assert set_measures(matrices, judges, decisions) == set_measures(matrices, judges)
    apart = {name: np.eye(n, dtype=bool) for name in matrices}  # every answer its own set
    per_set, _ = set_measures(matrices, judges, apart)
    assert per_set["num_semantic_sets"] == {"rouge1": n, "exact": n}
