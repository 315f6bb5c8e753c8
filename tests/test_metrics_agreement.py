import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2c.metrics import fleiss_kappa, rating_counts, spearman_rho

# Fleiss (1971)-style textbook table as printed on Wikipedia: 10 subjects, 14 raters, 5 categories
TEXTBOOK = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_textbook_example():
    assert fleiss_kappa(TEXTBOOK) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_kappa_hand_worked_and_extremes():
    # 2 items, 3 raters: P_1 = 1, P_2 = 1/3, P̄ = 2/3; shares 4/6, 2/6 → P_e = 5/9; κ = (2/3 − 5/9)/(4/9) = 1/4
    assert fleiss_kappa([[3, 0], [1, 2]]) == pytest.approx(0.25)
    assert fleiss_kappa([[2, 0], [0, 2]]) == pytest.approx(1.0)
    assert fleiss_kappa([[1, 1], [1, 1]]) == pytest.approx(-1.0)
    assert fleiss_kappa([[3, 0], [3, 0]]) is None  # chance agreement already perfect


def test_rating_counts_builds_the_table():
    counts, categories = rating_counts([["yes", "yes", "no"], ["no", "no", "no"]])
    assert categories == ["yes", "no"]
    assert counts.tolist() == [[2, 1], [0, 3]]
    assert fleiss_kappa(counts) == pytest.approx(fleiss_kappa([[2, 1], [0, 3]]))


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([[2, 1], [1, 1]], "same number of raters"),
        ([[1, 0], [0, 1]], "at least 2 raters"),
        ([[3, -1], [1, 1]], "non-negative"),
        ([[1.5, 0.5]], "non-negative integers"),
        ([], "non-empty"),
    ],
)
def test_fleiss_kappa_bad_input(table, message):
    with pytest.raises(ValueError, match=message):
        fleiss_kappa(table)


def average_ranks(values):
    ordered = sorted(values)
    return [np.mean([i + 1 for i, v in enumerate(ordered) if v == x]) for x in values]


def test_spearman_hand_worked_with_ties():
    metric = [0.1, 0.4, 0.35, 0.8, 0.7]
    human = [1, 2, 2, 5, 3]
    expected = np.corrcoef(average_ranks(metric), average_ranks(human))[0, 1]
    assert spearman_rho(metric, human) == pytest.approx(expected)
    assert spearman_rho([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman_rho([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=2, max_size=20))
def test_spearman_is_pearson_on_average_ranks(pairs):
    x, y = zip(*pairs, strict=True)
    rho = spearman_rho(x, y)
    if len(set(x)) == 1 or len(set(y)) == 1:
        assert rho is None
    else:
        assert rho == pytest.approx(np.corrcoef(average_ranks(x), average_ranks(y))[0, 1])


def test_spearman_undefined_and_bad_input():
    assert spearman_rho([1.0], [2.0]) is None
    assert spearman_rho([1, 1, 1], [1, 2, 3]) is None
    with pytest.raises(ValueError, match="equal length"):
        spearman_rho([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="finite"):
        spearman_rho([1, float("nan")], [1, 2])
