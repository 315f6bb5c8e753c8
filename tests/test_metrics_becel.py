import pytest

from a2c.metrics import (
    additive_inconsistency,
    conditional_inconsistency,
    negational_inconsistency,
    semantic_inconsistency,
    symmetric_inconsistency,
    transitive_inconsistency,
)

ORIGINAL = ["entail", "neutral", "entail", "contra"]


def test_paired_inconsistencies_on_a_hand_worked_example():
    paraphrased = ["entail", "entail", "entail", "neutral"]  # 2 of 4 keep the prediction
    assert semantic_inconsistency(ORIGINAL, paraphrased) == 0.5
    swapped = ["entail", "neutral", "contra", "contra"]  # 3 of 4 keep it
    assert symmetric_inconsistency(ORIGINAL, swapped) == 0.25
    negated = ["contra", "neutral", "neutral", "entail"]  # the prediction should flip; 1 of 4 does not
    assert negational_inconsistency(ORIGINAL, negated) == 0.25
    assert negational_inconsistency(ORIGINAL, ORIGINAL) == 1.0
    assert semantic_inconsistency(ORIGINAL, ORIGINAL) == 0.0


def test_conditional_inconsistency_keeps_items_with_both_sources_right():
    original_labels = [1, 1, 0, 1]
    original_preds = [1, 0, 0, 1]  # item 1 wrong
    sources = [(0, 2), (0, 1), (2, 3), (3, 0)]
    new_labels = [1, 1, 0, 1]
    new_preds = [0, 1, 0, 0]
    # kept: derived items 0, 2, 3 (item 1 rests on a wrong source); right among them: item 2 only
    args = (sources, new_labels, new_preds, original_labels, original_preds)
    assert conditional_inconsistency(*args) == pytest.approx(2 / 3)
    assert transitive_inconsistency(*args) == pytest.approx(2 / 3)
    assert additive_inconsistency(*args) == pytest.approx(2 / 3)
    # the unconditional rate would be 2/4 wrong: the condition matters
    assert conditional_inconsistency(*args) != 0.5


def test_conditional_inconsistency_undefined_when_no_item_qualifies():
    assert conditional_inconsistency([(0, 1)], [1], [1], [1, 1], [0, 1]) is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([(0, 1)], [1, 0], [1], [1, 1], [1, 1]), "same length"),
        (([(0, 1)], [1], [1], [1, 1], [1]), "same length"),
        (([(0, 5)], [1], [1], [1, 1], [1, 1]), "source index 5"),
        (([(-1, 0)], [1], [1], [1, 1], [1, 1]), "source index -1"),
    ],
)
def test_conditional_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        conditional_inconsistency(*args)


def test_paired_bad_input():
    with pytest.raises(ValueError, match="differ in length"):
        semantic_inconsistency(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="no paired predictions"):
        negational_inconsistency([], [])
