"""Selection baselines on constructed candidate sets: medoid, majority cluster (with its tie-breaks) and the
expected accuracy of a random pick."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.metrics import expected_random_accuracy, majority_cluster_index, medoid_index, semantic_clusters


def test_medoid_is_the_candidate_closest_to_the_others():
    agreement = np.array([[1.0, 0.2, 0.3],
                          [0.2, 1.0, 0.9],
                          [0.3, 0.9, 1.0]])
    # off-diagonal means: 0.25, 0.55, 0.60 → candidate 2
    assert medoid_index(agreement) == 2
    # the diagonal never counts: a huge self-score does not make candidate 0 the medoid
    agreement[0, 0] = 1e6
    assert medoid_index(agreement) == 2


def test_medoid_counts_both_directions_and_ties_go_to_the_first():
    directional = np.array([[1.0, 0.8, 0.0],
                            [0.0, 1.0, 0.0],
                            [0.0, 0.4, 1.0]])
    # both directions: 0 → 0.8, 1 → 0.8 + 0.4 = 1.2, 2 → 0.4: candidate 1, though row 0 has the largest sum
    assert medoid_index(directional) == 1
    assert medoid_index(np.ones((4, 4))) == 0
    assert medoid_index(np.eye(3)) == 0
    assert medoid_index(np.ones((1, 1))) == 0
    assert medoid_index(np.zeros((0, 0))) is None


def test_majority_cluster_returns_the_first_member_of_the_largest_cluster():
    agreement = np.ones((5, 5))
    assert majority_cluster_index([0, 1, 1, 2, 1], agreement) == 1
    assert majority_cluster_index([0, 1, 2, 0, 0], agreement) == 0
    assert majority_cluster_index([0], np.ones((1, 1))) == 0
    assert majority_cluster_index([], np.zeros((0, 0))) is None


def test_majority_cluster_ties_go_to_the_most_cohesive_then_the_first():
    agreement = np.array([[1.0, 0.6, 0.0, 0.0],
                          [0.6, 1.0, 0.0, 0.0],
                          [0.0, 0.0, 1.0, 0.9],
                          [0.0, 0.0, 0.7, 1.0]])
    # clusters {0, 1} and {2, 3} tie at two members; inside agreement 0.6 vs (0.9 + 0.7)/2 = 0.8
    assert majority_cluster_index([0, 0, 1, 1], agreement) == 2
    agreement[0, 1] = agreement[1, 0] = 0.8  # now equally cohesive: the cluster seen first
    assert majority_cluster_index([0, 0, 1, 1], agreement) == 0
    # cluster ids need not count up from 0 or be contiguous
    assert majority_cluster_index([7, 7, 3, 3], agreement) == 0
    # all singletons: nothing to compare inside clusters, the first candidate wins
    assert majority_cluster_index([0, 1, 2, 3], agreement) == 0


def test_majority_cluster_accepts_semantic_clusters_output():
    equivalent = np.array([[1, 0, 0, 1],
                           [0, 1, 1, 0],
                           [0, 1, 1, 0],
                           [1, 0, 0, 1]], dtype=bool)
    agreement = np.where(equivalent, 0.9, 0.1)
    agreement[1, 2] = agreement[2, 1] = 1.0
    ids = semantic_clusters(equivalent)
    assert ids == [0, 1, 1, 0]
    assert majority_cluster_index(ids, agreement) == 1  # {1, 2} is more cohesive (1.0 vs 0.9)


def test_selection_refuses_bad_input():
    with pytest.raises(ValueError, match="cluster ids"):
        majority_cluster_index([0, 1], np.ones((3, 3)))
    with pytest.raises(ValueError, match="square"):
        medoid_index(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        medoid_index(np.array([[1.0, math.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="finite"):
        expected_random_accuracy([1.0, math.nan])


def test_expected_random_accuracy_is_the_exact_mean():
    assert expected_random_accuracy([1, 0, 1, 1]) == 0.75
    assert expected_random_accuracy([True, False]) == 0.5
    assert expected_random_accuracy([0.1] * 10) == 0.1  # fsum: no drift from ten additions of 0.1
    assert expected_random_accuracy([]) is None


@given(st.lists(st.integers(0, 3), min_size=1, max_size=10))
def test_majority_cluster_member_belongs_to_a_largest_cluster(ids):
    chosen = majority_cluster_index(ids, np.ones((len(ids), len(ids))))
    assert ids.count(ids[chosen]) == max(ids.count(c) for c in ids)
    assert ids.index(ids[chosen]) == chosen  # the cluster's first member
