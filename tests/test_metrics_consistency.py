import math
import re
import unicodedata

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from a2c.common.text import normalize
from a2c.metrics import cons_lex, cons_sem, mean_defined, semantic_clusters, semantic_entropy


def test_normalize_folds_case_width_punctuation_and_space():
    assert normalize("  Ｐａｒｉｓ!!  ") == "paris"
    assert normalize("STRASSE") == normalize("Straße")
    assert normalize("well-known,\n\tfact.") == "well known fact"
    assert normalize("It costs $5") == "it costs $5"  # symbols carry meaning and stay
    assert normalize("…") == ""


@given(st.text())
def test_normalize_is_idempotent(text):
    once = normalize(text)
    assert normalize(once) == once
    assert once == once.strip() and "  " not in once


@given(st.text())
def test_normalize_turns_exactly_the_unicode_punctuation_into_spaces(text):
    # the definition, character by character (normalize itself uses a translate table)
    folded = unicodedata.normalize("NFKC", text).casefold()
    spaced = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in folded)
    assert normalize(text) == re.sub(r"\s+", " ", spaced).strip()


def test_cons_lex_counts_equal_ordered_pairs():
    assert cons_lex(["Paris.", "paris", "Lyon"]) == pytest.approx(2 / 6)
    assert cons_lex(["a", "a", "a"]) == 1.0
    assert cons_lex(["a", "b"]) == 0.0
    assert cons_lex(["x"]) is None
    assert cons_lex([]) is None


def test_cons_sem_is_the_mean_off_diagonal_entry_in_both_directions():
    matrix = np.array([[1.0, 0.9, 0.1], [0.5, 1.0, 0.0], [0.3, 0.2, 1.0]])
    assert cons_sem(matrix) == pytest.approx((0.9 + 0.1 + 0.5 + 0.0 + 0.3 + 0.2) / 6)
    matrix[np.diag_indices(3)] = 0.0  # the diagonal never counts
    assert cons_sem(matrix) == pytest.approx(2.0 / 6)
    assert cons_sem(np.ones((1, 1))) is None
    assert cons_sem(np.zeros((0, 0))) is None


def test_cons_sem_rejects_bad_matrices():
    with pytest.raises(ValueError, match="square"):
        cons_sem(np.ones((2, 3)))
    with pytest.raises(ValueError, match="square"):
        cons_sem([1.0, 0.5])
    with pytest.raises(ValueError, match="NaN"):
        cons_sem([[1.0, math.nan], [0.2, 1.0]])


@given(st.lists(st.sampled_from(["Paris", "paris.", "Lyon", "lyon!", "Nice"]), max_size=12))
def test_cons_sem_with_exact_agreement_equals_cons_lex(outputs):
    keys = [normalize(o) for o in outputs]
    matrix = np.array([[float(a == b) for b in keys] for a in keys]).reshape(len(keys), len(keys))
    expected = cons_lex(outputs)
    got = cons_sem(matrix)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def test_clusters_need_agreement_in_both_directions():
    one_way = np.array([[1, 1], [0, 1]], dtype=bool)
    assert semantic_clusters(one_way) == [0, 1]
    assert semantic_clusters(np.ones((3, 3), dtype=bool)) == [0, 0, 0]
    assert semantic_clusters(np.eye(3, dtype=bool)) == [0, 1, 2]


def test_clusters_do_not_chain_and_each_output_joins_one_cluster():
    # 0~1 and 1~2 but 0≁2: output 1 joins cluster 0 only, 2 starts its own (no transitive chaining)
    chain = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=bool)
    assert semantic_clusters(chain) == [0, 0, 1]
    # output 3 matches the representatives of both clusters 0 and 1: it joins the first only
    both = np.eye(4, dtype=bool)
    both[0, 3] = both[3, 0] = both[1, 3] = both[3, 1] = True
    assert semantic_clusters(both) == [0, 1, 2, 0]


@given(arrays(bool, st.tuples(st.integers(0, 9), st.integers(0, 9)).map(lambda s: (s[0], s[0]))))
def test_cluster_properties(matrix):
    np.fill_diagonal(matrix, True)
    ids = semantic_clusters(matrix)
    assert len(ids) == matrix.shape[0]
    first_members: dict[int, int] = {}
    for i, cluster in enumerate(ids):
        # ids appear in order: a new cluster gets the next id
        assert cluster <= len(first_members)
        first_members.setdefault(cluster, i)
        rep = first_members[cluster]
        assert matrix[i, rep] and matrix[rep, i]
        for earlier in range(cluster):
            other = first_members[earlier]
            assert not (matrix[i, other] and matrix[other, i])


def test_clusters_reject_non_square():
    with pytest.raises(ValueError, match="square"):
        semantic_clusters(np.ones((2, 3), dtype=bool))


def test_semantic_entropy_in_bits():
    assert semantic_entropy([0, 0, 1, 1]) == pytest.approx(1.0)
    assert semantic_entropy([0, 0, 0]) == 0.0
    assert semantic_entropy([0, 1, 2, 3]) == pytest.approx(2.0)
    assert semantic_entropy([0, 0, 0, 1]) == pytest.approx(-(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25)))
    assert semantic_entropy([0]) is None
    assert semantic_entropy([]) is None


@given(st.lists(st.integers(0, 5), min_size=2, max_size=30))
def test_semantic_entropy_bounds(ids):
    entropy = semantic_entropy(ids)
    assert 0.0 <= entropy <= math.log2(len(ids)) + 1e-12
    assert (entropy == 0.0) == (len(set(ids)) == 1)


def test_mean_defined_skips_and_counts_undefined_items():
    assert mean_defined([1.0, None, 3.0]) == (2.0, 1)
    assert mean_defined([None, None]) == (None, 2)
    assert mean_defined([]) == (None, 0)
    assert mean_defined(iter([0.5])) == (0.5, 0)
    with pytest.raises(ValueError, match="NaN"):
        mean_defined([1.0, math.nan])


@st.composite
def _agreement_sets(draw):
    """A set as the metrics stage holds it: an n×n agreement matrix (0 to 9 answers) and which answers are
    accurate (None: a question without references)."""
    n = draw(st.integers(0, 9))
    matrix = draw(arrays(np.float64, (n, n), elements=st.floats(0, 1)))
    np.fill_diagonal(matrix, 1.0)
    accurate = draw(st.none() | st.lists(st.booleans(), min_size=n, max_size=n))
    return matrix, matrix >= 0.5, accurate


@given(st.lists(_agreement_sets(), max_size=12))
def test_a_chunk_of_sets_gets_each_sets_own_scores_to_the_bit(sets):
    """Cons_sem of a chunk's sets is computed in stacks of one size: each value is, bit for bit, the
    formula on that set's matrix alone (sum minus trace over n(n−1)), and so is the accurate answers' one;
    clusters and entropy are the set's own."""
    from a2c.metrics.sets import chunk_judge_scores

    def alone(m: np.ndarray) -> float | None:
        n = len(m)
        return None if n < 2 else float((m.sum() - np.trace(m)) / (n * (n - 1)))

    for (matrix, equivalent, accurate), got in zip(sets, chunk_judge_scores(sets), strict=True):
        assert got.cons_sem == alone(matrix)
        if accurate is None:
            assert got.cons_sem_accurate is None
        else:
            keep = np.flatnonzero(accurate)
            assert got.cons_sem_accurate == alone(matrix[np.ix_(keep, keep)])
        clusters = semantic_clusters(equivalent) if len(matrix) else []
        assert (got.clusters, got.entropy) == (len(set(clusters)), semantic_entropy(clusters))
